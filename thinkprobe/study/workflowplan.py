"""The workflow plan: everything the workflow works out when Snakemake parses it, in one library call.

``rules/common.smk`` calls :func:`workflow_plan` once and every rule file reads the returned :class:`WorkflowPlan`
explicitly (``PLAN.models``, ``PLAN.batches``, ``PLAN.collect``, ...): the rule files are wiring, the logic is here. The call
validates the configuration (defaults filled in), checks the study's size before any list of units is built,
reads the lock file, resolves the git inputs and the hub datasets, discovers the imported traces, joins the
collected units, reads the rerun tokens (:mod:`thinkprobe.rerun_tokens`), plans the analysis batches
(:mod:`thinkprobe.stages.batches`), scans which collected trace files exist, runs the study's checks, matches the
lock against the hub models, plans the trajectory batches and estimates every generation job
(:mod:`thinkprobe.study.planner`, whose ``StudyPlan`` is the resource estimate: :attr:`WorkflowPlan.jobs`). Any
problem raises :class:`WorkflowPlanError` with the message Snakemake shows.

What stays in ``rules/common.smk`` is what touches the Snakemake process itself: the validated config written
back into Snakemake's ``config``, the environment variables every ``sbatch`` inherits (``SBATCH_NO_REQUEUE``,
``SBATCH_SIGNAL``), the SLURM plugin's state handling, and the helpers that turn the plan into a rule's inputs,
params and resources per job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..config import ConfigError, load_schema, validate_config
from ..units import UnitKey


class WorkflowPlanError(ValueError):
    """The study cannot be planned as configured; the message names the key, file or item and the fix."""


@dataclass(frozen=True)
class WorkflowPlan:
    """What one parse of the workflow knows of the study (built by :func:`workflow_plan`; read-only)."""

    config: dict[str, Any]
    """The validated configuration (defaults filled in; hub models carry their fetch manifest and cache)."""
    lock_file: Any
    lock: Any
    relock: bool
    corpus_cache: Any
    inputs: list[dict[str, Any]]
    """``config["inputs"]`` with every git entry as a path inside its clone."""
    pending: dict[str, str]
    """Data to fetch first (a git input not cloned, a hub question set not cached): key -> message."""
    hub_datasets: Any
    envs: dict[str, str]
    """The conda environment (file or built environment) of the CPU and of the GPU jobs."""
    discovery: Any
    """The imported traces (:func:`thinkprobe.units.discover`)."""
    collect: Any
    """The collected units (:func:`thinkprobe.generate.collection_jobs.join_collection`)."""
    collected: Any
    """Which collected units have their trace file (:class:`thinkprobe.generate.collection_jobs.CollectedTraces`)."""
    retry: dict[tuple[str, str], str]
    """Rerun tokens of the shards whose input changed after an earlier planning (:mod:`thinkprobe.rerun_tokens`)."""
    models: list[str]
    runs: list[str]
    questions: dict[str, list[str]]
    """Question set -> its question ids, in the set's order."""
    batches: dict[tuple[str, str, str], list[str]]
    """(model, question set, batch) -> question ids: the analysis batches (:mod:`thinkprobe.stages.batches`)."""
    batch_size: int
    collected_sets: frozenset[str]
    collected_pattern: str
    """Wildcard constraint matching a collected question set (``(?!)``: none)."""
    imported_pattern: str
    """Wildcard constraint matching an imported question set (never a collected one)."""
    hub_models: Any
    locked_models: Any
    segment_threads: int
    gpu_resources: dict[str, Any]
    """The segment job's GPU resources (none unless ``resources.encoder_gpu``)."""
    trajectories: Any
    """The trajectory batches (:class:`thinkprobe.trajectories.batches.TrajectoryJobs`)."""
    jobs: Any
    """The planner's estimate of every generation job (:func:`thinkprobe.study.planner.plan_study`)."""
    page_units: list[str]
    """Units with a trace page (:func:`thinkprobe.stages.trace_pages.page_units`): the first ``pages.per_model`` of each
    model and, with ``pages.trajectories``, every unit with an answer-distribution trajectory."""
    pages_show_trajectories: bool
    """Whether the trace pages show trajectories (some page unit has one): the pages job then reads them."""
    warnings: tuple[str, ...]
    """Messages for the user that do not stop the workflow."""

    @property
    def shards(self) -> list[tuple[str, str]]:
        """(question set, question id) of every imported or collected question, in the study's order."""
        return [(qset, qid) for qset, qids in self.questions.items() for qid in qids]

    def batch_of(self, question_set: str, question_id: str) -> str:
        """The analysis batch (``b0000``, ...) a question falls in (the same for every model)."""
        return f"b{self._index[question_set][question_id] // self.batch_size:04d}"

    @property
    def _index(self) -> dict[str, dict[str, int]]:
        cache = self.__dict__.get("_index_cache")
        if cache is None:
            cache = {qset: {q: i for i, q in enumerate(qids)} for qset, qids in self.questions.items()}
            object.__setattr__(self, "_index_cache", cache)
        return cache

    def batch_keys(self, model: str, question_set: str, batch: str) -> list[UnitKey]:
        """The units of one analysis batch, question then run (the order of its unit files and manifest)."""
        return [UnitKey(model, question_set, q, r) for q in self.batches[(model, question_set, batch)]
                for r in self.runs]

    def import_records(self, model: str, question_set: str, batch: str) -> dict[str, dict[str, str] | None]:
        """The record reference of each unit of one import job (an imported set's analysis batch): its param."""
        prefix = f"{model}/"
        return {unit: ref for q in self.batches[(model, question_set, batch)]
                for unit, ref in self.discovery.shard_records(question_set, q).items() if unit.startswith(prefix)}

    def retry_tokens(self, model: str, question_set: str, batch: str) -> str:
        """The rerun tokens of the batch's questions whose input changed after an earlier planning
        (:mod:`thinkprobe.rerun_tokens`), ``question_id:token`` joined by spaces; '' for none: an import job's
        param, so a new token reruns exactly the import jobs of that question (one per model)."""
        if not self.retry:
            return ""
        return " ".join(f"{q}:{self.retry[(question_set, q)]}" for q in self.batches[(model, question_set, batch)]
                        if (question_set, q) in self.retry)

    def import_manifests(self, keys: Sequence[UnitKey] | None = None) -> list[str]:
        """The manifests of the import jobs (rule ``import_traces``) of the imported units ``keys`` (of every
        imported unit when None), in the study's order: what a rule reading imported trace files waits for."""
        from ..stages.batches import manifest

        if keys is None:
            return [manifest("traces", *b) for b in self.batches if b[1] not in self.collected_sets]
        seen = {(k.model, k.question_set, self.batch_of(k.question_set, k.question_id)): None
                for k in keys if k.question_set not in self.collected_sets}
        return [manifest("traces", *b) for b in seen]


def _fail(head: str, problems: Sequence[str]) -> None:
    if problems:
        raise WorkflowPlanError(head + ":\n  - " + "\n  - ".join(problems))


def workflow_plan(config: Mapping[str, Any], workdir: str = ".", *, schema: str, configfiles: Sequence[str],
               query_slurm: bool = True) -> WorkflowPlan:
    """Plan the study of ``config`` (as Snakemake read it) in the working directory ``workdir``.

    ``schema``: config/schema.yaml; ``configfiles``: the config files given (the lock file lies beside the
    last); ``query_slurm``: ask SLURM (sinfo, sacctmgr) about the placement keys the config sets (False inside a
    job, where the submitting process already did)."""
    from ..corpus_git import corpus_cache as _corpus_cache, resolve_inputs
    from ..generate import hostfacts
    from ..generate.collection_jobs import CollectedTraces, CollectionConfigError, join_collection
    from ..generate.modelspec import ModelSpec
    from ..generate.datasets import hub_sets, prepare as prepare_datasets
    from ..generate.lock import LockError, check_models, lock_path, read_lock, relock_requested
    from ..rerun_tokens import pending as retry_pending
    from ..stages import batches as _batches, trace_pages as _pages
    from ..traces import run_name
    from ..trajectories import batches as traj_batches
    from ..units import InputError, discover, no_traces_message
    from .planchecks import study_size, uncollected_trajectories, unknown_grid_models
    from .planner import hub_models as _hub_models, imported_batches, plan_study
    from .study_checks import check_study

    try:
        config = validate_config(dict(config), load_schema(schema))
    except ConfigError as exc:
        raise WorkflowPlanError(str(exc)) from None
    _fail("the study is too large to plan", study_size(config, workdir))  # before any list of units is built

    # data fetched by the workflow (rules/models.smk): a git input not yet cloned and a hub question set not yet in
    # the cache are left out of the plan; every study target then stops naming them (data_ready)
    lock_file = lock_path(list(configfiles))
    try:
        lock = read_lock(lock_file)
    except LockError as exc:
        raise WorkflowPlanError(str(exc)) from None
    relock = relock_requested(config["relock"])  # --config relock=true: move the lock's commits on purpose
    corpus_cache = _corpus_cache(config["resources"]["corpus_cache"])
    inputs, corpus_pending, problems = resolve_inputs(config["inputs"], corpus_cache)
    more_problems, datasets_pending = prepare_datasets(config, lock, str(lock_file), relock)
    _fail("the study's data cannot be used as configured", problems + more_problems)
    pending = {**corpus_pending, **{f"question_sets.{k}": v for k, v in datasets_pending.items()}}

    # environments.gpu_variant picks the GPU file (thinkprobe.generate.hostfacts: CUDA 13 or CUDA 12)
    envs = {"cpu": config["environments"]["cpu"] or "../envs/cpu.yaml",
            "gpu": config["environments"]["gpu"]
            or f"../{hostfacts.get(config['environments']['gpu_variant']).file}"}

    try:
        discovery = discover(inputs, base=workdir, max_bytes=config["analysis"]["input"]["max_trace_bytes"],
                             models=[str(m) for m in config["grid"]["models"]],
                             runs=[run_name(r) for r in config["grid"]["runs"]])
    except InputError as exc:
        raise WorkflowPlanError(f"invalid input: {exc}") from None
    try:  # collected units (config `collection`) join the grid
        collect = join_collection(discovery, config, base=workdir)
    except CollectionConfigError as exc:
        raise WorkflowPlanError(f"invalid collection: {exc}") from None
    unknown = unknown_grid_models(config["grid"]["models"], discovery.found_models, collect.models)
    if unknown and (discovery.records or collect.units):  # with nothing at all, the message below says more
        raise WorkflowPlanError(unknown)
    if not discovery.records and not collect.units and not pending:
        raise WorkflowPlanError(no_traces_message(discovery, config["inputs"], config["grid"]["models"],
                                               config["grid"]["runs"]))

    models = discovery.models
    # A collected question set's batches are those of the models collected on it (another model's units there are
    # absent: no trace, no file); an imported set's are every model's (a unit without a trace is written as missing).
    batch_models = {qset: sorted({m for m, _r in collect.collected_pairs(qset)}, key=models.index)
                    if qset in collect.question_sets else models for qset in discovery.questions}
    size = config["resources"]["batch_questions"]
    batches = _batches.question_batches(discovery.questions, batch_models, size)

    res = config["resources"]
    # On a GPU node the encoding job takes all of its allocation's CPUs (threads are capped at --cores), so a group
    # job never runs two GPU jobs side by side and asks SLURM for exactly one GPU.
    segment_threads = 10**6 if res["encoder_gpu"] else res["analysis_threads"]
    gpu_resources = ({"gpu": 1, **({"gpu_model": res["gpu_model"]} if res["gpu_model"] else {})}
                     if res["encoder_gpu"] else {})

    # a question set is imported or collected, never both (checked by join_grid at planning)
    collected_pattern = "|".join(re.escape(q) for q in collect.question_sets) or "(?!)"
    imported_pattern = (f"(?!(?:{collected_pattern})(?:/|$))[A-Za-z0-9._-]+" if collect.units
                        else "[A-Za-z0-9._-]+")
    collected = CollectedTraces(collect)  # one scan of results/traces per model x question set
    warnings = []
    unwritten = collected.unwritten()
    if unwritten:  # a finished collection job whose trace files were deleted by hand: Snakemake would not rerun it
        jobs = " ".join(sorted(unwritten))
        warnings.append(
            f"WARNING: {sum(map(len, unwritten.values()))} collected trace file(s) are missing although their "
            f"collection job finished (e.g. {next(iter(unwritten.values()))[0]}); to write them again from the store "
            f"(nothing is generated again), rerun their job(s): --forcerun {jobs}")

    # the study's checks (thinkprobe.study.study_checks) and, once, what SLURM says of the placement keys
    problems = check_study(config, base=workdir, collect=collect)
    if query_slurm:
        from ..generate.cluster import slurm_problems

        problems += slurm_problems(config)
    _fail("the study cannot run as configured", problems)

    hub_models = _hub_models(config, collect)
    lock_problems, locked_models = check_models(config, hub_models, lock, str(lock_file), relock)
    _fail("the lock file does not match the model cache", lock_problems)
    # what a job needs to find a hub model offline: the cache and the manifest of its fetch (params of the jobs)
    for name in hub_models:
        extra = {"manifest": f"results/models/{name}.json",
                 **({"model_cache": res["model_cache"]} if res["model_cache"] else {})}
        config["models"][name].update(extra)
        if name in collect.models:  # a spec is frozen: parsed again from the entry the jobs read
            collect.models[name] = ModelSpec.from_config(name, config["models"][name])

    # the trajectory batches, and every generation job's expected tokens and hours (so its resources)
    try:
        trajectories = traj_batches.TrajectoryJobs(config)
    except traj_batches.PlanError as exc:
        raise WorkflowPlanError(str(exc)) from None
    not_collected = (uncollected_trajectories(trajectories.models, trajectories.questions, collect.jobs)
                     if trajectories.batches and config["trajectories"]["enabled"] else None)
    if not_collected:
        raise WorkflowPlanError(not_collected)
    overwrites = trajectories.overwrites()
    if overwrites and not config["overwrite_protected"]:  # refused by the project itself (thinkprobe.protect)
        from .. import protect

        raise WorkflowPlanError(protect.refusal(overwrites))
    job_plan = plan_study(config, workdir, collect=collect, trajectories=trajectories,
                          imported=imported_batches(discovery, batches, collect.question_sets))
    over_cap = job_plan.over_cap()
    if over_cap:
        raise WorkflowPlanError("the study cannot run as configured:\n  - " + "\n  - ".join(over_cap[:20])
                             + (f"\n  ... and {len(over_cap) - 20} more (thinkprobe plan lists them)"
                                if len(over_cap) > 20 else ""))

    traj_units = ([UnitKey(m, q, qid, r) for (m, q, _b), qids in trajectories.batches.items() for qid in qids
                   for r in trajectories.runs]
                  if config["trajectories"]["enabled"] and config["pages"]["trajectories"] else [])
    page_units = _pages.page_units([*discovery.records, *collect.units], config["pages"]["per_model"], traj_units)

    return WorkflowPlan(
        config=config, lock_file=lock_file, lock=lock, relock=relock, corpus_cache=corpus_cache, inputs=inputs,
        pending=pending, hub_datasets=hub_sets(config), envs=envs, discovery=discovery, collect=collect,
        collected=collected, retry=retry_pending(workdir), models=models, runs=discovery.runs,
        questions=discovery.questions, batches=batches, batch_size=size,
        collected_sets=frozenset(collect.question_sets), collected_pattern=collected_pattern,
        imported_pattern=imported_pattern, hub_models=hub_models, locked_models=locked_models,
        segment_threads=segment_threads, gpu_resources=gpu_resources, trajectories=trajectories, jobs=job_plan,
        page_units=page_units, pages_show_trajectories=bool(traj_units),
        warnings=tuple(warnings))
