"""Rule traj_label: continuations -> canonical answer labels, one trajectory record per trace."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.stages.trajectories import label_batch

    counts = label_batch(snakemake.input[0], snakemake.output[0], snakemake.params.questions)
    print(f"traj_label {snakemake.wildcards.model}/{snakemake.wildcards.question_set}/"
          f"{snakemake.wildcards.batch}: {counts}", file=log)
