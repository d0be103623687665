"""Rule stats_cycles: simple directed cycles of every Thought Graph (bounded), per subgraph and model."""

import sys

with open(snakemake.log[0], "w") as log:
    sys.stderr = log
    from thinkprobe.stats.stages import cycles_stage

    table = cycles_stage(list(snakemake.input), snakemake.params.cap, snakemake.output.cycles,
                         snakemake.output.summary)
    print(f"stats_cycles: {len(table)} row(s), {int(table['capped'].sum())} capped", file=log)
