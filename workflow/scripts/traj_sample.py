"""Rule traj_sample: N continuations per checkpoint of every collected trace of a batch (one engine start)."""

if __name__ == "__main__":  # vLLM spawns workers that re-import this file
    import os

    from thinkprobe.stages.joblog import job_log

    with job_log(snakemake.log[0]) as log:
        os.dup2(log.fileno(), 1)  # vLLM logs to stdout: into the job's log too
        from thinkprobe.generate.gpu_guard import require_gpus

        require_gpus(snakemake.resources.gpu)  # asked for GPUs: CUDA devices and vLLM's CUDA build, or fail now
        from thinkprobe.tracefiles import trace_file
        from thinkprobe.trajectories.workflow import sample_batch

        w, p = snakemake.wildcards, snakemake.params
        traces = [trace_file(f"{w.model}/{w.question_set}/{q}/{r}") for q in p.questions for r in p.runs]
        stats = sample_batch(traces, snakemake.output[0], p.model, p.traj, p.questions, p.store,
                             log=lambda msg: print(msg, file=log, flush=True),
                             prefixes_per_call=snakemake.resources.prefixes_per_call)
        print("STATS", stats, file=log)
