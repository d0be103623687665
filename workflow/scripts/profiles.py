"""Rule profiles: 5D cognitive profiles per trace and per model."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.tables import profiles_table

    from thinkprobe.params import Params

    dimensions = Params.from_dict(dict(snakemake.params.analysis)).profile.dimensions
    table = profiles_table(snakemake.input[0], snakemake.output[0], dimensions=dimensions)
    print(f"profiles: {len(table)} row(s)", file=log)
