# Configuration checks, unit planning and helpers shared by every rule.
#
# The configuration is validated against config/schema.yaml (defaults filled in) before any job runs; a
# bad key stops Snakemake with a message naming the key, the value and what is allowed. The inputs are
# read once here to plan the units: model x question set x question x run. Analysis jobs are sharded per
# question (wildcards question_set, question_id), each writing one file per unit.

from snakemake.exceptions import WorkflowError

from thinkprobe.codedeps import script_modules
from thinkprobe.config import ConfigError, load_schema, validate_config
from thinkprobe.outputs import source_hash
from thinkprobe.stages import graph as _graph_stage
from thinkprobe.stages import ingest as _ingest_stage
from thinkprobe.stages import metrics as _metrics_stage
from thinkprobe.stages import segment as _segment_stage
from thinkprobe.stages import tables as _tables_stage
from thinkprobe.traces import run_name
from thinkprobe.units import InputError, discover, no_traces_message
from thinkprobe.generate.plan import CollectionConfigError, join_collection


try:
    _validated = validate_config(dict(config), load_schema(workflow.source_path("../config/schema.yaml")))
except ConfigError as exc:
    raise WorkflowError(str(exc))
config.clear()
config.update(_validated)

from thinkprobe.planchecks import study_size as _study_size

_too_large = _study_size(config, ".")  # before any list of units is built (join_collection, TrajectoryPlan)
if _too_large:
    raise WorkflowError("the study is too large to plan:\n  - " + "\n  - ".join(_too_large))

# ---- data fetched by the workflow (rules/models.smk): git inputs, hub datasets, the lock file ----
# A git input not yet cloned and a hub question set not yet in the cache are left out of the plan; every
# study target then stops with a message naming them (data_ready), while the fetch rules can run.
from thinkprobe.corpus_git import corpus_cache as _corpus_cache, resolve_inputs as _resolve_inputs
from thinkprobe.generate.datasets import hub_sets as _hub_sets, prepare as _prepare_datasets
from thinkprobe.generate.lock import LockError, lock_path, read_lock, relock_requested

LOCK_FILE = lock_path(workflow.overwrite_configfiles or workflow.configfiles)
try:
    LOCK = read_lock(LOCK_FILE)
except LockError as exc:
    raise WorkflowError(str(exc))
RELOCK = relock_requested(config["relock"])  # --config relock=true: move the lock's commits on purpose
CORPUS_CACHE = _corpus_cache(config["resources"]["corpus_cache"])
INPUTS, _corpus_pending, _data_problems = _resolve_inputs(config["inputs"], CORPUS_CACHE)
_more_problems, _datasets_pending = _prepare_datasets(config, LOCK, str(LOCK_FILE), RELOCK)
_data_problems += _more_problems
if _data_problems:
    raise WorkflowError("the study's data cannot be used as configured:\n  - " + "\n  - ".join(_data_problems))
PENDING = {**_corpus_pending, **{f"question_sets.{k}": v for k, v in _datasets_pending.items()}}
HUB_DATASETS = _hub_sets(config)


def data_ready(wildcards=None):
    """Nothing (every input of the study is there), or an error naming what to fetch first: an input of every
    study target, so `snakemake` stops before any job while `snakemake fetch_datasets fetch_corpus` runs."""
    if PENDING:
        raise WorkflowError("fetch the study's data first:\n  - " + "\n  - ".join(PENDING.values()))
    return []


try:
    PLAN = discover(
        INPUTS,  # config["inputs"] with each git entry as a path inside its clone
        base=".",
        max_bytes=config["analysis"]["input"]["max_trace_bytes"],
        models=[str(m) for m in config["units"]["models"]],
        runs=[run_name(r) for r in config["units"]["runs"]],
    )
except InputError as exc:
    raise WorkflowError(f"invalid input: {exc}")
try:  # collected units (config `collection`) join the grid: thinkprobe.generate.plan
    COLLECT = join_collection(PLAN, config, base=".")
except CollectionConfigError as exc:
    raise WorkflowError(f"invalid collection: {exc}")
from thinkprobe.planchecks import unknown_grid_models

_unknown_models = unknown_grid_models(config["units"]["models"], PLAN.found_models, COLLECT.models)
if _unknown_models and (PLAN.records or COLLECT.units):  # with nothing at all, the message below says more
    raise WorkflowError(_unknown_models)
if not PLAN.records and not COLLECT.units and not PENDING:
    raise WorkflowError(
        no_traces_message(PLAN, config["inputs"], config["units"]["models"], config["units"]["runs"])
    )

from thinkprobe.retry import pending as _retry_pending

RETRY = _retry_pending()  # shards whose input changed after an earlier planning: their import reruns
MODELS = PLAN.models
RUNS = PLAN.runs
SHARDS = [(qset, qid) for qset, qids in PLAN.questions.items() for qid in qids]
# Batches of questions: a batch's analysis jobs form one connected component of group "analysis" (joined
# by the batch manifest), so a SLURM job runs a whole batch with one Snakemake start. Adding a question only
# changes its batch's manifest, a job that writes one small file.
_B = config["resources"]["batch_questions"]
BATCHES = {
    (qset, f"b{k // _B:04d}"): qids[k : k + _B]
    for qset, qids in PLAN.questions.items()
    for k in range(0, len(qids), _B)
}
ANALYSIS = config["analysis"]

# Source hash of the thinkprobe modules behind each stage (editing a module reruns the stages using it).
# The module lists are derived from the code each stage really uses (thinkprobe.codedeps).
CODE = {
    "import": source_hash(_ingest_stage.MODULES),
    "segment": source_hash(_segment_stage.MODULES),
    "graph": source_hash(_graph_stage.MODULES),
    "metrics": source_hash(_metrics_stage.MODULES),
    "batch": source_hash(_tables_stage.BATCH_MODULES),
    "aggregate": source_hash(_tables_stage.AGGREGATE_MODULES),
    "profiles": source_hash(_tables_stage.PROFILE_MODULES),
    "report": source_hash(_tables_stage.REPORT_MODULES),
    "figures": source_hash(script_modules(workflow.source_path("../workflow/scripts/figures.py"))),
    "plan": source_hash(script_modules(workflow.source_path("../workflow/scripts/plan.py"))),
}


def file_sha(path):
    """Content hash of a user file read by a stage (e.g. a custom lexicon); '' for the packaged default."""
    from thinkprobe.outputs import sha256_file

    return sha256_file(path) if path else ""


def unit_files(stage, ext):
    """The per-unit files of one question shard, model-major then run (the order scripts rely on)."""
    return [
        f"results/{stage}/{model}/{{question_set}}/{{question_id}}/{run}.{ext}"
        for model in MODELS
        for run in RUNS
    ]


def unit_paths(wildcards):
    return [f"{m}/{wildcards.question_set}/{wildcards.question_id}/{r}" for m in MODELS for r in RUNS]


def all_unit_files(stage, ext):
    return [
        f"results/{stage}/{m}/{qset}/{qid}/{r}.{ext}"
        for qset, qid in SHARDS
        for m in MODELS
        for r in RUNS
    ]


def batch_metric_files(wildcards):
    qids = BATCHES[(wildcards.question_set, wildcards.batch)]
    return [f"results/metrics/{m}/{wildcards.question_set}/{q}/{r}.json" for q in qids for m in MODELS for r in RUNS]


def sections(*names):
    return {name: ANALYSIS[name] for name in names}


# On a GPU node the encoding job takes all of its allocation's CPUs (threads are capped at --cores), so a
# group job never runs two GPU jobs side by side and asks SLURM for exactly one GPU.
SEGMENT_THREADS = 10**6 if config["resources"]["encoder_gpu"] else config["resources"]["analysis_threads"]

GPU_RESOURCES = (
    {"gpu": 1, **({"gpu_model": config["resources"]["gpu_model"]} if config["resources"]["gpu_model"] else {})}
    if config["resources"]["encoder_gpu"]
    else {}
)


# ---- trace collection: the collected question sets and the manifest a collected unit waits for ----
import re
from pathlib import Path

from thinkprobe.generate import collect as _collect_stage
from thinkprobe.generate.plan import gpus as collect_gpus
from thinkprobe.units import UnitKey

CODE_COLLECT = source_hash(_collect_stage.MODULES)
# a question set is imported or collected, never both (checked by join_grid at planning)
COLLECTED_SETS = "|".join(re.escape(q) for q in COLLECT.question_sets) or "(?!)"
IMPORTED_SETS = f"(?!(?:{COLLECTED_SETS})(?:/|$))[A-Za-z0-9._-]+" if COLLECT.units else "[A-Za-z0-9._-]+"


def collected_manifest(wildcards):
    """The manifest of the collection job that generates this unit, or nothing for a grid unit that is not
    collected. Marked ancient once the unit is stored and its trace file written, so that a rewritten
    manifest (a run or a question was added to the batch) does not touch trace files already written.
    (Not ancient before: Snakemake skips a job whose only input is an existing ancient file when that file's
    job reruns, even if the job's own output is missing.)"""
    key = UnitKey(wildcards.model, wildcards.question_set, wildcards.question_id, wildcards.run)
    batch = COLLECT.units.get(key)
    if not batch:
        return []
    manifest = f"results/collect/{batch[0]}/{batch[1]}/{batch[2]}.json"
    stored = Path(f"results/collect/{key.model}/{key.question_set}/units/{key.question_id}/{key.run}.json")
    done = stored.exists() and Path(f"results/traces/{key.path}.json").exists()
    return ancient(manifest) if done else manifest


# ---- models by hub id (rules/models.smk) and the study's checks (thinkprobe.generate.study_checks) ----
from thinkprobe.generate.budget import hub_models as _hub_models
from thinkprobe.generate.study_checks import check_study as _check_study

_problems = _check_study(config, base=".", collect=COLLECT)
if _problems:
    raise WorkflowError("the study cannot run as configured:\n  - " + "\n  - ".join(_problems))

_RES = config["resources"]
HUB_MODELS = _hub_models(config, COLLECT)
from thinkprobe.generate.lock import check_models as _check_lock

_lock_problems, LOCKED_MODELS = _check_lock(config, HUB_MODELS, LOCK, str(LOCK_FILE), RELOCK)
if _lock_problems:
    raise WorkflowError("the lock file does not match the model cache:\n  - " + "\n  - ".join(_lock_problems))
# what a job needs to find a hub model offline: the cache and the manifest of its fetch (params of the jobs)
for _name in HUB_MODELS:
    _extra = {"manifest": f"results/models/{_name}.json",
              **({"model_cache": _RES["model_cache"]} if _RES["model_cache"] else {})}
    config["models"][_name].update(_extra)
    if _name in COLLECT.models:
        COLLECT.models[_name].update(_extra)


def model_manifest(model):
    """The fetch manifest a job that loads ``model`` waits for ([] for a local or built-in model). Ancient: a
    fetch rerun that rewrites it (a lock added, a parameter of the fetch changed) reruns no GPU job; the job
    loads the commit the manifest names."""
    return [ancient(f"results/models/{model}.json")] if model in HUB_MODELS else []


def traj_sample_gpus(wildcards):
    """GPUs of a trajectory sampling job: the model's tensor_parallel_size, as for collection."""
    from thinkprobe.generate.plan import gpus, model_settings

    return gpus(model_settings(wildcards.model, config["models"].get(wildcards.model) or {}))
