"""Rule segment: layers 1-2 and TU embeddings for every unit of an analysis batch, then the batch's manifest."""

import os

from thinkprobe.stages.joblog import job_log, log_timing
from thinkprobe.timing import JobClock

clock = JobClock()
with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.batches import unit_files, write_manifest
    from thinkprobe.stages.segment import segment_shard
    from thinkprobe.stages.unitfiles import embeddings_files
    from thinkprobe.tracefiles import unit_trace_files

    clock.mark("imports")
    resources = snakemake.config["resources"]  # validated: every key has its schema default
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    segments = unit_files("segments", snakemake.params.units)
    # the input is the batch's trace files (imported) or the manifests of the collection jobs that wrote them
    traces = unit_trace_files(segments, snakemake.params.absent)
    counts = segment_shard(traces, segments, embeddings_files(segments), snakemake.params.analysis, clock,
                           extra_provenance={"device": {"cuda_visible_devices": visible}} if visible else None,
                           device=resources["encoder_device"], gpu=resources["encoder_gpu"])
    write_manifest(segments, snakemake.output[0])
    w = snakemake.wildcards
    print(f"segment {w.model}/{w.question_set}/{w.batch}: {counts}; CUDA_VISIBLE_DEVICES={visible or '(none)'}",
          file=log)
    log_timing(log, "segment", clock, len(segments))
