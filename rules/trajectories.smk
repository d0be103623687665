# Answer-distribution trajectories (issue 7): collected traces -> checkpoints -> N continuations per
# checkpoint (GPU, protected, resumable) -> labels -> dynamics, mechanisms, tables, figures, and the
# structure x dynamics join. Sampling jobs are per model x question set x batch of questions: one engine
# start per job. The continuation store (results/continuations/_store) keeps every finished engine call,
# so a killed job rerun samples only what is missing.

from thinkprobe.outputs import source_hash as _traj_hash
from thinkprobe.trajectories import workflow as _traj_workflow

TRAJ = config["trajectories"]
try:
    TRAJ_PLAN = _traj_workflow.TrajectoryPlan(config)
except _traj_workflow.PlanError as exc:
    raise WorkflowError(str(exc))
from thinkprobe.planchecks import uncollected_trajectories as _uncollected

_not_collected = (_uncollected(TRAJ_PLAN.models, TRAJ_PLAN.questions, COLLECT.jobs)
                  if TRAJ_PLAN.batches and TRAJ["enabled"] else None)
if _not_collected:
    raise WorkflowError(_not_collected)
TRAJ_TARGETS = TRAJ_PLAN.targets()
# Protected batches are refused for overwrite by the project itself (thinkprobe.protect): root can write them.
from thinkprobe import protect as _protect

_overwrites = TRAJ_PLAN.overwrites()
if _overwrites and not config["overwrite_protected"]:
    raise WorkflowError(_protect.refusal(_overwrites))
TRAJ_CODE = {
    "label": _traj_hash(_traj_workflow.LABEL_MODULES),
    "tables": _traj_hash(_traj_workflow.TABLE_MODULES),
    "join": _traj_hash(_traj_workflow.JOIN_MODULES),
}
TRAJ_GPU = (
    {"gpu": traj_sample_gpus, **({"gpu_model": config["resources"]["gpu_model"]} if config["resources"]["gpu_model"] else {})}
    if TRAJ["gpu"]
    else {}
)


rule traj_sample:
    wildcard_constraints:
        batch=_traj_workflow.BATCH_PATTERN,  # b0000 (default decoding) or b0000-<decoding>
    input:
        traces=lambda w: TRAJ_PLAN.trace_files(w.model, w.question_set, w.batch),
        model=lambda w: model_manifest(w.model),  # a hub model: fetched first (rules/models.smk)
    output:
        protected("results/continuations/{model}/{question_set}/{batch}.json"),
    params:
        model=lambda w: TRAJ_PLAN.models[w.model],
        traj=lambda w: TRAJ_PLAN.sampling(w.batch),
        questions=lambda w: TRAJ_PLAN.batch_questions(w.model, w.question_set, w.batch),
        store="results/continuations/_store",
    log:
        "results/logs/traj_sample/{model}/{question_set}/{batch}.log",
    threads: 10**6 if TRAJ["gpu"] else config["resources"]["analysis_threads"]
    resources:
        mem_mb=8000,
        runtime=240,
        **TRAJ_GPU,
    conda:
        "../envs/gpu.yaml" if TRAJ["gpu"] else "../envs/cpu.yaml"
    script:
        "../workflow/scripts/traj_sample.py"


rule traj_label:
    wildcard_constraints:
        batch=_traj_workflow.BATCH_PATTERN,  # b0000 (default decoding) or b0000-<decoding>
    input:
        "results/continuations/{model}/{question_set}/{batch}.json",
    output:
        "results/trajectories/{model}/{question_set}/{batch}.json",
    params:
        questions=lambda w: TRAJ_PLAN.batch_questions(w.model, w.question_set, w.batch),
        code=TRAJ_CODE["label"],
    log:
        "results/logs/traj_label/{model}/{question_set}/{batch}.log",
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/cpu.yaml"
    script:
        "../workflow/scripts/traj_label.py"


rule traj_tables:
    input:
        TRAJ_PLAN.files("trajectories"),
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
        code=TRAJ_CODE["tables"],
    log:
        "results/logs/traj_tables.log",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/cpu.yaml"
    script:
        "../workflow/scripts/traj_tables.py"


rule traj_join:
    input:
        cont=TRAJ_PLAN.files("continuations"),
        labels=TRAJ_PLAN.files("trajectories"),
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
        code=TRAJ_CODE["join"],
    log:
        "results/logs/traj_join.log",
    resources:
        mem_mb=2000,
        runtime=20,
    conda:
        "../envs/cpu.yaml"
    script:
        "../workflow/scripts/traj_join.py"


rule trajectories:
    input:
        TRAJ_TARGETS,
