# The 19 metrics per unit, then the study tables: metrics, exclusions and 5D cognitive profiles.


rule metrics:
    input:
        graphs=unit_files("graphs", "json"),  # each unit's embeddings lie beside its segments (stages.unitfiles)
    output:
        unit_files("metrics", "json"),
    params:
        analysis=sections("metrics"),
        hedge_lexicon=file_sha(ANALYSIS["metrics"]["hedge_lexicon"]),
        code=CODE["metrics"],
    log:
        "results/logs/metrics/{question_set}/{question_id}.log",
    group:
        "analysis"
    resources:
        mem_mb=1000,
        runtime=2,
    conda:
        ENVS["cpu"]
    script:
        "../workflow/scripts/metrics.py"


rule analysis_batch:
    input:
        batch_metric_files,
    output:
        "results/batches/{question_set}/{batch}.json",
    params:
        code=CODE["batch"],
    log:
        "results/logs/analysis_batch/{question_set}/{batch}.log",
    group:
        "analysis"
    resources:
        mem_mb=500,
        runtime=1,
    conda:
        ENVS["cpu"]
    script:
        "../workflow/scripts/analysis_batch.py"


rule aggregate:
    input:
        # the batch manifests, which list every unit's metrics file (and its sha256): one input per batch of
        # questions rather than one per unit, so planning a 75,000-unit study does not resolve 75,000 more files
        [f"results/batches/{qset}/{batch}.json" for qset, batch in BATCHES],
        data_ready,  # a dataset or git input not fetched yet: stop, naming it (rules/common.smk)
    output:
        metrics="results/tables/metrics.parquet",
        exclusions="results/tables/exclusions.parquet",
    params:
        # input problems and the records a collected question set left out (stage "questions")
        problems=[p.as_row() for p in PLAN.problems] + COLLECT.skipped_rows(),
        code=CODE["aggregate"],
    log:
        "results/logs/aggregate.log",
    localrule: True
    conda:
        ENVS["cpu"]
    script:
        "../workflow/scripts/aggregate.py"


rule profiles:
    input:
        "results/tables/metrics.parquet",
    output:
        "results/tables/profiles.parquet",
    params:
        analysis=sections("profile"),
        code=CODE["profiles"],
    log:
        "results/logs/profiles.log",
    localrule: True
    conda:
        ENVS["cpu"]
    script:
        "../workflow/scripts/profiles.py"
