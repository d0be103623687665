"""Rule stats_kruskal: Kruskal-Wallis H, p, epsilon^2 per metric and dimension, by model and by domain."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stats.stages import kruskal_stage

    table = kruskal_stage(snakemake.input.metrics, snakemake.input.profiles, snakemake.output.kruskal,
                          snakemake.output.ratio, snakemake.params.groupings)
    print(f"stats_kruskal: {len(table)} test(s)", file=log)
