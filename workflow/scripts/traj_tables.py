"""Rule traj_tables: trajectory records -> per-trace and per model x task tables, figures."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.trajectories import build_tables

    counts = build_tables(list(snakemake.input), dict(snakemake.output.items()), snakemake.params.tau,
                          snakemake.params.support, snakemake.params.comparisons,
                          **dict(snakemake.params.aggregation), log=lambda msg: print(msg, file=log, flush=True))
    print(f"traj_tables: {counts}", file=log)
