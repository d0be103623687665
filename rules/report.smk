# Figures and report pages. `snakemake --report report.html` collects every item below with its caption;
# each table page and each figure carries its own provenance (version, code hash, parameters, inputs).


rule figures:
    input:
        "results/tables/profiles.parquet",
    output:
        radar=report(
            "results/figures/profile_radar.png",
            caption="../workflow/report/radar.rst",
            category="Profiles",
        ),
        heatmap=report(
            "results/figures/metric_heatmap.png",
            caption="../workflow/report/heatmap.rst",
            category="Profiles",
        ),
    params:
        code=rule_code("figures"),
    log:
        "results/logs/figures.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/figures.py"


rule report_tables:
    input:
        metrics="results/tables/metrics.parquet",
        exclusions="results/tables/exclusions.parquet",
        profiles="results/tables/profiles.parquet",
    output:
        metrics=report(
            "results/report/metrics.html",
            caption="../workflow/report/metrics.rst",
            category="Tables",
        ),
        exclusions=report(
            "results/report/exclusions.html",
            caption="../workflow/report/exclusions.rst",
            category="Tables",
        ),
        profiles=report(
            "results/report/profiles.html",
            caption="../workflow/report/profiles.rst",
            category="Tables",
        ),
    params:
        code=rule_code("report_tables"),
        pages=lambda w: {u: f"../pages/{u}.html" for u in PLAN.page_units} if config["pages"]["enabled"] else {},  # rules/pages.smk
    log:
        "results/logs/report_tables.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/report_tables.py"
