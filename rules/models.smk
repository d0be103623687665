# Models and datasets by Hugging Face hub id (thinkprobe.generate.hub, thinkprobe.generate.datasets), trace
# collections by git (thinkprobe.corpus_git), the lock file (thinkprobe.generate.lock) and the study planner
# (thinkprobe.study.planner). docs/data.md describes them for a user.
#
# fetch_model: one job per hub model used by collection or trajectories; fills resources.model_cache with the
# pinned revision (the lock's commit when the study has a lock) and writes results/models/{model}.json
# (resolved commit, files, hashes, context length) once the snapshot is complete. fetch_dataset: the same for
# a question set named by hub id (results/datasets/{question_set}.json: commit, every file with its sha256).
# Both are local rules by default (the login node has the network; resources.fetch_local: false makes them
# SLURM jobs). Every job that loads a model depends on its manifest and loads it offline (HF_HUB_OFFLINE=1);
# questions are read from the cache when Snakemake parses the config, so a dataset is fetched before a study
# can plan its jobs: until then every study target stops naming it (data_ready in rules/common.smk).
# fetch_corpus: clones every git input once into resources.corpus_cache, at its commit.
#   snakemake fetch_datasets fetch_models fetch_corpus --cores 1   # on a login node, before the study;
#                                                        # writes <config>.lock.yaml (models, datasets)
#   snakemake plan                                       # results/plan/plan.txt: jobs, GPUs, tokens, GPU hours
#
# PLAN.hub_models, PLAN.locked_models, PLAN.hub_datasets (the study plan, thinkprobe.study.workflowplan) and model_manifest
# (rules/common.smk).

import re

from thinkprobe.generate.lock import stale_pin as _stale_pin
from thinkprobe.generate.questions import dataset_keys as _dataset_keys

# No `code` param: a manifest describes the shared cache, not an output of our code, and re-fetching after a
# code edit would rerun the fetch of every model. With no hub model the rule matches no file.
rule fetch_model:
    output:
        "results/models/{model}.json",
    params:
        hub_id=lambda w: config["models"][w.model]["hub_id"],
        revision=lambda w: config["models"][w.model].get("revision") or "main",
        lock=str(PLAN.lock_file),  # the job fetches the commit the lock pins, if any (thinkprobe.generate.lock)
        relock=PLAN.relock,  # --config relock=true: fetch again, resolving the revision anew
        pin=lambda w: _stale_pin(PLAN.locked_models.get(w.model), f"results/models/{w.model}.json"),  # lock changed: refetch
        model_cache=config["resources"]["model_cache"],
        token_env=config["resources"]["hub_token_env"],  # the variable's NAME; the token itself never reaches a file
    wildcard_constraints:
        model="|".join(re.escape(m) for m in PLAN.hub_models) or "(?!)",
    log:
        "results/logs/fetch_model/{model}.log",
    resources:
        mem_mb=2000,
        runtime=240,
    conda:
        PLAN.envs["cpu"]  # huggingface_hub: a download needs no GPU environment (built on the login node otherwise)
    script:
        "../workflow/scripts/fetch_model.py"


# Writes the lock file's `models:` section from the manifests (a rule without output: it runs whenever it
# is asked for, so a deleted lock is written again without fetching anything).
rule fetch_models:
    input:
        [f"results/models/{m}.json" for m in PLAN.hub_models],
    params:
        section="models",
        lock=str(PLAN.lock_file),
    log:
        "results/logs/fetch_models.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/write_lock.py"


rule fetch_dataset:
    output:
        "results/datasets/{question_set}.json",
    params:
        # what names the data (not limit/offset/ids, which select from it: changing them fetches nothing)
        spec=lambda w: {k: v for k, v in config["question_sets"][w.question_set].items()
                        if k in _dataset_keys()},
        lock=str(PLAN.lock_file),
        relock=PLAN.relock,
        pin=lambda w: _stale_pin(config["question_sets"][w.question_set].get("locked_commit"),
                                 f"results/datasets/{w.question_set}.json"),
        model_cache=config["resources"]["model_cache"],
        token_env=config["resources"]["hub_token_env"],
    wildcard_constraints:
        question_set="|".join(re.escape(q) for q in PLAN.hub_datasets) or "(?!)",
    log:
        "results/logs/fetch_dataset/{question_set}.log",
    resources:
        mem_mb=2000,
        runtime=60,
    conda:
        PLAN.envs["cpu"]  # huggingface_hub, as for fetch_model
    script:
        "../workflow/scripts/fetch_dataset.py"


rule fetch_datasets:
    input:
        [f"results/datasets/{q}.json" for q in PLAN.hub_datasets],
    params:
        section="datasets",
        lock=str(PLAN.lock_file),
    log:
        "results/logs/fetch_datasets.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/write_lock.py"


# Clones every git input (a rule without output: it checks the clones each time it is asked for, and clones
# what is missing; a clone already at its commit costs one `git rev-parse`).
rule fetch_corpus:
    params:
        inputs=[dict(e) for e in config["inputs"] if e.get("git")],
        cache=str(PLAN.corpus_cache),
    log:
        "results/logs/fetch_corpus.log",
    conda:
        PLAN.envs["cpu"]  # and git, from the system
    script:
        "../workflow/scripts/fetch_corpus.py"


rule plan:
    input:
        data_ready,  # the questions of a hub dataset are needed to count the jobs
    output:
        table="results/plan/plan.txt",
        rows="results/plan/plan.json",
    params:
        study={k: config[k] for k in ("models", "question_sets", "collection", "trajectories", "resources", "planning")},
        code=rule_code("plan"),
    log:
        "results/logs/plan.log",
    conda:
        PLAN.envs["cpu"]
    script:
        "../workflow/scripts/plan.py"
