"""Rule stats_dunn: Dunn's pairwise tests between models (Bonferroni), per metric and dimension."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import dunn_stage

    table = dunn_stage(snakemake.input.metrics, snakemake.input.profiles, snakemake.output[0])
    print(f"stats_dunn: {len(table)} pair test(s)", file=log)
