# Answer-distribution trajectories (issue 7): collected traces -> checkpoints -> N continuations per
# checkpoint (GPU, protected, resumable) -> labels -> dynamics, mechanisms, tables, figures, and the
# structure x dynamics join. Sampling jobs are per model x question set x batch of questions: one engine
# start per job. The continuation store (results/continuations/_store) keeps every finished engine call,
# so a killed job rerun samples only what is missing.

from thinkprobe.trajectories import batches as _traj_batches

# The trajectory batches (PLAN.trajectories) and every generation job's expected tokens and hours, so its
# resources (PLAN.jobs; rules/common.smk: generation_resource), are planned with the study
# (thinkprobe.study.workflowplan): a protected batch to overwrite, a trajectory model not collected or a job over
# resources.max_runtime stops planning there.
TRAJ = config["trajectories"]
add_targets("trajectories", PLAN.trajectories.targets() if TRAJ["enabled"] else [])  # `rule all` (Snakefile)


rule traj_sample:
    wildcard_constraints:
        batch=_traj_batches.BATCH_PATTERN,  # b0000 (default decoding) or b0000-<decoding>
    input:
        # the manifests of the collection jobs that write the batch's trace files (rules/common.smk)
        traces=lambda w: trace_inputs(PLAN.trajectories.units(w.model, w.question_set, w.batch)),
        model=lambda w: model_manifest(w.model),  # a hub model: fetched first (rules/models.smk)
    output:
        protected("results/continuations/{model}/{question_set}/{batch}.json"),
    params:  # what decides the continuations; memory, wall time, CPUs and prefixes_per_call are resources
        model=lambda w: PLAN.trajectories.engine_model(w.model),
        traj=lambda w: PLAN.trajectories.sampling(w.batch, w.question_set),  # its task's cue only (forced)
        questions=lambda w: PLAN.trajectories.batch_questions(w.model, w.question_set, w.batch),
        runs=PLAN.trajectories.runs,
        store="results/continuations/_store",
    log:
        "results/logs/traj_sample/{model}/{question_set}/{batch}.log",
    threads: generation_threads("traj_sample")
    retries: config["resources"]["gpu_retries"]  # preempted or node failed: the rerun resumes from the store
    resources:  # from the model and the planner's expected tokens (thinkprobe.generate.jobres)
        mem_mb=generation_resource("traj_sample", "mem_mb"),
        runtime=generation_resource("traj_sample", "runtime"),
        gpu=generation_resource("traj_sample", "gpu"),
        gpu_model=generation_gpu_model("traj_sample"),
        cpus_per_gpu=generation_resource("traj_sample", "cpus_per_gpu"),
        tasks_per_gpu=generation_tasks_per_gpu("traj_sample"),
        prefixes_per_call=TRAJ["prefixes_per_call"],  # engine calls per job: a knob of the job, not of its output
    conda:
        PLAN.envs["gpu"] if TRAJ["gpu"] else PLAN.envs["cpu"]
    script:
        "../workflow/scripts/traj_sample.py"


rule traj_label:
    wildcard_constraints:
        batch=_traj_batches.BATCH_PATTERN,  # b0000 (default decoding) or b0000-<decoding>
    input:
        "results/continuations/{model}/{question_set}/{batch}.json",
    output:
        "results/trajectories/{model}/{question_set}/{batch}.json",
    params:
        questions=lambda w: PLAN.trajectories.batch_questions(w.model, w.question_set, w.batch),
        code=rule_code("traj_label"),
    log:
        "results/logs/traj_label/{model}/{question_set}/{batch}.log",
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/traj_label.py"


rule traj_tables:
    input:
        PLAN.trajectories.files("trajectories"),
        data_ready,  # a dataset not fetched yet: stop, naming it (rules/common.smk)
    output:
        traces="results/trajectories/traces.parquet",
        exclusions="results/trajectories/exclusions.parquet",
        conditions="results/tables/trajectory_conditions.parquet",
        variance="results/tables/trajectory_variance.parquet",
        groups="results/tables/trajectory_groups.parquet",
        comparisons="results/tables/trajectory_comparisons.parquet",
        mechanisms_figure=report("results/figures/trajectory_mechanisms.png", caption="../workflow/report/traj_mechanisms.rst",
                                 category="Trajectories"),
        example_figure=report("results/figures/trajectory_example.png", caption="../workflow/report/traj_example.rst",
                              category="Trajectories"),
        groups_figure=report("results/figures/trajectory_groups.png", caption="../workflow/report/traj_groups.rst",
                             category="Trajectories"),
        forest_figure=report("results/figures/trajectory_forest.png", caption="../workflow/report/traj_forest.rst",
                             category="Trajectories"),
        disagreement="results/tables/trajectory_disagreement.parquet",
    params:
        tau=TRAJ["tau"],
        support=TRAJ["support"],
        comparisons=TRAJ["comparisons"],
        aggregation={k: TRAJ[k] for k in ("group_fraction", "confidence", "disagreement_grid", "max_cut_share")},
        code=rule_code("traj_tables"),
    log:
        "results/logs/traj_tables.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/traj_tables.py"


rule traj_join:
    input:
        cont=PLAN.trajectories.files("continuations"),
        labels=PLAN.trajectories.files("trajectories"),
    output:
        intervals="results/trajectories/join_intervals.parquet",
        status="results/trajectories/join_status.parquet",
        table="results/tables/trajectory_join.parquet",
        figure=report("results/figures/trajectory_join.png", caption="../workflow/report/traj_join.rst",
                      category="Trajectories"),
    params:
        analysis=sections("input", "segmentation", "texttiling", "trajectory", "cross_segment",
                          "classification", "encoder"),
        min_words=TRAJ["join_min_words"],
        code=rule_code("traj_join"),
    log:
        "results/logs/traj_join.log",
    resources:
        mem_mb=2000,
        runtime=20,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/traj_join.py"


rule trajectories:
    input:
        PLAN.trajectories.targets(),
