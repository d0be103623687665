"""Rule stats_kruskal: Kruskal-Wallis H, p, epsilon^2 per metric and dimension, by model and by domain."""

import sys

with open(snakemake.log[0], "w") as log:
    sys.stderr = log
    from thinkprobe.stats.stages import kruskal_stage

    table = kruskal_stage(snakemake.input.metrics, snakemake.input.profiles, snakemake.output.kruskal,
                          snakemake.output.ratio, snakemake.params.groupings)
    print(f"stats_kruskal: {len(table)} test(s)", file=log)
