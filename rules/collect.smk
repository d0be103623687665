# How traces enter the workflow: traces already on disk, imported into one file per unit (import_traces), or
# traces collected from an LLM (collect, below: the collection job writes its units' trace files itself). Both
# give the same unit files (results/traces/{model}/{question_set}/{question_id}/{run}.json), so everything
# downstream is shared.

# One import job per analysis batch of an imported question set (PLAN.batches: one model's
# resources.batch_questions questions, every run), in the batch's group component with its segment, graph and
# metrics jobs: the DAG grows with batches, not questions. The job writes each unit's trace file itself and, last,
# its manifest (results/batches/traces/...: its Snakemake output, which the rules reading the trace files wait for).
rule import_traces:
    output:
        "results/batches/traces/{model}/{question_set}/{batch}.json",
    wildcard_constraints:
        question_set=PLAN.imported_pattern,
        model="[A-Za-z0-9._-]+",
    params:
        units=batch_units,
        records=lambda w: PLAN.import_records(w.model, w.question_set, w.batch),
        require_think=config["analysis"]["input"]["require_think"],
        max_trace_bytes=config["analysis"]["input"]["max_trace_bytes"],
        # a question whose input changed after an earlier planning: its import jobs rerun (thinkprobe.rerun_tokens)
        retry=lambda w: PLAN.retry_tokens(w.model, w.question_set, w.batch),
        code=rule_code("import_traces"),
    log:
        "results/logs/import_traces/{model}/{question_set}/{batch}.log",
    group:
        "analysis"
    resources:
        mem_mb=500,
        runtime=batch_runtime,
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/import_traces.py"


# ---- trace collection (thinkprobe.generate): one job per model x question set x batch of questions ----
# The job keeps every finished unit in its store (results/collect/{model}/{question_set}/units/, one
# read-only file per unit, never regenerated), so a killed job, an added run or an added question costs only
# the missing units. It writes each stored unit's trace file itself (results/traces/..., once, read-only;
# never rewritten) and, last, its manifest: the job's Snakemake output, which lists the units and their trace
# files. Rules that read collected traces wait for the manifests (trace_inputs, rules/common.smk), so the DAG
# holds one job per batch, not one per unit (thinkprobe.tracefiles).
# Params hold only what decides the units (thinkprobe.generate.unit_store.batch_digest: units, model, prompt, sampling, seeds); the job plans
# its question texts itself from the config. Memory, wall time, CPUs and chunk_prompts are resources: changing
# them reruns nothing.
from thinkprobe.generate import unit_store as _unit_store

if PLAN.collect.units:

    rule collect:
        input:
            lambda w: model_manifest(w.model),  # a hub model: fetched first (rules/models.smk)
        output:
            "results/collect/{model}/{question_set}/{cbatch}.json",
        params:
            units=lambda w: _unit_store.batch_digest(PLAN.collect.batch_params(w.model, w.question_set, w.cbatch)),
            store=lambda w: f"results/collect/{w.model}/{w.question_set}/units",
            traces="results/traces",  # where the job writes its units' trace files (thinkprobe.tracefiles)
            code=rule_code("collect"),
        wildcard_constraints:
            model="[A-Za-z0-9._-]+",
            cbatch="c[0-9]+",
        log:
            "results/logs/collect/{model}/{question_set}/{cbatch}.log",
        threads: generation_threads("collect")
        retries: config["resources"]["gpu_retries"]  # preempted or node failed: the rerun resumes from the store
        resources:  # from the model and the planner's expected tokens (thinkprobe.generate.jobres)
            mem_mb=generation_resource("collect", "mem_mb"),
            runtime=generation_resource("collect", "runtime"),
            gpu=generation_resource("collect", "gpu"),
            gpu_model=generation_gpu_model("collect"),
            cpus_per_gpu=generation_resource("collect", "cpus_per_gpu"),
            tasks_per_gpu=generation_tasks_per_gpu("collect"),
            chunk_prompts=collection_chunk_prompts,  # expected to finish within collection.save_every_s
        conda:
            PLAN.envs["gpu"]
        script:
            "../workflow/scripts/collect.py"
