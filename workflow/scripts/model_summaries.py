"""Rule model_summaries: one summary page per model (5D-CP, trajectory mechanisms, exclusions by reason)."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.view.model_page import write_model_pages

    n = write_model_pages(snakemake.params.models, list(snakemake.output), snakemake.input.profiles,
                          snakemake.input.exclusions, snakemake.input.traces or None, snakemake.params.pages)
    print(f"model summaries: {n} page(s)", file=log)
