"""Rule import_traces: write one trace unit file per unit of a question shard."""

from thinkprobe.stages.joblog import job_log, log_timing
from thinkprobe.timing import JobClock

clock = JobClock()
with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.ingest import import_shard

    clock.mark("imports")
    counts = import_shard(snakemake.params.units, snakemake.params.records, list(snakemake.output),
                          snakemake.params.require_think, snakemake.params.max_trace_bytes,
                          shard=(snakemake.wildcards.question_set, snakemake.wildcards.question_id))
    clock.mark("work")
    print(f"import_traces {snakemake.wildcards.question_set}/{snakemake.wildcards.question_id}: {counts}", file=log)
    log_timing(log, "import_traces", clock, len(snakemake.output))
