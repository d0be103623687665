"""Rule aggregate: the study's metrics and exclusions tables."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.batches import listed_files, outdate_stale
    from thinkprobe.stages.tables import aggregate

    n_ok, n_excluded = aggregate(listed_files(snakemake.input), snakemake.params.problems, snakemake.output.metrics,
                                 snakemake.output.exclusions)
    print(f"aggregate: {n_ok} analysed unit(s), {n_excluded} exclusion(s)", file=log)
    for path in outdate_stale(snakemake.input):  # a unit file refused above: its batch reruns next time
        print(f"marked out of date: {path}", file=log)
