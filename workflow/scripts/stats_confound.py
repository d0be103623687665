"""Rule stats_confound: Spearman of each metric with trace length; the length-excluded profile's epsilon^2."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import confound_stage

    table = confound_stage(snakemake.input[0], snakemake.output.confound, snakemake.output.excluded,
                           snakemake.params.groupings, snakemake.params.dimensions, snakemake.params.permutation,
                           snakemake.output.partial)
    print(f"stats_confound: {len(table)} metric(s)", file=log)
