"""Rule analysis_batch: the manifest of a batch of questions (joins their jobs into one group component)."""

import sys

with open(snakemake.log[0], "w") as log:
    sys.stderr = log
    from thinkprobe.stages.tables import batch_manifest

    counts = batch_manifest(list(snakemake.input), snakemake.output[0])
    print(f"analysis_batch {snakemake.wildcards.question_set}/{snakemake.wildcards.batch}: {counts}", file=log)
