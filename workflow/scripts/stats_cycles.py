"""Rule stats_cycles: simple directed cycles of every Thought Graph (bounded), per subgraph and model."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.batches import listed_files
    from thinkprobe.stages.stats import cycles_stage

    table = cycles_stage(listed_files(snakemake.input), snakemake.params.cap, snakemake.output.cycles,
                         snakemake.output.summary)
    print(f"stats_cycles: {len(table)} row(s), {int(table['capped'].sum())} capped", file=log)
