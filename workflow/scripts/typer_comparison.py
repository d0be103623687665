"""Rule typer_comparison: the study under both typers side by side (thinkprobe.validity.typer_comparison): the
table, its figure (with a provenance footer) and its report page."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe import __version__
    from thinkprobe.outputs import sha256_file
    from thinkprobe.stages.tables import html_table
    from thinkprobe.stages.typers import comparison_stage
    from thinkprobe.validity.typer_comparison import figure

    a, b = snakemake.params.typers
    table = comparison_stage(snakemake.input.profiles, snakemake.input.metrics, snakemake.params.typers,
                             snakemake.output.table)
    out = snakemake.output.table
    figure(table, snakemake.output.figure,
           f"thinkprobe {__version__} | code {snakemake.params.code[:12]} | {out} sha256 {sha256_file(out)[:16]}")
    html_table(out, snakemake.output.page, f"The study under both typers: {a} (the study's) and {b}")
    print(f"typer comparison ({a} vs {b}): {len(table)} row(s)", file=log)
