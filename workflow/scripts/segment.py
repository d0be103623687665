"""Rule segment: layers 1-2 and TU embeddings for every unit of a question shard."""

import os
import sys

from thinkprobe.timing import JobClock

clock = JobClock()
with open(snakemake.log[0], "w") as log:
    sys.stderr = log
    from thinkprobe.stages.segment import segment_shard
    from thinkprobe.stages.unitfiles import log_timing

    clock.mark("imports")
    device = {"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", "")}
    counts = segment_shard(list(snakemake.input), list(snakemake.output.segments),
                           list(snakemake.output.embeddings), snakemake.params.analysis, clock,
                           extra_provenance={"device": device} if device["cuda_visible_devices"] else None)
    print(f"segment {snakemake.wildcards.question_set}/{snakemake.wildcards.question_id}: {counts}; "
          f"CUDA_VISIBLE_DEVICES={device['cuda_visible_devices'] or '(none)'}", file=log)
    log_timing(log, "segment", clock, len(snakemake.output.segments))
