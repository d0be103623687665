# Layers 1-2 and the TU embeddings, one job per question shard (the encoder is loaded once per job).


rule segment:
    input:
        unit_files("traces", "json"),
    output:
        segments=unit_files("segments", "json"),
        embeddings=unit_files("embeddings", "npz"),
    params:
        analysis=sections("input", "segmentation", "texttiling", "encoder"),
        cue_lexicon=file_sha(ANALYSIS["segmentation"]["cue_lexicon"]),
        code=CODE["segment"],
    log:
        "results/logs/segment/{question_set}/{question_id}.log",
    group:
        "analysis"
    threads: SEGMENT_THREADS
    resources:
        mem_mb=config["resources"]["analysis_mem_mb"],
        runtime=lambda wildcards, input: _segment_stage.runtime_minutes(input.size_mb),  # grows with the text
        **GPU_RESOURCES,
    conda:
        "../envs/gpu.yaml" if config["resources"]["encoder_gpu"] else "../envs/cpu.yaml"
    script:
        "../workflow/scripts/segment.py"
