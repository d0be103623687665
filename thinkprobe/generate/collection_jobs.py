"""The collection jobs of a config, derived at parse time: which units each collection job generates, with
which seeds (:class:`CollectionJobs`, from :func:`list_collection_jobs`; called the collection plan before
issue 27, whose glossary keeps *plan* for what a study will cost).

The config names models (``models:``), question sets (``question_sets:``) and what to collect
(``collection.jobs``: model x question set, ``runs`` each). A collection job is one model x question set x
batch of ``collection.batch_questions`` questions (one engine start serves a whole batch), in the question
set's own order, so appending questions (a larger ``limit``) only adds batches at the end.

Collected units join the analysis's unit grid (:func:`join_grid`): their models, runs and questions are
added to the :class:`~thinkprobe.units.Discovery` the workflow plans from, and every later stage treats them
like imported units. Runs are named ``1`` ... ``M``, as in imported traces.

Each unit's seed is derived from the base seed and the unit's names (:func:`unit_seed`), so it is stable
when questions, runs or models are added, and recorded in the unit's provenance.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..tracefiles import COLLECT, TRACES, trace_file
from ..traces import safe_id
from ..units import Discovery, UnitKey
from .defaults import MODEL_DEFAULTS  # re-exported: collection_jobs.MODEL_DEFAULTS (one home: generate.defaults)
from .defaults import COLLECTION_SAMPLING_DEFAULTS
from .modelspec import ModelSpec
from .questions import PROMPT_VARIANTS, Question, QuestionSetError, Skipped, read_question_set


def gpus(model: ModelSpec | Mapping[str, Any]) -> int:
    """GPUs a collection job of this model asks SLURM for: its backend's need (``vllm``: ``tensor_parallel_size``
    on a GPU device; an endpoint or a replay file: none)."""
    return ModelSpec.of(model).gpus()


class CollectionConfigError(ValueError):
    """The collection section names an unknown model or question set, or clashes with the imported inputs."""


def unit_seed(base: int, unit: UnitKey, attempt: int = 0) -> int:
    """A 31-bit seed for one unit (and one retry ``attempt``), from the base seed and the unit's names.

    >>> unit_seed(0, UnitKey("m", "qs", "q1", "1")) == unit_seed(0, UnitKey("m", "qs", "q1", "1"))
    True
    >>> unit_seed(0, UnitKey("m", "qs", "q1", "1")) != unit_seed(0, UnitKey("m", "qs", "q1", "2"))
    True
    """
    key = f"{base}/{unit.path}" + (f"/retry{attempt}" if attempt else "")
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


def chunk_prompts(cap: int, save_every_s: float, job_seconds: float, units: int) -> int:
    """Prompts per engine call of a collection job: as many as are expected to finish within ``save_every_s``
    seconds of engine time (``job_seconds / units`` per unit: the planner's expected time of the job, its
    start-up allowance included, so the estimate errs towards saving more often), at least 1, at most ``cap``
    (``collection.chunk_prompts``). A job stores each finished chunk at once, so a job killed at its wall time,
    by a preemption or by SIGTERM loses at most about ``save_every_s`` of engine time.

    >>> chunk_prompts(64, 180, 900, 60)  # a ThinkProbe batch: 60 units expected in 15 minutes
    12
    >>> chunk_prompts(64, 180, 60, 60), chunk_prompts(64, 180, 36000, 10), chunk_prompts(64, 180, 0, 0)
    (64, 1, 64)
    """
    if units <= 0 or job_seconds <= 0:
        return cap
    return max(1, min(cap, int(save_every_s * units // job_seconds)))


def question_dict(q: Question) -> dict[str, Any]:
    return {"id": q.id, "question_set": q.question_set, "task": q.task, "text": q.text, "domain": q.domain,
            "gold": q.gold, "choices": [list(c) for c in q.choices]}


@dataclass
class CollectionJobs:
    """Every collection job and unit of the config."""

    models: dict[str, ModelSpec] = field(default_factory=dict)  # name -> the model's spec
    questions: dict[str, list[Question]] = field(default_factory=dict)  # question set -> questions (ordered)
    batches: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)  # (model, qset, batch) -> qids
    units: dict[UnitKey, tuple[str, str, str]] = field(default_factory=dict)  # unit -> its batch key
    jobs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (model, qset) -> job settings
    skipped: dict[str, list[Skipped]] = field(default_factory=dict)  # question set -> records left out
    pending: set[str] = field(default_factory=set)  # hub question sets not fetched yet (no job planned)
    _by_id: dict[str, tuple[list[Question], int, dict[str, Question]]] = field(
        default_factory=dict, init=False, repr=False, compare=False)  # questions_by_id's cache

    def skipped_rows(self) -> list[dict[str, str]]:
        """One exclusion row per record a collected question set left out (stage ``questions``)."""
        return [{"trace_id": f"{qset}/{Path(s.path).name}:{s.line}", "question_set": qset, "stage": "questions",
                 "reason": s.reason, "source": f"{s.path}:{s.line}"}
                for qset, rows in sorted(self.skipped.items()) for s in rows]

    @property
    def question_sets(self) -> list[str]:
        return sorted({qset for _, qset in self.jobs})

    def runs(self) -> list[str]:
        return sorted({u.run for u in self.units}, key=lambda r: (len(r), r))

    def questions_by_id(self, qset: str) -> dict[str, Question]:
        """The question set's questions by their safe id, built once per question set (the collect rule asks it
        once per collection job: rebuilt each time, one model on 75,000 questions spent most of its dry run on
        it, 375 jobs x 75,000 ids); rebuilt when the set's list of questions is replaced or grows."""
        qs = self.questions[qset]
        cached = self._by_id.get(qset)
        if cached is None or cached[0] is not qs or cached[1] != len(qs):
            cached = self._by_id[qset] = (qs, len(qs), {safe_id(q.id): q for q in qs})
        return cached[2]

    def batch_params(self, model: str, qset: str, batch: str,
                     collection: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Everything a collection job needs; without ``collection`` (the rule's identity param,
        :func:`~thinkprobe.generate.unit_store.batch_digest`) only what decides its units, not the job's
        loop-detection and chunking settings."""
        job = self.jobs[(model, qset)]
        by_id = self.questions_by_id(qset)
        units = []
        for qid in self.batches[(model, qset, batch)]:
            for run in job["run_names"]:
                key = UnitKey(model, qset, qid, run)
                units.append({"unit": key.as_dict(), "question": question_dict(by_id[qid]),
                              "seed": unit_seed(job["seed"], key)})
        out = {"model": self.models[model].as_dict(), "prompt_variant": job["prompt_variant"], "sampling": job["sampling"],
               "seed": job["seed"], "units": units}
        if collection is not None:
            out.update(loop_detection=dict(collection["loop_detection"]), chunk_prompts=collection["chunk_prompts"])
        return out


    def manifest(self, batch: tuple[str, str, str]) -> str:
        """The manifest of a collection job (model, question set, batch): its Snakemake output."""
        return f"{COLLECT}/{batch[0]}/{batch[1]}/{batch[2]}.json"

    def collected_pairs(self, qset: str) -> set[tuple[str, str]]:
        """The (model, run) pairs collected for a question set: its grid."""
        return {(m, r) for (m, q), job in self.jobs.items() if q == qset for r in job["run_names"]}


class CollectedTraces:
    """Which collected units have their trace file already, found by one scan of ``results/traces`` per model x
    question set (not a file test per job), and the inputs a rule reading collected traces waits for.

    A collected unit's trace file is written by its collection job (:mod:`thinkprobe.tracefiles`), so a rule
    that reads it takes the job's manifest as input. Once every unit the rule reads from that batch has its
    trace file, the manifest is marked *done* (the workflow wraps it in ``ancient``): a rerun of the collection
    job (a run or a question added to the batch, an edit of the collection code) then reruns no analysis of the
    units it already wrote.
    """

    def __init__(self, plan: CollectionJobs, root: str | Path = "."):
        self.plan = plan
        self.root = Path(root)
        self._written: set[UnitKey] | None = None

    @property
    def written(self) -> set[UnitKey]:
        if self._written is None:
            found: set[UnitKey] = set()
            for model, qset in self.plan.jobs:
                folder = self.root / TRACES / model / qset
                try:
                    qdirs = [d for d in os.scandir(folder) if d.is_dir()]
                except OSError:
                    continue
                for d in qdirs:
                    for f in os.scandir(d.path):
                        if f.name.endswith(".json"):
                            found.add(UnitKey(model, qset, d.name, f.name[:-5]))
            self._written = found
        return self._written

    def inputs(self, keys) -> list[tuple[str, bool]]:
        """``(manifest, done)`` for the collection batches of ``keys`` (units not collected are skipped): done when
        every one of ``keys`` in that batch has its trace file."""
        out: dict[str, bool] = {}
        written = self.written
        for key in keys:
            batch = self.plan.units.get(key)
            if batch is None:
                continue
            path = self.plan.manifest(batch)
            out[path] = out.get(path, True) and key in written
        return list(out.items())

    def unwritten(self) -> dict[str, list[str]]:
        """Finished collection jobs (their manifest exists) with units whose trace file is missing (deleted by
        hand): manifest -> the missing trace files. Snakemake does not rerun a job whose output exists; the
        workflow names them and the command that rewrites them (from the store, generating nothing)."""
        written = self.written
        finished = {b for b in self.plan.batches if (self.root / self.plan.manifest(b)).exists()}
        out: dict[str, list[str]] = {}
        for key, batch in self.plan.units.items():
            if batch in finished and key not in written:
                out.setdefault(self.plan.manifest(batch), []).append(trace_file(key.path))
        return out


def list_collection_jobs(config: Mapping[str, Any], base: str | Path = ".") -> CollectionJobs:
    """The collection jobs and units a validated config asks for (its defaults filled in: runs, seed,
    batch_questions, sampling); raises :class:`CollectionConfigError`."""
    plan = CollectionJobs()
    collection = config.get("collection") or {}
    entries = collection.get("jobs") or []
    if not entries:
        return plan
    models_cfg = config.get("models") or {}
    qsets_cfg = config.get("question_sets") or {}
    size = int(collection["batch_questions"])
    for entry in entries:
        model, qset = str(entry["model"]), str(entry["question_set"])
        if model not in models_cfg:
            raise CollectionConfigError(f"collection job {model} x {qset}: unknown model {model!r} "
                                        f"(models: {', '.join(sorted(models_cfg)) or 'none'})")
        if qset not in qsets_cfg:
            raise CollectionConfigError(f"collection job {model} x {qset}: unknown question set {qset!r} "
                                        f"(question_sets: {', '.join(sorted(qsets_cfg)) or 'none'})")
        if (model, qset) in plan.jobs:
            raise CollectionConfigError(f"collection job {model} x {qset} is listed twice")
        if safe_id(model) != model or safe_id(qset) != qset:
            raise CollectionConfigError(f"collection job {model} x {qset}: model and question set names must "
                                        "be plain file names (letters, digits, '.', '_', '-')")
        if qset not in plan.questions:
            from .datasets import DatasetPending

            try:
                found = read_question_set({**qsets_cfg[qset], "name": qset}, Path(base))
            except DatasetPending:  # a hub set not fetched yet: no job until `snakemake fetch_datasets`
                plan.pending.add(qset)
                plan.models[model] = ModelSpec.from_config(model, models_cfg[model])
                continue
            except (QuestionSetError, OSError) as exc:
                raise CollectionConfigError(f"question set {qset!r}: {exc}") from exc
            plan.questions[qset], plan.skipped[qset] = found.questions, found.skipped
            if not plan.questions[qset]:
                raise CollectionConfigError(f"question set {qset!r} selects no question")
        spec = plan.models[model] = ModelSpec.from_config(model, models_cfg[model])
        runs = int(entry.get("runs", collection["runs"]))
        plan.jobs[(model, qset)] = {
            "run_names": [str(r) for r in range(1, runs + 1)],
            "seed": int(entry.get("seed", collection["seed"])),
            "sampling": {**COLLECTION_SAMPLING_DEFAULTS, **(collection.get("sampling") or {}),
                         **spec.sampling.thaw(), **(entry.get("sampling") or {})},
            "prompt_variant": str(entry.get("prompt_variant") or spec.prompt_variant),
        }
        if plan.jobs[(model, qset)]["prompt_variant"] not in PROMPT_VARIANTS:
            raise CollectionConfigError(f"collection job {model} x {qset}: unknown prompt variant "
                                        f"{plan.jobs[(model, qset)]['prompt_variant']!r} "
                                        f"(one of {', '.join(PROMPT_VARIANTS)})")
        qids = [safe_id(q.id) for q in plan.questions[qset]]
        for k in range(0, len(qids), size):
            batch = f"c{k // size:04d}"
            plan.batches[(model, qset, batch)] = qids[k:k + size]
            for qid in qids[k:k + size]:
                for run in plan.jobs[(model, qset)]["run_names"]:
                    plan.units[UnitKey(model, qset, qid, run)] = (model, qset, batch)
    return plan


def join_grid(found: Discovery, plan: CollectionJobs) -> Discovery:
    """Add the collected units' models, runs and questions to the analysis grid (in place; returned).

    A question set is either imported or collected, never both: its shard files are written by one rule.
    """
    if not plan.units:
        return found
    clash = sorted(set(plan.question_sets) & set(found.questions))
    if clash:
        raise CollectionConfigError(f"question set(s) {clash} are both imported (inputs) and collected "
                                    "(collection.jobs); give the collected set another name")
    found.models = sorted(set(found.models) | {u.model for u in plan.units})
    found.runs = sorted(set(found.runs) | {u.run for u in plan.units}, key=lambda r: (len(r), r))
    for qset in plan.question_sets:
        found.questions[qset] = [safe_id(q.id) for q in plan.questions[qset]]
        keys = [u for u in plan.units if u.question_set == qset]  # the set's grid: what its jobs collect
        found.grids[qset] = (sorted({u.model for u in keys}), sorted({u.run for u in keys}, key=lambda r: (len(r), r)))
    found.questions = dict(sorted(found.questions.items()))
    return found


def join_collection(found: Discovery, config: Mapping[str, Any], base: str | Path = ".") -> CollectionJobs:
    """Plan the config's collection and add its units to the analysis grid ``found``; the plan is returned."""
    plan = list_collection_jobs(config, base)
    join_grid(found, plan)
    return plan
