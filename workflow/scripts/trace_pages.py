"""Rule trace_pages: one self-contained HTML page per sampled unit (thinkprobe.view)."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.trace_pages import write_pages

    from thinkprobe.outputs import write_json

    counts = write_pages(snakemake.params.units, list(snakemake.output.pages), "results", snakemake.params.analysis,
                         snakemake.params.tau, log=log)
    write_json(snakemake.output.index, {"pages": dict(zip(snakemake.params.units, snakemake.output.pages)),
                                        "counts": counts})
    print(f"trace pages: {counts}", file=log)
