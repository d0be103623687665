# The 19 metrics per unit (one job per analysis batch), then the study tables: metrics, exclusions and 5D cognitive profiles.


rule metrics:
    input:
        batch_input("graphs"),  # the batch's graphs manifest; each unit's embeddings lie beside its segments
    output:
        # the job writes each unit's metrics file; the manifest (status and sha256 of each) is what the tables read
        "results/batches/metrics/{model}/{question_set}/{batch}.json",
    params:
        units=batch_units,
        analysis=sections("metrics"),
        hedge_lexicon=file_sha(config["analysis"]["metrics"]["hedge_lexicon"]),
        code=rule_code("metrics"),
    wildcard_constraints:
        model="[A-Za-z0-9._-]+",
    log:
        "results/logs/metrics/{model}/{question_set}/{batch}.log",
    group:
        "analysis"
    resources:
        mem_mb=1000,
        runtime=batch_runtime,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/metrics.py"


rule aggregate:
    input:
        # the metrics manifests, which list every unit's metrics file (and its sha256): one input per batch
        manifests("metrics"),
        data_ready,  # a dataset or git input not fetched yet: stop, naming it (rules/common.smk)
    output:
        metrics="results/tables/metrics.parquet",
        exclusions="results/tables/exclusions.parquet",
    params:
        # input problems and the records a collected question set left out (stage "questions")
        problems=[p.as_row() for p in PLAN.discovery.problems] + PLAN.collect.skipped_rows(),
        code=rule_code("aggregate"),
    log:
        "results/logs/aggregate.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/aggregate.py"


rule profiles:
    input:
        "results/tables/metrics.parquet",
    output:
        "results/tables/profiles.parquet",
    params:
        analysis=sections("profile"),
        code=rule_code("profiles"),
    log:
        "results/logs/profiles.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/profiles.py"
