"""Rule stats_dunn: Dunn's pairwise tests between models (Bonferroni), per metric and dimension."""

import sys

with open(snakemake.log[0], "w") as log:
    sys.stderr = log
    from thinkprobe.stats.stages import dunn_stage

    table = dunn_stage(snakemake.input.metrics, snakemake.input.profiles, snakemake.output[0])
    print(f"stats_dunn: {len(table)} pair test(s)", file=log)
