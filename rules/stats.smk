# The study's statistics (tables under results/stats/) and their figures (results/figures/, PNG + PDF),
# each in the report with a caption. Constants come from the config's `stats:` section and reach the
# scripts as params; `code` params are the source hashes of the thinkprobe modules each rule's script
# reaches (rule_code, rules/common.smk), so editing thinkprobe/stats/cycles.py reruns the cycle census and
# its figure, nothing else.

from thinkprobe import rulebook as _rulebook
from thinkprobe.stages.stats import rule_params as _stats_rule_params
from thinkprobe.stats.results_text import SNAPSHOT_TABLES as _SUMMARY_TABLES

STATS = config["stats"]
# the rules' parameters, assembled in one place (thinkprobe.stages.stats.rule_params): the 5D-CP dimension
# map (None: the default), each epsilon^2's permutation null (B shufflings, their seed, what moves), the
# bootstrap over prompts behind the intervals of the checks against the paper
_STATS_PARAMS = _stats_rule_params(config)
DIMENSION_SPEC = _STATS_PARAMS["dimensions"]
STATS_PERMUTATION = _STATS_PARAMS["permutation"]
STATS_BOOTSTRAP = _STATS_PARAMS["bootstrap"]
# segmentation agreement needs the corpus's labelled steps: inputs read through the steering adapter
# (PLAN.inputs: config["inputs"] with git entries resolved to their clones; thinkprobe.study.study_jobs, which the
# planner counts the study's jobs with)
from thinkprobe.study.study_jobs import agreement_files as _agreement_files

AGREEMENT_FILES = _agreement_files(PLAN.inputs)

STATS_TABLES = {
    "kruskal": "results/stats/kruskal.parquet",
    "model_vs_domain": "results/stats/model_vs_domain.parquet",
    "dunn": "results/stats/dunn.parquet",
    "spearman": "results/stats/spearman.parquet",
    "cv": "results/stats/cv.parquet",
    "cosine": "results/stats/cosine.parquet",
    "cycles": "results/stats/cycles.parquet",
    "cycles_summary": "results/stats/cycles_summary.parquet",
    "length_confound": "results/stats/length_confound.parquet",
    "length_excluded": "results/stats/length_excluded.parquet",
    "length_partial": "results/stats/length_partial.parquet",
    "ablation": "results/stats/ablation.parquet",
    "ablation_traces": "results/stats/ablation_traces.parquet",
    "aggregation_robustness": "results/stats/aggregation_robustness.parquet",
}
if STATS["sensitivity_encoder"]:
    STATS_TABLES["encoder_sensitivity"] = "results/stats/encoder_sensitivity.parquet"
if AGREEMENT_FILES:
    STATS_TABLES["agreement"] = "results/stats/agreement.parquet"
STATS_TABLES["claims"] = "results/stats/claims.parquet"
# the tables the checks against the paper read (besides the per-trace tables), when the study has them
from thinkprobe.stats.register import register_digest as _register_digest

CLAIMS_INPUTS = ["kruskal", "model_vs_domain", "length_excluded", "aggregation_robustness", "cycles_summary",
                 "ablation", "encoder_sensitivity", "agreement"]

STATS_TITLES = {
    "kruskal": "Kruskal-Wallis H, p, epsilon^2 per metric and dimension, by model and by domain (Bonferroni)",
    "model_vs_domain": "epsilon^2 by model vs by domain, and their ratio",
    "dunn": "Dunn post-hoc tests between models (Bonferroni-adjusted p)",
    "spearman": "Spearman rho between the 19 metrics (Ward order)",
    "cv": "Run-to-run coefficient of variation per model and metric",
    "cosine": "Cosine similarity between model mean 5D-CP vectors",
    "cycles": "Simple directed cycles per trace and subgraph",
    "cycles_summary": "Cycle prevalence, counts and lengths per model and subgraph",
    "length_confound": "Spearman rho of each metric with trace length (AT)",
    "length_excluded": "epsilon^2 per dimension, full vs length-excluded 5D-CP",
    "length_partial": "Every metric and App. G dimension: rho with length, epsilon^2 before/after partialling length",
    "ablation": "Mean metrics under the cumulative pipeline stages (l1, l3, l4, full)",
    "ablation_traces": "Per-trace metrics under the cumulative pipeline stages (the ablation's sample)",
    "aggregation_robustness": "Model rankings: equal-weight vs PCA-weighted dimensions (Spearman rho)",
    "encoder_sensitivity": "Model rankings under a second sentence encoder (Spearman rho)",
    "agreement": "Segmentation agreement of thinkprobe's TUs with the corpus's labelled steps",
    "claims": "Checks against the paper: replications (with intervals), identities, not comparable",
}

# one stats_fig_<name> rule per figure of thinkprobe.rulebook.STATS_FIGURES: its input tables and config options
_FIGURE_TABLES = {**STATS_TABLES, "profiles": "results/tables/profiles.parquet"}
STATS_FIGURES = {name: {key: _FIGURE_TABLES[table] for key, table in fig.inputs.items()}
                 for name, fig in _rulebook.STATS_FIGURES.items()}
STATS_FIGURE_OPTIONS = {name: list(fig.options) for name, fig in _rulebook.STATS_FIGURES.items()}

STATS_TARGETS = (
    list(STATS_TABLES.values())
    + ["results/stats/summary.md"]
    + [f"results/figures/stats_{name}.{ext}" for name in STATS_FIGURES for ext in ("png", "pdf")]
    + [f"results/report/stats/{name}.html" for name in STATS_TABLES]
)
add_targets("stats", STATS_TARGETS if STATS["enabled"] else [])  # `rule all` (Snakefile)


rule stats_kruskal:
    input:
        metrics="results/tables/metrics.parquet",
        profiles="results/tables/profiles.parquet",
    output:
        kruskal=STATS_TABLES["kruskal"],
        ratio=STATS_TABLES["model_vs_domain"],
    params:
        groupings=_STATS_PARAMS["groupings"],
        permutation=STATS_PERMUTATION,
        code=rule_code("stats_kruskal"),
    log:
        "results/logs/stats/kruskal.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/stats_kruskal.py"


rule stats_dunn:
    input:
        metrics="results/tables/metrics.parquet",
        profiles="results/tables/profiles.parquet",
    output:
        STATS_TABLES["dunn"],
    params:
        code=rule_code("stats_dunn"),
    log:
        "results/logs/stats/dunn.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/stats_dunn.py"


rule stats_spearman:
    input:
        "results/tables/metrics.parquet",
    output:
        STATS_TABLES["spearman"],
    params:
        code=rule_code("stats_spearman"),
    log:
        "results/logs/stats/spearman.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/stats_spearman.py"


rule stats_stability:
    input:
        metrics="results/tables/metrics.parquet",
        profiles="results/tables/profiles.parquet",
    output:
        cv=STATS_TABLES["cv"],
        cosine=STATS_TABLES["cosine"],
    params:
        code=rule_code("stats_stability"),
    log:
        "results/logs/stats/stability.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/stats_stability.py"


rule stats_cycles:
    input:
        manifests("graphs"),  # every batch's graphs manifest, listing its units' graph files
    output:
        cycles=STATS_TABLES["cycles"],
        summary=STATS_TABLES["cycles_summary"],
    params:
        cap=STATS["cycle_cap"],
        code=rule_code("stats_cycles"),
    log:
        "results/logs/stats/cycles.log",
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/stats_cycles.py"


rule stats_confound:
    input:
        "results/tables/metrics.parquet",
    output:
        confound=STATS_TABLES["length_confound"],
        excluded=STATS_TABLES["length_excluded"],
        partial=STATS_TABLES["length_partial"],
    params:
        groupings=_STATS_PARAMS["groupings"],
        dimensions=DIMENSION_SPEC,
        permutation=STATS_PERMUTATION,
        code=rule_code("stats_confound"),
    log:
        "results/logs/stats/confound.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/stats_confound.py"


rule stats_ablation:
    input:
        all_trace_inputs(),  # the manifests of the jobs that import or collect the traces (thinkprobe.stages.traceinputs)
    output:
        table=STATS_TABLES["ablation"],
        traces=STATS_TABLES["ablation_traces"],
    params:
        analysis=config["analysis"],
        n=STATS["ablation_traces"],
        seed=STATS["ablation_seed"],
        code=rule_code("stats_ablation"),  # + where the trace files lie (the rule's inputs: thinkprobe/rulebook.py)
    log:
        "results/logs/stats/ablation.log",
    threads: config["resources"]["analysis_threads"]
    resources:
        mem_mb=config["resources"]["analysis_mem_mb"],
        runtime=30,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/stats_ablation.py"


rule stats_robustness:
    input:
        "results/tables/metrics.parquet",
    output:
        STATS_TABLES["aggregation_robustness"],
    params:
        dimensions=DIMENSION_SPEC,
        code=rule_code("stats_robustness"),
    log:
        "results/logs/stats/robustness.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/stats_robustness.py"


rule stats_sensitivity:
    input:
        traces=all_trace_inputs(),
        metrics="results/tables/metrics.parquet",
    output:
        table="results/stats/encoder_sensitivity.parquet",
        metrics="results/stats/metrics_encoder2.parquet",
    params:
        analysis=config["analysis"],
        encoder=STATS["sensitivity_encoder"],
        code=rule_code("stats_sensitivity"),  # + where the trace files lie (the rule's inputs: thinkprobe/rulebook.py)
    log:
        "results/logs/stats/sensitivity.log",
    threads: config["resources"]["analysis_threads"]
    resources:
        mem_mb=config["resources"]["analysis_mem_mb"],
        runtime=60,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/stats_sensitivity.py"


rule stats_agreement:
    input:
        AGREEMENT_FILES,
    output:
        "results/stats/agreement.parquet",
    params:
        files=AGREEMENT_FILES,
        analysis=config["analysis"],
        tolerance=STATS["agreement_tolerance"],
        code=rule_code("stats_agreement"),
    log:
        "results/logs/stats/agreement.log",
    threads: config["resources"]["analysis_threads"]
    resources:
        mem_mb=config["resources"]["analysis_mem_mb"],
        runtime=60,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/stats_agreement.py"


for _fig, _inputs in STATS_FIGURES.items():

    rule:
        name:
            f"stats_fig_{_fig}"
        input:
            **_inputs,
        output:
            report(
                f"results/figures/stats_{_fig}.png",
                caption=f"../workflow/report/stats_{_fig}.rst",
                category="Statistics",
                subcategory="Figures",
            ),
            f"results/figures/stats_{_fig}.pdf",
        params:
            figure=_fig,
            options={k: STATS[k] for k in STATS_FIGURE_OPTIONS[_fig]},
            code=rule_code(f"stats_fig_{_fig}"),
        log:
            f"results/logs/stats/fig_{_fig}.log",
        conda:
            PLAN.envs["cpu"]
        script:
            "../workflow/scripts/stats_figure.py"


rule stats_pages:
    input:
        **STATS_TABLES,
    output:
        **{
            name: report(
                f"results/report/stats/{name}.html",
                caption="../workflow/report/stats_table.rst",
                category="Statistics",
                subcategory="Tables",
            )
            for name in STATS_TABLES
        },
    params:
        titles=STATS_TITLES,
        code=rule_code("stats_pages"),
    log:
        "results/logs/stats/pages.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/stats_pages.py"


rule stats:
    input:
        STATS_TARGETS,
    localrule: True


rule stats_claims:
    input:
        **{name: STATS_TABLES[name] for name in CLAIMS_INPUTS if name in STATS_TABLES},
        metrics="results/tables/metrics.parquet",
        cycles=STATS_TABLES["cycles"],
        ablation_traces=STATS_TABLES["ablation_traces"],
    output:
        STATS_TABLES["claims"],
    params:
        bootstrap=STATS_BOOTSTRAP,
        alpha=_STATS_PARAMS["alpha"],
        dimensions=DIMENSION_SPEC,
        permutation=STATS_PERMUTATION,
        register=_register_digest(),  # sha256 of thinkprobe/data/claims.yaml: an edited criterion reruns the claims
        code=rule_code("stats_claims"),
    log:
        "results/logs/stats/claims.log",
    conda:
        "../envs/cpu.yaml"
    script:
        "../workflow/scripts/stats_claims.py"


rule stats_summary:
    input:
        **{name: path for name, path in STATS_TABLES.items() if name in _SUMMARY_TABLES},
    output:
        "results/stats/summary.md",
    params:
        code=rule_code("stats_summary"),
    log:
        "results/logs/stats/summary.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/stats_summary.py"
