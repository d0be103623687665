"""Rule stats_sensitivity: re-extract every trace under a second encoder; rank stability of the models."""

import sys

with open(snakemake.log[0], "w") as log:
    sys.stderr = log
    from thinkprobe.stats.stages import sensitivity_stage

    table = sensitivity_stage(list(snakemake.input.traces), snakemake.input.metrics, snakemake.params.analysis,
                              snakemake.params.encoder, snakemake.output.table, snakemake.output.metrics)
    print(f"stats_sensitivity: {len(table)} target(s)", file=log)
