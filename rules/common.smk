# Configuration checks, unit planning and helpers shared by every rule.
#
# The configuration is validated against config/schema.yaml (defaults filled in) before any job runs; a
# bad key stops Snakemake with a message naming the key, the value and what is allowed. The inputs are
# read once here to plan the units: model x question set x question x run. Analysis jobs run per batch of
# units (wildcards model, question_set, batch), each writing one file per unit (thinkprobe.stages.batches).

from snakemake.exceptions import WorkflowError

from thinkprobe.codedeps import script_code as _script_code
from thinkprobe.config import ConfigError, load_schema, validate_config
from thinkprobe.traces import run_name
from thinkprobe.units import InputError, discover, no_traces_message
from thinkprobe.generate.collection_jobs import CollectionConfigError, join_collection


try:
    _validated = validate_config(dict(config), load_schema(workflow.source_path("../config/schema.yaml")))
except ConfigError as exc:
    raise WorkflowError(str(exc))
config.clear()
config.update(_validated)

from thinkprobe.study.planchecks import study_size as _study_size
from thinkprobe.generate import hostfacts as _hostfacts

_too_large = _study_size(config, ".")  # before any list of units is built (join_collection, TrajectoryJobs)
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

# The conda environment of the CPU and the GPU jobs (envs/cpu.yaml, envs/gpu.yaml), built by Snakemake
# (--sdm conda, as profiles/slurm does), or an environment already built on the shared file system (config
# environments.cpu / environments.gpu: its path or name; docs/cluster.md).
# environments.gpu_variant picks the GPU file (thinkprobe.generate.hostfacts: CUDA 13 or CUDA 12, the drivers each needs).
ENVS = {"cpu": config["environments"]["cpu"] or "../envs/cpu.yaml",
        "gpu": config["environments"]["gpu"]
        or f"../{_hostfacts.get(config['environments']['gpu_variant']).file}"}

# SLURM must never requeue a job behind Snakemake's back (a requeued job would run beside its retry): every sbatch
# this process runs inherits SBATCH_NO_REQUEUE, whatever slurm_extra or default-resources a profile sets.
import os as _os

_os.environ.update(SBATCH_NO_REQUEUE="1")

# ... so a PREEMPTED job never comes back: the SLURM plugin must report it as ended (it would poll it forever)
from thinkprobe.study.slurm_states import install as _install_slurm_states

_install_slurm_states(workflow)

# SLURM's warning before it kills a job at its wall time: SIGTERM resources.term_before_s seconds earlier, on which
# a job stops, keeps what it stored and exits (thinkprobe.stages.joblog); a --signal in slurm_extra wins over it
if config["resources"]["term_before_s"]:
    # setdefault: a value the user exported wins (and the variable is set here, not required: no envvars directive)
    _os.environ.setdefault("SBATCH_SIGNAL", f"TERM@{config['resources']['term_before_s']}")

try:
    DISCOVERY = discover(
        INPUTS,  # config["inputs"] with each git entry as a path inside its clone
        base=".",
        max_bytes=config["analysis"]["input"]["max_trace_bytes"],
        models=[str(m) for m in config["grid"]["models"]],
        runs=[run_name(r) for r in config["grid"]["runs"]],
    )
except InputError as exc:
    raise WorkflowError(f"invalid input: {exc}")
try:  # collected units (config `collection`) join the grid: thinkprobe.generate.collection_jobs
    COLLECT = join_collection(DISCOVERY, config, base=".")
except CollectionConfigError as exc:
    raise WorkflowError(f"invalid collection: {exc}")
from thinkprobe.study.planchecks import unknown_grid_models

_unknown_models = unknown_grid_models(config["grid"]["models"], DISCOVERY.found_models, COLLECT.models)
if _unknown_models and (DISCOVERY.records or COLLECT.units):  # with nothing at all, the message below says more
    raise WorkflowError(_unknown_models)
if not DISCOVERY.records and not COLLECT.units and not PENDING:
    raise WorkflowError(
        no_traces_message(DISCOVERY, config["inputs"], config["grid"]["models"], config["grid"]["runs"])
    )

from thinkprobe.rerun_tokens import pending as _retry_pending

RETRY = _retry_pending()  # shards whose input changed after an earlier planning: their import reruns
MODELS = DISCOVERY.models
RUNS = DISCOVERY.runs
SHARDS = [(qset, qid) for qset, qids in DISCOVERY.questions.items() for qid in qids]
# Analysis batches (thinkprobe.stages.batches): one model's units of resources.batch_questions questions of a
# question set, one segment, graph and metrics job each, which writes its units' files itself; its manifest is the
# job's output. The DAG grows with batches, not questions. A batch's three jobs are one component of group
# "analysis" (one SLURM job).
from thinkprobe.stages import batches as _batches

# A collected question set's batches are those of the models collected on it (another model's units there are
# absent: no trace, no file); an imported set's are every model's (a unit without a trace is written as missing).
_BATCH_MODELS = {qset: sorted({m for m, _r in COLLECT.collected_pairs(qset)}, key=MODELS.index)
                 if qset in COLLECT.question_sets else MODELS for qset in DISCOVERY.questions}
BATCHES = _batches.question_batches(DISCOVERY.questions, _BATCH_MODELS, config["resources"]["batch_questions"])
ANALYSIS = config["analysis"]



def script_code(script, *data):
    """A rule's `code` param: the hash of the thinkprobe modules (and package files) its script's imports reach
    (thinkprobe.codedeps.script_code), so that editing a module reruns exactly the rules whose scripts use it.
    ``data``: modules the job's inputs depend on besides its script, e.g. ``"tracefiles"`` (where they lie)."""
    return _script_code(workflow.source_path(f"../workflow/scripts/{script}"), *data)



def file_sha(path):
    """Content hash of a user file read by a stage (e.g. a custom lexicon); '' for the packaged default."""
    from thinkprobe.outputs import sha256_file

    return sha256_file(path) if path else ""


def unit_files(stage, ext):
    """The per-unit files of one question shard, model-major then run (the import job's outputs)."""
    return [
        f"results/{stage}/{model}/{{question_set}}/{{question_id}}/{run}.{ext}"
        for model in MODELS
        for run in RUNS
    ]


def unit_paths(wildcards):
    return [f"{m}/{wildcards.question_set}/{wildcards.question_id}/{r}" for m in MODELS for r in RUNS]


def batch_keys(wildcards):
    """The units of one analysis batch, question then run (the order of its unit files and manifest)."""
    m, qset = wildcards.model, wildcards.question_set
    return [UnitKey(m, qset, q, r) for q in BATCHES[(m, qset, wildcards.batch)] for r in RUNS]


def batch_units(wildcards):
    """An analysis job's identity param: its units (``model/question_set/question_id/run``). A different
    batching (resources.batch_questions) changes it, and the rerun job keeps every unit file already current."""
    return [k.path for k in batch_keys(wildcards)]


def manifests(stage, keys=None):
    """The batch manifests of ``stage`` (``segments``, ``graphs``, ``metrics``): of every batch, or of the
    batches of the units ``keys`` (model/question_set/question_id/run strings), in the study's order."""
    if keys is None:
        return [_batches.manifest(stage, *b) for b in BATCHES]
    size = config["resources"]["batch_questions"]
    index = {qset: {q: i for i, q in enumerate(qids)} for qset, qids in DISCOVERY.questions.items()}
    seen = {}
    for key in keys:
        m, qset, qid, _run = key.split("/")
        seen[(m, qset, f"b{index[qset][qid] // size:04d}")] = None
    return [_batches.manifest(stage, *b) for b in seen]


def batch_runtime(wildcards):
    """Wall time (minutes) of a graph or metrics job: 2 minutes and 6 s per unit (a Thought Graph of an ordinary
    trace takes well under a second on one core)."""
    return 2 + len(BATCHES[(wildcards.model, wildcards.question_set, wildcards.batch)]) * len(RUNS) // 10


def batch_input(stage):
    """The manifest of the same batch of the stage before: a batch job's input."""
    return lambda w: _batches.manifest(stage, w.model, w.question_set, w.batch)


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


# ---- trace collection: the collected question sets, and what a rule reading collected traces waits for ----
import os
import re
import sys
from pathlib import Path

from thinkprobe.generate.collection_jobs import CollectedTraces
from thinkprobe.units import UnitKey

# a question set is imported or collected, never both (checked by join_grid at planning)
COLLECTED_SETS = "|".join(re.escape(q) for q in COLLECT.question_sets) or "(?!)"
IMPORTED_SETS = f"(?!(?:{COLLECTED_SETS})(?:/|$))[A-Za-z0-9._-]+" if COLLECT.units else "[A-Za-z0-9._-]+"
# which collected units have their trace file: one scan of results/traces per model x question set
COLLECTED = CollectedTraces(COLLECT)
_COLLECTED_SETS = frozenset(COLLECT.question_sets)
_unwritten = COLLECTED.unwritten()
if _unwritten:  # a finished collection job whose trace files were deleted by hand: Snakemake would not rerun it
    _jobs = " ".join(sorted(_unwritten))
    print(f"WARNING: {sum(map(len, _unwritten.values()))} collected trace file(s) are missing although their "
          f"collection job finished (e.g. {next(iter(_unwritten.values()))[0]}); to write them again from the store "
          f"(nothing is generated again), rerun their job(s): --forcerun {_jobs}", file=sys.stderr)


def trace_inputs(keys):
    """The inputs of a job that reads the trace files of the units ``keys``; for an imported unit its trace file,
    or the manifest of the collection job that writes a collected unit's (thinkprobe.tracefiles), marked
    ancient once those units' files exist, so that a rerun of the collection job (a run or question added to
    its batch, an edit of its code) reruns nothing downstream of the units it already wrote."""
    keys = list(keys)
    imported = [f"results/traces/{k.path}.json" for k in keys if k.question_set not in _COLLECTED_SETS]
    return imported + [ancient(p) if done else p for p, done in COLLECTED.inputs(keys)]


_ABSENT_PAIRS = {}


def batch_absent(wildcards):
    """Units of a collected question set's batch that no collection job generates (outside its grid): they have
    no trace file, and the segment job writes them as absent."""
    qset = wildcards.question_set
    if qset not in _COLLECTED_SETS:
        return []
    if qset not in _ABSENT_PAIRS:
        have = COLLECT.collected_pairs(qset)
        _ABSENT_PAIRS[qset] = {(m, r) for m in MODELS for r in RUNS if (m, r) not in have}
    return [k.path for k in batch_keys(wildcards) if (k.model, k.run) in _ABSENT_PAIRS[qset]]


def trace_mb(keys):
    """MB of the trace files of ``keys`` that exist (0 before they are written: Snakemake evaluates a job's
    resources again when it submits it, once its inputs exist)."""
    total = 0
    for k in keys:
        try:
            total += os.stat(f"results/traces/{k.path}.json").st_size
        except OSError:
            pass
    return total / 2**20


def all_trace_inputs():
    """trace_inputs of every unit of the study (the statistics that re-read traces)."""
    imported = [f for qset, qid in SHARDS if qset not in _COLLECTED_SETS
                for f in (f"results/traces/{m}/{qset}/{qid}/{r}.json" for m in MODELS for r in RUNS)]
    return imported + [ancient(p) if done else p for p, done in COLLECTED.inputs(COLLECT.units)]


# ---- models by hub id (rules/models.smk) and the study's checks (thinkprobe.study.study_checks) ----
from thinkprobe.study.planner import hub_models as _hub_models
from thinkprobe.study.study_checks import check_study as _check_study

_problems = _check_study(config, base=".", collect=COLLECT)
if not workflow.remote_exec:  # what SLURM (sinfo, sacctmgr) says of the placement keys the config sets, once
    from thinkprobe.generate.cluster import slurm_problems as _slurm_problems

    _problems += _slurm_problems(config)
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


# ---- resources of the generation jobs (collect, traj_sample): from the model and the plan ----
# JOB_PLAN (rules/trajectories.smk, once both plans exist) is the planner's estimate of every generation job
# (thinkprobe.study.planner); each job's runtime, memory and CPUs follow from it (thinkprobe.generate.jobres).
# Resources only: changing any of them reruns nothing.


def generation_resource(rule, key):
    """A resource of one generation job of ``rule``, looked up in the plan (a dict lookup per job). The runtime
    grows with the attempt (a retry after TIMEOUT asks for more; thinkprobe.generate.jobres.attempt_runtime)."""

    def value(wildcards):
        batch = wildcards.cbatch if rule == "collect" else wildcards.batch
        return JOB_PLAN.job(rule, wildcards.model, wildcards.question_set, batch).resources.get(key)

    if key == "runtime":
        def runtime(wildcards, attempt):
            return _jobres.attempt_runtime(value(wildcards), attempt, config["resources"]["max_runtime"])

        return runtime
    return value


def generation_threads(rule):
    def value(wildcards):
        batch = wildcards.cbatch if rule == "collect" else wildcards.batch
        return _jobres.job_threads(JOB_PLAN.job(rule, wildcards.model, wildcards.question_set, batch).resources)

    return value


def generation_gpu_model(rule):
    """SLURM GPU model of a GPU job: the model's gpu_model, else resources.gpu_model (none for a CPU job)."""

    def value(wildcards):
        if not generation_resource(rule, "gpu")(wildcards):
            return None
        return (config["models"][wildcards.model].get("gpu_model") or config["resources"]["gpu_model"]) or None

    return value


def generation_tasks_per_gpu(rule):
    """0 for a GPU job: the plugin then asks for one task that sees all the job's GPUs (vLLM's tensor parallel
    workers), instead of one task per GPU bound to it."""

    def value(wildcards):
        return 0 if generation_resource(rule, "gpu")(wildcards) else None

    return value


from thinkprobe.generate import jobres as _jobres


# ---- where SLURM jobs go: config resources.slurm (account; partition, QoS, constraint for CPU and GPU jobs) ----
def place_slurm_jobs(all_rules):
    """The SLURM account, partition, QoS and node constraint of each job's kind (a job asking for a GPU gets
    resources.slurm.gpu, any other .cpu), unless its own resources or a profile (default-resources, set-resources)
    state them."""
    slurm = config["resources"]["slurm"]
    keys = {"slurm_partition": "partition", "qos": "qos", "constraint": "constraint"}
    for r in all_rules:
        placed = {k: (slurm["cpu"][v], slurm["gpu"][v]) for k, v in keys.items()}
        placed["slurm_account"] = (slurm["account"], slurm["account"])
        gpu = r.resources["gpu"] if "gpu" in r.resources else None
        gpu = 0 if gpu is None else generation_resource(r.name, "gpu") if gpu.is_evaluable() else gpu.value
        for key, (cpu_value, gpu_value) in placed.items():
            if key in r.resources or not (cpu_value or gpu_value):
                continue
            if callable(gpu):  # decided per job (a generation job on a CPU model asks for no GPU)
                r.resources[key] = (lambda g, c, v: lambda wildcards: (v if g(wildcards) else c) or None)(
                    gpu, cpu_value, gpu_value)
            elif gpu_value if gpu else cpu_value:
                r.resources[key] = gpu_value if gpu else cpu_value


# the collect rule's chunk_prompts resource (rules/collect.smk)
from thinkprobe.generate.collection_jobs import chunk_prompts as _chunk_prompts


def collection_chunk_prompts(wildcards):
    """Prompts per engine call of one collection job: as many as the planner expects to finish within
    collection.save_every_s, at most collection.chunk_prompts (thinkprobe.generate.collection_jobs.chunk_prompts)."""
    job = JOB_PLAN.job("collect", wildcards.model, wildcards.question_set, wildcards.cbatch)
    return _chunk_prompts(config["collection"]["chunk_prompts"], config["collection"]["save_every_s"],
                          job.hours * 3600, job.units)
