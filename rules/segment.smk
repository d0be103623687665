# Layers 1-2 and the TU embeddings, one job per question shard (the encoder is loaded once per job).


rule segment:
    input:
        lambda w: trace_inputs(shard_keys(w)),  # trace files, or the manifests of the jobs that collect them
    output:
        # each unit's embeddings (results/embeddings/.../{run}.npz) are written just before its segments file, which
        # alone is tracked: one file per unit fewer for Snakemake to plan (docs/cluster.md)
        segments=unit_files("segments", "json"),
    params:
        analysis=sections("input", "segmentation", "texttiling", "encoder"),
        cue_lexicon=file_sha(ANALYSIS["segmentation"]["cue_lexicon"]),
        absent=shard_absent,  # units outside a collected set's grid: no trace file
        code=CODE["segment"],
    log:
        "results/logs/segment/{question_set}/{question_id}.log",
    group:
        "analysis"
    threads: SEGMENT_THREADS
    resources:
        mem_mb=config["resources"]["analysis_mem_mb"],
        runtime=lambda w: _segment_stage.runtime_minutes(trace_mb(shard_keys(w))),  # grows with the text
        **GPU_RESOURCES,
    conda:
        ENVS["gpu"] if config["resources"]["encoder_gpu"] else ENVS["cpu"]
    script:
        "../workflow/scripts/segment.py"
