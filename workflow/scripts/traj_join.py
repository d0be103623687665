"""Rule traj_join: Thought Graphs of the realized reasoning x answer motion between checkpoints."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.trajectories import join_batches

    counts = join_batches(list(snakemake.input.cont), list(snakemake.input.labels), dict(snakemake.output.items()),
                          snakemake.params.analysis, snakemake.params.min_words)
    print(f"traj_join: {counts}", file=log)
