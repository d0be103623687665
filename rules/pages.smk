# Trace pages (`thinkprobe show` in the workflow): one self-contained HTML page per sampled unit, in the
# report's category "Traces" (one subcategory per model) and linked from the metrics table. The sample is
# fixed at planning (thinkprobe.stages.pages.page_units): the first `pages.per_model` units of each model
# and, with `pages.trajectories`, every unit with an answer-distribution trajectory.

from thinkprobe.stages import pages as _pages

PAGES = config["pages"]
_TRAJ_UNITS = (
    [UnitKey(m, q, qid, r) for (m, q, _b), qids in TRAJ_JOBS.batches.items() for qid in qids for r in TRAJ_JOBS.runs]
    if TRAJ["enabled"] and PAGES["trajectories"]
    else []
)
PAGE_UNITS = _pages.page_units([*DISCOVERY.records, *COLLECT.units], PAGES["per_model"], _TRAJ_UNITS)
# `all` asks for the pages job's index, not for every page: a target list of N pages against a job of N literal
# outputs costs Snakemake N x N matches when it plans (bench/dag_bench.py)
PAGE_INDEX = "results/pages/index.json"
PAGE_TARGETS = [PAGE_INDEX] if PAGES["enabled"] else []
MODEL_PAGES = [f"results/report/models/{m}.html" for m in MODELS]


rule trace_pages:
    input:
        # the manifests of the analysis batches that write the sampled units' graph and metrics files
        graphs=manifests("graphs", PAGE_UNITS),
        metrics=manifests("metrics", PAGE_UNITS),
        table="results/tables/metrics.parquet",
        trajectories=TRAJ_JOBS.files("trajectories") if _TRAJ_UNITS else [],
        continuations=TRAJ_JOBS.files("continuations") if _TRAJ_UNITS else [],
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
            for u in PAGE_UNITS
        ],
    params:
        units=PAGE_UNITS,
        tau=TRAJ["tau"],
        analysis=sections("input", "segmentation", "texttiling", "trajectory", "cross_segment", "classification",
                          "metrics", "encoder"),
        code=script_code("trace_pages.py"),
    log:
        "results/logs/trace_pages.log",
    localrule: True  # like the figures and report pages: no SLURM job of its own (a page costs milliseconds
    # unless its trajectory's reasoning must be analysed anew, see thinkprobe.stages.page_sources)
    conda:
        ENVS["cpu"]
    script:
        "../workflow/scripts/trace_pages.py"


rule model_summaries:
    input:
        profiles="results/tables/profiles.parquet",
        exclusions="results/tables/exclusions.parquet",
        traces="results/trajectories/traces.parquet" if TRAJ["enabled"] and TRAJ_TARGETS else [],
    output:
        [
            report(
                f"results/report/models/{m}.html",
                caption="../workflow/report/model_summary.rst",
                category="Models",
                labels={"model": m},
            )
            for m in MODELS
        ],
    params:
        models=MODELS,
        pages={u: f"../../pages/{u}.html" for u in PAGE_UNITS} if PAGES["enabled"] else {},
        code=script_code("model_summaries.py"),
    log:
        "results/logs/model_summaries.log",
    localrule: True
    conda:
        ENVS["cpu"]
    script:
        "../workflow/scripts/model_summaries.py"
