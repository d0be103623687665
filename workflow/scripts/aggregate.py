"""Rule aggregate: the study's metrics and exclusions tables."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.tables import aggregate, batch_units

    n_ok, n_excluded = aggregate(batch_units(snakemake.input), snakemake.params.problems, snakemake.output.metrics,
                                 snakemake.output.exclusions)
    print(f"aggregate: {n_ok} analysed unit(s), {n_excluded} exclusion(s)", file=log)
