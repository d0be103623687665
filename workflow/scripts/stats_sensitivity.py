"""Rule stats_sensitivity: re-extract every trace under a second encoder; rank stability of the models."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import sensitivity_stage
    from thinkprobe.stages.traceinputs import trace_files

    table = sensitivity_stage(trace_files(snakemake.input.traces), snakemake.input.metrics, snakemake.params.analysis,
                              snakemake.params.encoder, snakemake.output.table, snakemake.output.metrics)
    print(f"stats_sensitivity: {len(table)} target(s)", file=log)
