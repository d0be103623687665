"""Rule stats_claims: the checks against the paper (the claim register's sentences with intervals, identities,
untestable and not comparable rows)."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.stats import claims_stage

    inputs = dict(snakemake.input.items())
    per_trace = {k: inputs.pop(k, None) for k in ("metrics", "cycles", "ablation_traces")}
    table = claims_stage(inputs, per_trace["metrics"], per_trace["cycles"], per_trace["ablation_traces"],
                         snakemake.output[0], snakemake.params.bootstrap, snakemake.params.alpha,
                         snakemake.params.dimensions, snakemake.params.permutation)
    print(f"stats_claims: {table.groupby('kind').verdict.value_counts().to_dict()}", file=log)
