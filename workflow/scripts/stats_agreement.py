"""Rule stats_agreement: segmentation agreement of thinkprobe's TUs with the corpus's labelled steps."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import agreement_stage

    table = agreement_stage(snakemake.params.files, snakemake.params.analysis, snakemake.params.tolerance,
                            snakemake.output[0])
    print(f"stats_agreement: {len(table)} row(s)", file=log)
