"""Rule stats_kruskal: Kruskal-Wallis H, p, epsilon^2 (and its permutation null) per metric and dimension."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import kruskal_stage

    table = kruskal_stage(snakemake.input.metrics, snakemake.input.profiles, snakemake.output.kruskal,
                          snakemake.output.ratio, snakemake.params.groupings, snakemake.params.permutation)
    print(f"stats_kruskal: {len(table)} test(s)", file=log)
