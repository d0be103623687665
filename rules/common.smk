# The study plan and the helpers shared by every rule file.
#
# All parse-time work is one library call, thinkprobe.study.workflowplan.workflow_plan: it validates the configuration
# against config/schema.yaml (defaults filled in; a bad key stops Snakemake with a message naming the key, the
# value and what is allowed), reads the inputs once and plans the units (model x question set x question x run),
# the analysis batches, the collected traces, the trajectory batches and every generation job. The rule files read
# the returned frozen plan explicitly (PLAN.models, PLAN.batches, PLAN.collect, ...) and call the helpers below;
# nothing else passes between rule files. Analysis jobs run per batch of units (wildcards model, question_set,
# batch), each writing one file per unit (thinkprobe.stages.batches).

import os as _os
import sys as _sys

from snakemake.exceptions import WorkflowError

from thinkprobe import rulebook as _rulebook
from thinkprobe.generate import jobres as _jobres
from thinkprobe.stages import batches as _batches
from thinkprobe.study.workflowplan import WorkflowPlanError, workflow_plan
from thinkprobe.units import UnitKey

try:
    PLAN = workflow_plan(config, ".", schema=workflow.source_path("../config/schema.yaml"),
                      configfiles=workflow.overwrite_configfiles or workflow.configfiles,
                      query_slurm=not workflow.remote_exec)
except WorkflowPlanError as exc:
    raise WorkflowError(str(exc))
config.clear()
config.update(PLAN.config)  # validated, defaults filled in: what every rule's params read
for _warning in PLAN.warnings:
    print(_warning, file=_sys.stderr)

# SLURM must never requeue a job behind Snakemake's back (a requeued job would run beside its retry): every sbatch
# this process runs inherits SBATCH_NO_REQUEUE, whatever slurm_extra or default-resources a profile sets.
_os.environ.update(SBATCH_NO_REQUEUE="1")

# ... so a PREEMPTED job never comes back: the SLURM plugin must report it as ended (it would poll it forever)
from thinkprobe.study.slurm_states import install as _install_slurm_states

_install_slurm_states(workflow)

# SLURM's warning before it kills a job at its wall time: SIGTERM resources.term_before_s seconds earlier, on which
# a job stops, keeps what it stored and exits (thinkprobe.stages.joblog); a --signal in slurm_extra wins over it
if config["resources"]["term_before_s"]:
    # setdefault: a value the user exported wins (and the variable is set here, not required: no envvars directive)
    _os.environ.setdefault("SBATCH_SIGNAL", f"TERM@{config['resources']['term_before_s']}")


def data_ready(wildcards=None):
    """Nothing (every input of the study is there), or an error naming what to fetch first: an input of every
    study target, so `snakemake` stops before any job while `snakemake fetch_datasets fetch_corpus` runs."""
    if PLAN.pending:
        raise WorkflowError("fetch the study's data first:\n  - " + "\n  - ".join(PLAN.pending.values()))
    return []


_TARGETS = {}


def add_targets(name, files):
    """Register targets of the default target `all` (the Snakefile asks for them through study_targets)."""
    _TARGETS[name] = list(files)


def study_targets(*names):
    """The targets the rule files registered under ``names`` (add_targets), in that order."""
    return [f for name in names for f in _TARGETS[name]]


# ---- what the library knows of each scripted rule, read from thinkprobe/rulebook.py (RULES) ----
# Its code hash (`code=rule_code("<rule>")`) and whether it runs in the Snakemake process (declared below for all of
# them; no scripted rule writes its own localrule directive). Its script directive stays a literal in the rule file
# (Snakemake's `code` rerun trigger records that directive's text, so an expression there would rerun every job).
# tests/test_rulebook.py checks with the parsed workflow that the rules (their scripts too) and the table agree.

# what the `localrules:` directive compiles to (the directive itself takes rule names written out, no expression)
workflow.localrules(*_rulebook.local_rules(config))


def rule_code(name):
    """Rule ``name``'s `code` param: the hash of the thinkprobe modules (and package files) its script's imports
    reach, and of what thinkprobe.rulebook.RULES adds for it (thinkprobe.codedeps.script_code), so that editing a
    module reruns exactly the rules whose scripts use it."""
    script = workflow.source_path(f"{_rulebook.RULE_SCRIPTS}/{_rulebook.rule(name).script}")
    return _rulebook.code(name, _os.path.dirname(script))


def file_sha(path):
    """Content hash of a user file read by a stage (e.g. a custom lexicon); '' for the packaged default."""
    from thinkprobe.outputs import sha256_file

    return sha256_file(path) if path else ""


def batch_keys(wildcards):
    """The units of one analysis batch, question then run (the order of its unit files and manifest)."""
    return PLAN.batch_keys(wildcards.model, wildcards.question_set, wildcards.batch)


def batch_units(wildcards):
    """An analysis job's identity param: its units (``model/question_set/question_id/run``). A different
    batching (resources.batch_questions) changes it, and the rerun job keeps every unit file already current."""
    return [k.path for k in batch_keys(wildcards)]


def manifests(stage, keys=None):
    """The batch manifests of ``stage`` (``segments``, ``graphs``, ``metrics``): of every batch, or of the
    batches of the units ``keys`` (model/question_set/question_id/run strings), in the study's order."""
    if keys is None:
        return [_batches.manifest(stage, *b) for b in PLAN.batches]
    seen = {}
    for key in keys:
        m, qset, qid, _run = key.split("/")
        seen[(m, qset, PLAN.batch_of(qset, qid))] = None
    return [_batches.manifest(stage, *b) for b in seen]


def batch_runtime(wildcards):
    """Wall time (minutes) of a graph or metrics job: 2 minutes and 6 s per unit (a Thought Graph of an ordinary
    trace takes well under a second on one core)."""
    return 2 + len(PLAN.batches[(wildcards.model, wildcards.question_set, wildcards.batch)]) * len(PLAN.runs) // 10


def batch_input(stage):
    """The manifest of the same batch of the stage before: a batch job's input."""
    return lambda w: _batches.manifest(stage, w.model, w.question_set, w.batch)


def sections(*names):
    return {name: config["analysis"][name] for name in names}


# ---- trace collection: what a rule reading collected traces waits for ----


def trace_inputs(keys):
    """The inputs of a job that reads the trace files of the units ``keys``: the manifest of the import job that
    writes an imported unit's (its analysis batch), or of the collection job that writes a collected unit's
    (thinkprobe.tracefiles), the latter marked
    ancient once those units' files exist, so that a rerun of the collection job (a run or question added to
    its batch, an edit of its code) reruns nothing downstream of the units it already wrote."""
    keys = list(keys)
    return PLAN.import_manifests(keys) + [ancient(p) if done else p for p, done in PLAN.collected.inputs(keys)]


_ABSENT_PAIRS = {}


def batch_absent(wildcards):
    """Units of a collected question set's batch that no collection job generates (outside its grid): they have
    no trace file, and the segment job writes them as absent."""
    qset = wildcards.question_set
    if qset not in PLAN.collected_sets:
        return []
    if qset not in _ABSENT_PAIRS:
        have = PLAN.collect.collected_pairs(qset)
        _ABSENT_PAIRS[qset] = {(m, r) for m in PLAN.models for r in PLAN.runs if (m, r) not in have}
    return [k.path for k in batch_keys(wildcards) if (k.model, k.run) in _ABSENT_PAIRS[qset]]


def trace_mb(keys):
    """MB of the trace files of ``keys`` that exist (0 before they are written: Snakemake evaluates a job's
    resources again when it submits it, once its inputs exist)."""
    total = 0
    for k in keys:
        try:
            total += _os.stat(f"results/traces/{k.path}.json").st_size
        except OSError:
            pass
    return total / 2**20


def all_trace_inputs():
    """trace_inputs of every unit of the study (the statistics that re-read traces)."""
    return PLAN.import_manifests() + [ancient(p) if done else p for p, done in PLAN.collected.inputs(PLAN.collect.units)]


def model_manifest(model):
    """The fetch manifest a job that loads ``model`` waits for ([] for a local or built-in model). Ancient: a
    fetch rerun that rewrites it (a lock added, a parameter of the fetch changed) reruns no GPU job; the job
    loads the commit the manifest names."""
    return [ancient(f"results/models/{model}.json")] if model in PLAN.hub_models else []


# ---- resources of the generation jobs (collect, traj_sample): from the model and the plan ----
# PLAN.jobs is the planner's estimate of every generation job
# (thinkprobe.study.planner); each job's runtime, memory and CPUs follow from it (thinkprobe.generate.jobres).
# Resources only: changing any of them reruns nothing.


def generation_resource(rule, key):
    """A resource of one generation job of ``rule``, looked up in the plan (a dict lookup per job). The runtime
    grows with the attempt (a retry after TIMEOUT asks for more; thinkprobe.generate.jobres.attempt_runtime)."""

    def value(wildcards):
        batch = wildcards.cbatch if rule == "collect" else wildcards.batch
        return PLAN.jobs.job(rule, wildcards.model, wildcards.question_set, batch).resources.get(key)

    if key == "runtime":
        def runtime(wildcards, attempt):
            return _jobres.attempt_runtime(value(wildcards), attempt, config["resources"]["max_runtime"])

        return runtime
    return value


def generation_threads(rule):
    def value(wildcards):
        batch = wildcards.cbatch if rule == "collect" else wildcards.batch
        return _jobres.job_threads(PLAN.jobs.job(rule, wildcards.model, wildcards.question_set, batch).resources)

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
    job = PLAN.jobs.job("collect", wildcards.model, wildcards.question_set, wildcards.cbatch)
    return _chunk_prompts(config["collection"]["chunk_prompts"], config["collection"]["save_every_s"],
                          job.hours * 3600, job.units)
