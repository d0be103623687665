# Models by Hugging Face hub id (thinkprobe.generate.hub) and the study planner (thinkprobe.generate.budget).
#
# fetch_model: one job per hub model used by collection or trajectories; fills resources.model_cache with the
# pinned revision and writes results/models/{model}.json (resolved commit, files, hashes, context length).
# A local rule by default (the login node has the network; resources.fetch_local: false makes it a SLURM job).
# Every job that loads the model depends on that manifest and loads the snapshot offline (HF_HUB_OFFLINE=1).
#   snakemake fetch_models     # on a login node, before submitting the study
#   snakemake plan             # results/plan/plan.txt: jobs, GPUs, tokens and GPU hours of the study

from thinkprobe.generate.study_checks import check_study as _check_study

_problems = _check_study(config, base=".")
if _problems:
    raise WorkflowError("the study cannot run as configured:\n  - " + "\n  - ".join(_problems))

_RES = config["resources"]
HUB_MODELS = sorted(
    name
    for name, m in config["models"].items()
    if m.get("hub_id")
    and (name in COLLECT.models or (name in config["trajectories"]["models"] and config["trajectories"]["question_sets"]))
)
# what a job needs to find a hub model offline: the cache and the manifest of its fetch (params of the jobs)
for _name in HUB_MODELS:
    _extra = {"manifest": f"results/models/{_name}.json",
              **({"model_cache": _RES["model_cache"]} if _RES["model_cache"] else {})}
    config["models"][_name].update(_extra)
    if _name in COLLECT.models:
        COLLECT.models[_name].update(_extra)


def model_manifest(model):
    """The fetch manifest a job that loads ``model`` waits for ([] for a local or built-in model)."""
    return [f"results/models/{model}.json"] if model in HUB_MODELS else []


def traj_sample_gpus(wildcards):
    """GPUs of a trajectory sampling job: the model's tensor_parallel_size, as for collection."""
    from thinkprobe.generate.plan import gpus, model_settings

    return gpus(model_settings(wildcards.model, config["models"].get(wildcards.model) or {}))


if HUB_MODELS:

    rule fetch_model:
        output:
            "results/models/{model}.json",
        params:
            hub_id=lambda w: config["models"][w.model]["hub_id"],
            revision=lambda w: config["models"][w.model].get("revision") or "main",
            model_cache=_RES["model_cache"],
            token_env=_RES["hub_token_env"],  # the variable's NAME; the token itself never reaches a file
        wildcard_constraints:
            model="|".join(re.escape(m) for m in HUB_MODELS),
        log:
            "results/logs/fetch_model/{model}.log",
        # on the machine that runs Snakemake (a login node, with network) unless resources.fetch_local is false
        localrule: _RES["fetch_local"]
        resources:
            mem_mb=2000,
            runtime=240,
        conda:
            "../envs/gpu.yaml"
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
    log:
        "results/logs/plan.log",
    localrule: True
    script:
        "../workflow/scripts/plan.py"
