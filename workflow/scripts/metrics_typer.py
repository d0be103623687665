"""Rule metrics_typer: the 19 metrics of the batch's graphs under the comparison typer (validity.compare_typers;
thinkprobe.stages.typers), then its manifest."""

from thinkprobe.stages.joblog import job_log, log_timing
from thinkprobe.timing import JobClock

clock = JobClock()
with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.typers import metrics_batch

    clock.mark("imports")
    w = snakemake.wildcards
    counts, outdated = metrics_batch(snakemake.params.units, w.typer, snakemake.params.analysis,
                                     snakemake.output[0], snakemake.input)
    clock.mark("work")
    for path in outdated:  # a graph file refused above: its batch reruns next time
        print(f"marked out of date: {path}", file=log)
    print(f"metrics ({w.typer} typer) {w.model}/{w.question_set}/{w.batch}: {counts}", file=log)
    log_timing(log, "metrics_typer", clock, len(snakemake.params.units))
