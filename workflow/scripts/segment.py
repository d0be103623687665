"""Rule segment: layers 1-2 and TU embeddings for every unit of a question shard."""

import os

from thinkprobe.stages.joblog import job_log
from thinkprobe.timing import JobClock

clock = JobClock()
with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.segment import segment_shard
    from thinkprobe.stages.unitfiles import log_timing

    clock.mark("imports")
    resources = snakemake.config.get("resources", {})
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    counts = segment_shard(list(snakemake.input), list(snakemake.output.segments),
                           list(snakemake.output.embeddings), snakemake.params.analysis, clock,
                           extra_provenance={"device": {"cuda_visible_devices": visible}} if visible else None,
                           device=resources.get("encoder_device", "auto"), gpu=bool(resources.get("encoder_gpu")))
    print(f"segment {snakemake.wildcards.question_set}/{snakemake.wildcards.question_id}: {counts}; "
          f"CUDA_VISIBLE_DEVICES={visible or '(none)'}", file=log)
    log_timing(log, "segment", clock, len(snakemake.output.segments))
