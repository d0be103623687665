"""Rules stats_fig_*: one statistics figure (PNG and PDF) with a provenance footer."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import draw

    draw(snakemake.params.figure, dict(snakemake.input), list(snakemake.output), dict(snakemake.params.options),
         snakemake.params.code)
    print(f"{snakemake.rule}: {list(snakemake.output)}", file=log)
