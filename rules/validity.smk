# The instrument's validity inside a study (config validity:, docs/validity.md). Off by default: with
# validity.compare_typers false and no validity.sets, no rule below is in the default target.
#
# validity.compare_typers: the graph and metrics jobs once more under the other typer (one job per analysis batch,
# like graph and metrics), into results/graphs-<typer>/ and results/metrics-<typer>/, reading the study's segments
# and the embeddings beside them (the encoder does not run again); that typer's metrics, exclusions and profile
# tables under results/tables/typer-<typer>/; then one study-wide table, figure and report page side by side.
# validity.sets: each annotated set through the code of `thinkprobe validate`, under the study's typer (and the
# other when compare_typers), into results/validity/<set>/<typer>/.

from thinkprobe.stages.validate import set_files as _set_files
from thinkprobe.stages.typers import other_typers as _other_typers, typer_stage as _typer_stage, \
    with_typer as _with_typer

VALIDITY = config["validity"]
STUDY_TYPER = config["analysis"]["classification"]["typer"]
(OTHER_TYPER,) = _other_typers(STUDY_TYPER)  # the comparison typer (thinkprobe.graph.TYPERS holds two)
VALIDITY_TYPERS = [STUDY_TYPER, OTHER_TYPER] if VALIDITY["compare_typers"] else [STUDY_TYPER]
VALIDITY_SETS = {s["name"]: s for s in VALIDITY["sets"]}
TYPER_COMPARISON = ["results/tables/typer_comparison.parquet", "results/figures/typer_comparison.png",
                    "results/report/typer_comparison.html"]
VALIDATE_TARGETS = [f"results/validity/{name}/{typer}/{f}" for name in VALIDITY_SETS for typer in VALIDITY_TYPERS
                    for f in ("summary.json", "traces.csv", "page.md")]


add_targets("validity", (TYPER_COMPARISON if VALIDITY["compare_typers"] else []) + VALIDATE_TARGETS)  # `rule all`


rule graph_typer:
    input:
        batch_input("segments"),  # the study's segments manifest; each unit's embeddings lie beside its segments
    output:
        "results/batches/graphs-{typer}/{model}/{question_set}/{batch}.json",  # the job writes each unit's graph file
    params:
        units=batch_units,
        analysis=lambda w: _with_typer(sections("trajectory", "cross_segment", "classification"), w.typer),
        code=rule_code("graph_typer"),
    wildcard_constraints:
        typer=OTHER_TYPER,
        model="[A-Za-z0-9._-]+",
    log:
        "results/logs/graph_typer/{typer}/{model}/{question_set}/{batch}.log",
    group:
        "analysis"
    resources:
        mem_mb=1000,
        runtime=batch_runtime,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/graph_typer.py"


rule metrics_typer:
    input:
        "results/batches/graphs-{typer}/{model}/{question_set}/{batch}.json",
    output:
        "results/batches/metrics-{typer}/{model}/{question_set}/{batch}.json",
    params:
        units=batch_units,
        analysis=sections("metrics"),
        hedge_lexicon=file_sha(config["analysis"]["metrics"]["hedge_lexicon"]),
        code=rule_code("metrics_typer"),
    wildcard_constraints:
        typer=OTHER_TYPER,
        model="[A-Za-z0-9._-]+",
    log:
        "results/logs/metrics_typer/{typer}/{model}/{question_set}/{batch}.log",
    group:
        "analysis"
    resources:
        mem_mb=1000,
        runtime=batch_runtime,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/metrics_typer.py"


rule aggregate_typer:
    input:
        lambda w: manifests(_typer_stage("metrics", w.typer)),  # one per analysis batch, as rule aggregate's
        data_ready,
    output:
        metrics="results/tables/typer-{typer}/metrics.parquet",
        exclusions="results/tables/typer-{typer}/exclusions.parquet",
    params:
        problems=[p.as_row() for p in PLAN.discovery.problems] + PLAN.collect.skipped_rows(),  # as rule aggregate's
        code=rule_code("aggregate_typer"),
    wildcard_constraints:
        typer=OTHER_TYPER,
    log:
        "results/logs/aggregate_typer/{typer}.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/aggregate.py"


rule profiles_typer:
    input:
        "results/tables/typer-{typer}/metrics.parquet",
    output:
        "results/tables/typer-{typer}/profiles.parquet",
    params:
        analysis=sections("profile"),
        code=rule_code("profiles_typer"),
    wildcard_constraints:
        typer=OTHER_TYPER,
    log:
        "results/logs/profiles_typer/{typer}.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/profiles.py"


rule typer_comparison:
    input:
        profiles=["results/tables/profiles.parquet", f"results/tables/typer-{OTHER_TYPER}/profiles.parquet"],
        metrics=["results/tables/metrics.parquet", f"results/tables/typer-{OTHER_TYPER}/metrics.parquet"],
    output:
        table=TYPER_COMPARISON[0],
        figure=report(TYPER_COMPARISON[1], caption="../workflow/report/typer_comparison.rst", category="Validity"),
        page=report(TYPER_COMPARISON[2], caption="../workflow/report/typer_comparison.rst", category="Validity"),
    params:
        typers=[STUDY_TYPER, OTHER_TYPER],
        code=rule_code("typer_comparison"),
    log:
        "results/logs/typer_comparison.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/typer_comparison.py"


rule validate_set:
    input:
        files=lambda w: _set_files(VALIDITY_SETS[w.vset]["path"]),  # an edit of one of the set's files reruns it
        mapping=lambda w: VALIDITY_SETS[w.vset]["mapping"],
    output:
        summary="results/validity/{vset}/{typer}/summary.json",
        traces="results/validity/{vset}/{typer}/traces.csv",
        page="results/validity/{vset}/{typer}/page.md",
    params:
        entry=lambda w: VALIDITY_SETS[w.vset],
        analysis=lambda w: _with_typer(config["analysis"], w.typer),
        options={k: VALIDITY[k] for k in ("tolerance", "draws", "seed")},
        code=rule_code("validate_set"),
    wildcard_constraints:
        vset="[A-Za-z0-9._-]+",
        typer="|".join(VALIDITY_TYPERS),
    log:
        "results/logs/validate_set/{vset}/{typer}.log",
    resources:
        mem_mb=config["resources"]["analysis_mem_mb"],
        runtime=60,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/validate_set.py"


rule validate:  # `snakemake validate`: every set of validity.sets (under both typers with compare_typers)
    input:
        VALIDATE_TARGETS,
    localrule: True
