"""Rule profiles: 5D cognitive profiles per trace and per model."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.tables import profiles_stage

    table = profiles_stage(snakemake.input[0], snakemake.output[0], snakemake.params.analysis)
    print(f"profiles: {len(table)} row(s)", file=log)
