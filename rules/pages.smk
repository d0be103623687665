# Trace pages (`thinkprobe show` in the workflow): one self-contained HTML page per sampled unit, in the
# report's category "Traces" (one subcategory per model) and linked from the metrics table. The sample is
# fixed at planning (PLAN.page_units: thinkprobe.stages.trace_pages.page_units): the first `pages.per_model` units of each model
# and, with `pages.trajectories`, every unit with an answer-distribution trajectory.

from thinkprobe.stages import trace_pages as _pages

PAGES = config["pages"]
# `all` asks for the pages job's index, not for every page: a target list of N pages against a job of N literal
# outputs costs Snakemake N x N matches when it plans (bench/dag_bench.py)
PAGE_INDEX = "results/pages/index.json"
add_targets("pages", [PAGE_INDEX] if PAGES["enabled"] else [])  # `rule all` (Snakefile)
add_targets("model_pages", [f"results/report/models/{m}.html" for m in PLAN.models])


rule trace_pages:
    input:
        # the manifests of the analysis batches that write the sampled units' graph and metrics files
        graphs=manifests("graphs", PLAN.page_units),
        metrics=manifests("metrics", PLAN.page_units),
        table="results/tables/metrics.parquet",
        trajectories=PLAN.trajectories.files("trajectories") if PLAN.pages_show_trajectories else [],
        continuations=PLAN.trajectories.files("continuations") if PLAN.pages_show_trajectories else [],
    output:
        index=PAGE_INDEX,  # the units and their pages, written last
        pages=[
            report(
                _pages.page_file(u),
                caption="../workflow/report/trace_page.rst",
                category="Traces",
                subcategory=_pages.model_of(u),
                labels={"model": _pages.model_of(u), "unit": u},
            )
            for u in PLAN.page_units
        ],
    params:
        units=PLAN.page_units,
        tau=config["trajectories"]["tau"],
        analysis=sections("input", "segmentation", "texttiling", "trajectory", "cross_segment", "classification",
                          "metrics", "encoder"),
        code=rule_code("trace_pages"),
    log:
        "results/logs/trace_pages.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/trace_pages.py"


rule model_summaries:
    input:
        profiles="results/tables/profiles.parquet",
        exclusions="results/tables/exclusions.parquet",
        traces="results/trajectories/traces.parquet" if study_targets("trajectories") else [],
    output:
        [
            report(
                f"results/report/models/{m}.html",
                caption="../workflow/report/model_summary.rst",
                category="Models",
                labels={"model": m},
            )
            for m in PLAN.models
        ],
    params:
        models=PLAN.models,
        pages={u: f"../../pages/{u}.html" for u in PLAN.page_units} if PAGES["enabled"] else {},
        code=rule_code("model_summaries"),
    log:
        "results/logs/model_summaries.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/model_summaries.py"
