"""Rule fetch_model: download one hub model into the shared cache at its pinned revision; write its manifest."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.generate.hub import fetch
    from thinkprobe.generate.lock import pinned
    from thinkprobe.outputs import write_json

    p, name = snakemake.params, snakemake.wildcards.model
    commit = pinned(p.lock, "models", name, p.hub_id, p.revision, p.relock)
    manifest = fetch(name, p.hub_id, p.revision, p.model_cache or None, p.token_env, commit=commit, lock=p.lock)
    write_json(snakemake.output[0], manifest)
    print(f"fetch_model {p.hub_id}@{p.revision}: commit {manifest['commit']}, {len(manifest['files'])} files"
          + (f" (pinned by {p.lock})" if commit else ""), file=log)
