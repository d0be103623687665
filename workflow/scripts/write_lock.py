"""Rules fetch_models / fetch_datasets: write the lock file's section from the fetch manifests."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    import json
    from pathlib import Path

    from thinkprobe.generate.lock import write_section

    docs = [json.loads(Path(f).read_text(encoding="utf-8")) for f in snakemake.input]
    key = "model" if snakemake.params.section == "models" else "question_set"
    write_section(snakemake.params.lock, snakemake.params.section, {d[key]: d for d in docs})
    print(f"{snakemake.params.lock}: {snakemake.params.section} {', '.join(d[key] for d in docs) or '(none)'}",
          file=log)
