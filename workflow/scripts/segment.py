"""Rule segment: layers 1-2 and TU embeddings for every unit of a question shard."""

import os

from thinkprobe.stages.joblog import job_log
from thinkprobe.timing import JobClock

clock = JobClock()
with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.segment import segment_shard
    from thinkprobe.stages.unitfiles import embeddings_files, log_timing
    from thinkprobe.tracefiles import unit_trace_files

    clock.mark("imports")
    resources = snakemake.config["resources"]  # validated: every key has its schema default
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    # the input is the shard's trace files (imported) or the manifests of the collection jobs that wrote them
    traces = unit_trace_files(snakemake.output.segments, snakemake.params.absent)
    counts = segment_shard(traces, list(snakemake.output.segments),
                           embeddings_files(snakemake.output.segments), snakemake.params.analysis, clock,
                           extra_provenance={"device": {"cuda_visible_devices": visible}} if visible else None,
                           device=resources["encoder_device"], gpu=resources["encoder_gpu"])
    print(f"segment {snakemake.wildcards.question_set}/{snakemake.wildcards.question_id}: {counts}; "
          f"CUDA_VISIBLE_DEVICES={visible or '(none)'}", file=log)
    log_timing(log, "segment", clock, len(snakemake.output.segments))
