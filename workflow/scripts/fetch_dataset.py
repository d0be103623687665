"""Rule fetch_dataset: download one question set's hub dataset into the shared cache; write its manifest."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.generate.dataset_fetch import fetch
    from thinkprobe.generate.lock import pinned
    from thinkprobe.outputs import write_json

    p, name = snakemake.params, snakemake.wildcards.question_set
    commit = pinned(p.lock, "datasets", name, p.spec["hub_id"], p.spec.get("revision", "main"), p.relock)
    manifest = fetch(name, p.spec, p.model_cache or None, p.token_env, commit=commit, lock=p.lock)
    write_json(snakemake.output[0], manifest)
    print(f"fetch_dataset {manifest['hub_id']}@{manifest['revision']}: commit {manifest['commit']}, "
          f"{len(manifest['files'])} files, {manifest['questions']} questions"
          + (f" (pinned by {p.lock})" if commit else ""), file=log)
