"""Rule collect: generate the missing units of one model x question set x batch (one engine start)."""

if __name__ == "__main__":  # vLLM spawns workers that re-import this file
    import os

    from thinkprobe.stages.joblog import job_log

    with job_log(snakemake.log[0]) as log:
        os.dup2(log.fileno(), 1)  # vLLM logs to stdout: into the job's log too
        from thinkprobe.generate.collect import collect_batch
        from thinkprobe.generate.engine import open_engine
        from thinkprobe.outputs import write_json

        manifest = collect_batch(open_engine, snakemake.params.job, snakemake.params.store, log)
        write_json(snakemake.output[0], manifest)
        print(f"collect {snakemake.wildcards}: {manifest['stats']}", file=log)
