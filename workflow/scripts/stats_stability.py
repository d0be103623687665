"""Rule stats_stability: run-to-run CV per model x metric and cosines between model 5D-CP vectors."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import stability_stage

    cv, cos = stability_stage(snakemake.input.metrics, snakemake.input.profiles, snakemake.output.cv,
                              snakemake.output.cosine)
    print(f"stats_stability: {len(cv)} CV cell(s), {len(cos)} cosine(s)", file=log)
