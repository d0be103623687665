"""Rule collect: generate the missing units of one model x question set x batch (one engine start), write the
trace file of every stored unit that has none, then the job's manifest."""

if __name__ == "__main__":  # vLLM spawns workers that re-import this file
    import os

    from thinkprobe.stages.joblog import job_log

    with job_log(snakemake.log[0]) as log:
        os.dup2(log.fileno(), 1)  # vLLM logs to stdout: into the job's log too
        from thinkprobe.generate.gpu_guard import require_gpus

        require_gpus(snakemake.resources.gpu)  # asked for GPUs: CUDA devices and vLLM's CUDA build, or fail now
        from thinkprobe.generate.collect import collect_batch, collection_job
        from thinkprobe.generate.engine import open_engine
        from thinkprobe.outputs import write_json

        w = snakemake.wildcards
        job = collection_job(snakemake.config, w.model, w.question_set, w.cbatch)
        manifest = collect_batch(open_engine, job, snakemake.params.store, log, traces=snakemake.params.traces,
                                 chunk_prompts=snakemake.resources.chunk_prompts)
        write_json(snakemake.output[0], manifest)
        print(f"collect {snakemake.wildcards}: {manifest['stats']}", file=log)
