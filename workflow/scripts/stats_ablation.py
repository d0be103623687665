"""Rule stats_ablation: mean metrics of a fixed sample of traces under the four cumulative layer settings (column layers)."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import ablation_stage
    from thinkprobe.stages.traceinputs import trace_files

    table = ablation_stage(trace_files(snakemake.input), snakemake.params.analysis, snakemake.params.n,
                           snakemake.params.seed, snakemake.output.table, snakemake.output.traces)
    print(f"stats_ablation: {table[['layers', 'n_traces']].to_dict('records')}", file=log)
