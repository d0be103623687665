# Layers 3-4, node classification and invariants, one job per question shard.


rule graph:
    input:
        segments=unit_files("segments", "json"),  # each unit's embeddings lie beside its segments (stages.unitfiles)
    output:
        unit_files("graphs", "json"),
    params:
        analysis=sections("trajectory", "cross_segment", "classification"),
        code=CODE["graph"],
    log:
        "results/logs/graph/{question_set}/{question_id}.log",
    group:
        "analysis"
    resources:
        mem_mb=1000,
        runtime=2,
    conda:
        ENVS["cpu"]
    script:
        "../workflow/scripts/graph.py"
