"""Rule profiles: 5D cognitive profiles per trace and per model."""

import sys

with open(snakemake.log[0], "w") as log:
    sys.stderr = log
    from thinkprobe.stages.tables import profiles_table

    table = profiles_table(snakemake.input[0], snakemake.output[0])
    print(f"profiles: {len(table)} row(s)", file=log)
