"""Rule fetch_corpus: clone every git input once into the corpus cache, at its commit."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from pathlib import Path

    from thinkprobe.corpus_git import fetch_all

    done = fetch_all(snakemake.params.inputs, Path(snakemake.params.cache))
    for entry in done["repositories"]:
        print(f"fetch_corpus {entry['url']}@{entry['commit']}: {entry['clone']} ({entry['files']} files at "
              f"{entry['path']})", file=log)
