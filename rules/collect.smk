# How traces enter the workflow: traces already on disk, imported into one file per unit (import_traces), or
# traces collected from an LLM (collect + collected_trace, below). Both write the same unit files
# (results/traces/{model}/{question_set}/{question_id}/{run}.json), so everything downstream is shared.

rule import_traces:
    output:
        unit_files("traces", "json"),
    wildcard_constraints:
        question_set=IMPORTED_SETS,
    params:
        units=unit_paths,
        records=lambda w: PLAN.shard_records(w.question_set, w.question_id),
        require_think=ANALYSIS["input"]["require_think"],
        max_trace_bytes=ANALYSIS["input"]["max_trace_bytes"],
        retry=lambda w: RETRY.get((w.question_set, w.question_id), ""),  # a changed input: rerun (thinkprobe.retry)
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


# ---- trace collection (thinkprobe.generate): one job per model x question set x batch of questions ----
# The job keeps every finished unit in its store (results/collect/{model}/{question_set}/units/, one
# read-only file per unit, never regenerated), so a killed job, an added run or an added question costs only
# the missing units; its output is a small manifest. Each unit's trace file is then written from the store by
# `collected_trace` (a local job, protected output). Shards of a collected question set get their trace files
# from that rule, those of an imported set from import_traces (wildcard constraints keep the two apart).
if COLLECT.units:

    rule collect:
        input:
            lambda w: model_manifest(w.model),  # a hub model: fetched first (rules/models.smk)
        output:
            "results/collect/{model}/{question_set}/{cbatch}.json",
        params:
            job=lambda w: COLLECT.batch_params(w.model, w.question_set, w.cbatch, config["collection"]),
            store=lambda w: f"results/collect/{w.model}/{w.question_set}/units",
            code=CODE_COLLECT,
        wildcard_constraints:
            model="[A-Za-z0-9._-]+",
            cbatch="c[0-9]+",
        log:
            "results/logs/collect/{model}/{question_set}/{cbatch}.log",
        threads: lambda w: COLLECT.models[w.model]["threads"]
        resources:
            mem_mb=lambda w: COLLECT.models[w.model]["mem_mb"],
            runtime=lambda w: COLLECT.models[w.model]["runtime"],
            gpu=lambda w: collect_gpus(COLLECT.models[w.model]),
            gpu_model=lambda w: (COLLECT.models[w.model]["gpu_model"] or config["resources"]["gpu_model"])
            if collect_gpus(COLLECT.models[w.model])
            else "",
        conda:
            "../envs/gpu.yaml"
        script:
            "../workflow/scripts/collect.py"

    rule collected_trace:
        input:
            collected_manifest,
        output:
            protected("results/traces/{model}/{question_set}/{question_id}/{run}.json"),
        wildcard_constraints:
            model="[A-Za-z0-9._-]+",
            run="[A-Za-z0-9._-]+",
            question_set=COLLECTED_SETS,
        log:
            "results/logs/collected_trace/{model}/{question_set}/{question_id}/{run}.log",
        localrule: True
        run:
            from thinkprobe.generate.collect import write_trace_unit

            write_trace_unit(dict(wildcards), input, output[0])
            Path(log[0]).write_text(f"trace unit written: {output[0]}\n")
