"""Rule metrics: the 19 metrics for every unit of an analysis batch, then its manifest (what the tables read)."""

from thinkprobe.stages.joblog import job_log, log_timing
from thinkprobe.timing import JobClock

clock = JobClock()
with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.batches import outdate_stale, unit_files, write_manifest
    from thinkprobe.stages.metrics import metrics_shard
    from thinkprobe.stages.unitfiles import embeddings_files

    clock.mark("imports")
    graphs, metrics = (unit_files(stage, snakemake.params.units) for stage in ("graphs", "metrics"))
    counts = metrics_shard(graphs, embeddings_files(graphs), metrics, snakemake.params.analysis)
    write_manifest(metrics, snakemake.output[0])
    clock.mark("work")
    for path in outdate_stale(snakemake.input):  # a graph file refused above: its batch reruns next time
        print(f"marked out of date: {path}", file=log)
    w = snakemake.wildcards
    print(f"metrics {w.model}/{w.question_set}/{w.batch}: {counts}", file=log)
    log_timing(log, "metrics", clock, len(metrics))
