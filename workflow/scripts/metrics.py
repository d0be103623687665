"""Rule metrics: the 19 metrics for every unit of a question shard."""

from thinkprobe.stages.joblog import job_log
from thinkprobe.timing import JobClock

clock = JobClock()
with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.metrics import metrics_shard
    from thinkprobe.stages.unitfiles import embeddings_files, log_timing

    clock.mark("imports")
    counts = metrics_shard(list(snakemake.input.graphs), embeddings_files(snakemake.input.graphs), list(snakemake.output),
                           snakemake.params.analysis)
    clock.mark("work")
    print(f"metrics {snakemake.wildcards.question_set}/{snakemake.wildcards.question_id}: {counts}", file=log)
    log_timing(log, "metrics", clock, len(snakemake.output))
