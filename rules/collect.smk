# How traces enter the workflow. Today: traces already on disk, imported into one file per unit.
# (Traces collected on GPU nodes will write the same unit files, so everything downstream is shared.)


rule import_traces:
    output:
        unit_files("traces", "json"),
    params:
        units=unit_paths,
        records=lambda w: PLAN.shard_records(w.question_set, w.question_id),
        require_think=ANALYSIS["input"]["require_think"],
        max_trace_bytes=ANALYSIS["input"]["max_trace_bytes"],
        code=CODE["import"],
    log:
        "results/logs/import_traces/{question_set}/{question_id}.log",
    group:
        "analysis"
    resources:
        mem_mb=500,
        runtime=2,
    conda:
        "../envs/cpu.yaml"
    script:
        "../workflow/scripts/import_traces.py"
