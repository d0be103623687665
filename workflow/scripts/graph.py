"""Rule graph: layers 3-4, node types and invariants for every unit of a question shard."""

from thinkprobe.stages.joblog import job_log
from thinkprobe.timing import JobClock

clock = JobClock()
with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.graph import graph_shard
    from thinkprobe.stages.unitfiles import embeddings_files, log_timing

    clock.mark("imports")
    counts = graph_shard(list(snakemake.input.segments), embeddings_files(snakemake.input.segments), list(snakemake.output),
                         snakemake.params.analysis)
    clock.mark("work")
    print(f"graph {snakemake.wildcards.question_set}/{snakemake.wildcards.question_id}: {counts}", file=log)
    log_timing(log, "graph", clock, len(snakemake.output))
