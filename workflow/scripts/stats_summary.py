"""Rule stats_summary: results/stats/summary.md, the study's results beside the paper's (generated)."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import summary_stage

    text = summary_stage(snakemake.input.kruskal, snakemake.output[0])
    print(f"stats_summary: {len(text.splitlines())} line(s)", file=log)
