"""Rule stats_agreement: segmentation agreement of thinkprobe's TUs with the corpus's labelled steps."""

import sys

with open(snakemake.log[0], "w") as log:
    sys.stderr = log
    from thinkprobe.stats.stages import agreement_stage

    table = agreement_stage(snakemake.params.files, snakemake.params.analysis, snakemake.params.tolerance,
                            snakemake.output[0])
    print(f"stats_agreement: {len(table)} row(s)", file=log)
