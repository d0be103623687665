"""Rule aggregate: the study's metrics and exclusions tables."""

import sys

with open(snakemake.log[0], "w") as log:
    sys.stderr = log
    from thinkprobe.stages.tables import aggregate

    n_ok, n_excluded = aggregate(list(snakemake.input), snakemake.params.problems, snakemake.output.metrics,
                                 snakemake.output.exclusions)
    print(f"aggregate: {n_ok} analysed unit(s), {n_excluded} exclusion(s)", file=log)
