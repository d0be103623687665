"""Rule analysis_batch: the manifest of a batch of questions (joins their jobs into one group component)."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.tables import batch_manifest

    counts = batch_manifest(list(snakemake.input), snakemake.output[0])
    print(f"analysis_batch {snakemake.wildcards.question_set}/{snakemake.wildcards.batch}: {counts}", file=log)
