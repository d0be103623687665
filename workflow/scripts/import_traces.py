"""Rule import_traces: write one trace unit file per unit of an analysis batch, then the batch's manifest."""

from thinkprobe.stages.joblog import job_log, log_timing
from thinkprobe.timing import JobClock

clock = JobClock()
with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.batches import unit_files, write_manifest
    from thinkprobe.stages.ingest_batch import import_batch

    clock.mark("imports")
    traces = unit_files("traces", snakemake.params.units)
    counts = import_batch(snakemake.params.units, snakemake.params.records, traces,
                          snakemake.params.require_think, snakemake.params.max_trace_bytes)
    write_manifest(traces, snakemake.output[0])
    clock.mark("work")
    w = snakemake.wildcards
    print(f"import_traces {w.model}/{w.question_set}/{w.batch}: {counts}", file=log)
    log_timing(log, "import_traces", clock, len(traces))
