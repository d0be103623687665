"""Rule plan: the study's jobs, GPUs, expected tokens and GPU hours (thinkprobe plan, as a target's output)."""

from thinkprobe.stages.joblog import job_log

with job_log(snakemake.log[0]) as log:
    from thinkprobe.study.planner import plan_study
    from thinkprobe.outputs import atomic_write_text, write_json

    plan = plan_study(snakemake.config, base=".")
    atomic_write_text(snakemake.output.table, plan.format() + "\n")
    write_json(snakemake.output.rows, plan.as_json())
    print(plan.format(), file=log)
