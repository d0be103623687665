"""Rule stats_robustness: model rankings per dimension under equal-weight vs PCA-weighted aggregation."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import robustness_stage

    table = robustness_stage(snakemake.input[0], snakemake.output[0], snakemake.params.dimensions)
    print(f"stats_robustness: {len(table)} dimension(s)", file=log)
