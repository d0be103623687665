# Layers 3-4, node classification and invariants, one job per analysis batch (rules/common.smk: PLAN.batches).


rule graph:
    input:
        batch_input("segments"),  # the batch's segments manifest; each unit's embeddings lie beside its segments
    output:
        "results/batches/graphs/{model}/{question_set}/{batch}.json",  # the job writes each unit's graph file
    params:
        units=batch_units,
        analysis=sections("trajectory", "cross_segment", "classification"),
        code=rule_code("graph"),
    wildcard_constraints:
        model="[A-Za-z0-9._-]+",
    log:
        "results/logs/graph/{model}/{question_set}/{batch}.log",
    group:
        "analysis"
    resources:
        mem_mb=1000,
        runtime=batch_runtime,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/graph.py"
