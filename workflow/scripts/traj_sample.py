"""Rule traj_sample: N continuations per checkpoint of every collected trace of a batch (one engine start)."""

if __name__ == "__main__":  # vLLM spawns workers that re-import this file
    import os

    from thinkprobe.stages.joblog import job_log

    with job_log(snakemake.log[0]) as log:
        os.dup2(log.fileno(), 1)  # vLLM logs to stdout: into the job's log too
        from thinkprobe.trajectories.workflow import sample_batch

        stats = sample_batch(list(snakemake.input.traces), snakemake.output[0], snakemake.params.model,
                             snakemake.params.traj, snakemake.params.questions, snakemake.params.store,
                             log=lambda msg: print(msg, file=log, flush=True))
        print("STATS", stats, file=log)
