"""Rule fetch_dataset: download one question set's hub dataset into the shared cache; write its manifest."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.generate.datasets import fetch
    from thinkprobe.outputs import write_json

    p = snakemake.params
    manifest = fetch(snakemake.wildcards.question_set, p.spec, p.model_cache or None, p.token_env,
                     commit=p.commit or None, lock=p.lock)
    write_json(snakemake.output[0], manifest)
    print(f"fetch_dataset {manifest['hub_id']}@{manifest['revision']}: commit {manifest['commit']}, "
          f"{len(manifest['files'])} files, {manifest['questions']} questions", file=log)
