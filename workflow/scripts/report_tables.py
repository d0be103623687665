"""Rule report_tables: HTML pages of the study tables, each with its provenance, for the report."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.tables import html_table

    pages = snakemake.params.pages  # unit id -> its trace page
    html_table(snakemake.input.metrics, snakemake.output.metrics, "Metrics per trace (19 metrics)", links=pages)
    html_table(snakemake.input.exclusions, snakemake.output.exclusions, "Excluded units and why", links=pages)
    html_table(snakemake.input.profiles, snakemake.output.profiles, "5D cognitive profiles (trace and model level)")
    print("report tables written", file=log)
