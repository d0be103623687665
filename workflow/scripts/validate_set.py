"""Rule validate_set: one annotated set of validity.sets through the code of `thinkprobe validate`, under one
typer (thinkprobe.stages.validate)."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.validate import validate_set

    w = snakemake.wildcards
    summary = validate_set(snakemake.params.entry, snakemake.input.mapping, snakemake.params.analysis,
                           snakemake.params.options, snakemake.output.summary, snakemake.output.page)
    print(f"validate {w.vset} ({w.typer} typer): {summary['n_compared']} of {summary['n_traces']} trace(s) "
          f"compared, node-type kappa {summary['node_types']['kappa']}", file=log)
