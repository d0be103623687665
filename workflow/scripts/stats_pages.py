"""Rule stats_pages: an HTML page (table + provenance) per statistics table, for the report."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import table_pages

    table_pages(dict(snakemake.input), snakemake.params.titles, dict(snakemake.output))
    print(f"stats_pages: {len(snakemake.output)} page(s)", file=log)
