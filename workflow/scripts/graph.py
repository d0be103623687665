"""Rule graph: layers 3-4, node types and invariants for every unit of an analysis batch, then its manifest."""

from thinkprobe.stages.joblog import job_log, log_timing
from thinkprobe.timing import JobClock

clock = JobClock()
with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.batches import outdate_stale, unit_files, write_manifest
    from thinkprobe.stages.graph import graph_shard
    from thinkprobe.stages.unitfiles import embeddings_files

    clock.mark("imports")
    segments, graphs = (unit_files(stage, snakemake.params.units) for stage in ("segments", "graphs"))
    counts = graph_shard(segments, embeddings_files(segments), graphs, snakemake.params.analysis)
    write_manifest(graphs, snakemake.output[0])
    clock.mark("work")
    for path in outdate_stale(snakemake.input):  # a segments file refused above: its batch reruns next time
        print(f"marked out of date: {path}", file=log)
    w = snakemake.wildcards
    print(f"graph {w.model}/{w.question_set}/{w.batch}: {counts}", file=log)
    log_timing(log, "graph", clock, len(graphs))
