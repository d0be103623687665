# Layers 1-2 and the TU embeddings, one job per analysis batch (the encoder is loaded once per job; rules/common.smk:
# PLAN.batches). The job writes each unit's segments file itself; its manifest is its Snakemake output.

from thinkprobe.stages.segment import runtime_minutes as _segment_runtime


rule segment:
    input:
        lambda w: trace_inputs(batch_keys(w)),  # the manifests of the jobs that import or collect its traces
    output:
        # each unit's segments file (results/segments/.../{run}.json) and embeddings (results/embeddings/.../{run}.npz)
        # are written by the job; the manifest lists them (thinkprobe.stages.batches)
        "results/batches/segments/{model}/{question_set}/{batch}.json",
    params:
        units=batch_units,  # the batch's units: a different batching reruns the job, which keeps current files
        analysis=sections("input", "segmentation", "texttiling", "encoder"),
        cue_lexicon=file_sha(config["analysis"]["segmentation"]["cue_lexicon"]),
        absent=batch_absent,  # units outside a collected set's grid: no trace file
        code=rule_code("segment"),  # + where the trace files lie (the rule's inputs: thinkprobe/rulebook.py)
    wildcard_constraints:
        model="[A-Za-z0-9._-]+",
    log:
        "results/logs/segment/{model}/{question_set}/{batch}.log",
    group:
        "analysis"
    threads: PLAN.segment_threads
    resources:
        mem_mb=config["resources"]["analysis_mem_mb"],
        runtime=lambda w: _segment_runtime(trace_mb(batch_keys(w))),  # grows with the text
        **PLAN.gpu_resources,
    conda:
        PLAN.envs["gpu"] if config["resources"]["encoder_gpu"] else PLAN.envs["cpu"]
    script:
        "../workflow/scripts/segment.py"
