"""Rule graph_typer: the batch's Thought Graphs under the comparison typer, from the study's segments and
embeddings (validity.compare_typers; thinkprobe.stages.typers), then its manifest."""

from thinkprobe.stages.joblog import job_log, log_timing
from thinkprobe.timing import JobClock

clock = JobClock()
with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.typers import graph_batch

    clock.mark("imports")
    w = snakemake.wildcards
    counts, outdated = graph_batch(snakemake.params.units, w.typer, snakemake.params.analysis, snakemake.output[0],
                                   snakemake.input)
    clock.mark("work")
    for path in outdated:  # a segments file refused above: its batch reruns next time
        print(f"marked out of date: {path}", file=log)
    print(f"graph ({w.typer} typer) {w.model}/{w.question_set}/{w.batch}: {counts}", file=log)
    log_timing(log, "graph_typer", clock, len(snakemake.params.units))
