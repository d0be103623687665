# Models by Hugging Face hub id (thinkprobe.generate.hub) and the study planner (thinkprobe.generate.budget).
#
# fetch_model: one job per hub model used by collection or trajectories; fills resources.model_cache with the
# pinned revision and writes results/models/{model}.json (resolved commit, files, hashes, context length).
# A local rule by default (the login node has the network; resources.fetch_local: false makes it a SLURM job).
# Every job that loads the model depends on that manifest and loads the snapshot offline (HF_HUB_OFFLINE=1).
#   snakemake fetch_models     # on a login node, before submitting the study
#   snakemake plan             # results/plan/plan.txt: jobs, GPUs, tokens and GPU hours of the study
#
# HUB_MODELS, model_manifest and the parse-time checks are in rules/common.smk.

# No `code` param: the manifest describes the shared cache, not an output of our code, and re-fetching after a
# code edit would rerun every job that loads the model. With no hub model the rule matches no file.
rule fetch_model:
    output:
        "results/models/{model}.json",
    params:
        hub_id=lambda w: config["models"][w.model]["hub_id"],
        revision=lambda w: config["models"][w.model].get("revision") or "main",
        model_cache=_RES["model_cache"],
        token_env=_RES["hub_token_env"],  # the variable's NAME; the token itself never reaches a file
    wildcard_constraints:
        model="|".join(re.escape(m) for m in HUB_MODELS) or "(?!)",
    log:
        "results/logs/fetch_model/{model}.log",
    # on the machine that runs Snakemake (a login node, with network) unless resources.fetch_local is false
    localrule: _RES["fetch_local"]
    resources:
        mem_mb=2000,
        runtime=240,
    conda:
        ENVS["gpu"]
    script:
        "../workflow/scripts/fetch_model.py"


rule fetch_models:
    input:
        [f"results/models/{m}.json" for m in HUB_MODELS],
    localrule: True


rule plan:
    output:
        table="results/plan/plan.txt",
        rows="results/plan/plan.json",
    params:
        study={k: config[k] for k in ("models", "question_sets", "collection", "trajectories", "resources", "planning")},
        code=CODE["plan"],
    log:
        "results/logs/plan.log",
    localrule: True
    conda:
        ENVS["cpu"]
    script:
        "../workflow/scripts/plan.py"
