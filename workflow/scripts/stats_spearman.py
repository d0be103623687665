"""Rule stats_spearman: Spearman matrix of the 19 metrics with the Ward clustering order."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import spearman_stage

    table = spearman_stage(snakemake.input[0], snakemake.output[0])
    print(f"stats_spearman: {len(table)} pair(s)", file=log)
