"""The trajectory batches of a config (rules/trajectories.smk): which model x question set x batch of
questions each ``traj_sample`` job samples, under which decoding, and what decides its continuations.

:class:`TrajectoryJobs` lists the batches and their files at planning time; :func:`batch_identity` is what
a continuation batch is keyed and protected by; :func:`batch_id` / :data:`BATCH_PATTERN` name a batch. The
rule bodies that sample, label and tabulate them are in :mod:`thinkprobe.stages.trajectories`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .. import protect
from ..generate.defaults import MODEL_RESOURCE_KEYS
from ..generate.modelspec import ModelSpec, ModelSpecError
from ..traces import run_name, safe_id
from ..units import UnitKey
from .sampling import SamplingConfig, decoded_sampling, decoding_applies, batch_code_sha256


class PlanError(ValueError):
    """The trajectories section names something the config does not define; the message names it."""


def _named(config: Mapping[str, Any], section: str, name: str, what: str) -> dict[str, Any]:
    """The entry ``name`` of a config section that is a mapping by name or a list of {name: ...}."""
    entries = config.get(section) or {}
    if isinstance(entries, Mapping):
        if name in entries:
            return {"name": name, **dict(entries[name] or {})}
    else:
        for entry in entries:
            if isinstance(entry, Mapping) and entry.get("name") == name:
                return dict(entry)
    raise PlanError(f"trajectories.{what}: {name!r} is not defined in the config's {section}: section")


def _spec(name: str, entry: Mapping[str, Any]) -> ModelSpec:
    try:
        return ModelSpec.from_config(name, entry)
    except ModelSpecError as exc:
        raise PlanError(f"trajectories.models: {exc}") from None


class TrajectoryJobs:
    """The trajectory jobs of a config: models x question sets x batches of questions, and their files.

    Question sets are loaded once (for their ids, tasks and gold answers); sampling jobs are cut into
    batches of ``batch_questions`` questions (``batch_questions_by_model`` for a model whose jobs would
    otherwise run past ``resources.max_runtime``) in file order, so adding questions at the end of a set only
    adds batches.
    """

    def __init__(self, config: Mapping[str, Any], base: str | Path = "."):
        from ..generate.datasets import DatasetPending
        from ..generate.questions import load_question_set

        self.config = config
        self.traj = config["trajectories"]
        self.runs = [run_name(r) for r in self.traj["runs"]]
        self.models = {m: _spec(m, _named(config, "models", m, "models")) for m in self.traj["models"]}
        self.questions: dict[str, dict[str, dict[str, Any]]] = {}
        for qset in self.traj["question_sets"] if self.models else []:
            spec = _named(config, "question_sets", qset, "question_sets")
            try:
                qs = load_question_set(spec, base=Path(base))
            except DatasetPending:  # not fetched yet: the workflow stops its targets until it is (data_ready)
                continue
            except (ValueError, OSError) as exc:
                raise PlanError(f"trajectories.question_sets: {qset!r}: {exc}") from exc
            if self.traj["questions_limit"]:
                qs = qs[: self.traj["questions_limit"]]
            # keyed by the id as it appears in file names (safe_id), as the collected units are
            self.questions[qset] = {safe_id(q.id): {"task": q.task, "gold": q.gold,
                                                    **({"choices": [list(c) for c in q.choices]} if q.choices else {})}
                                    for q in qs}
        self.tasks: dict[str, str | None] = {}  # a question set's task (one loader reads it: one task)
        for qset, qs in self.questions.items():
            found = sorted({str(q["task"]) for q in qs.values()})
            if len(found) > 1:
                raise PlanError(f"trajectories.question_sets: {qset!r} holds questions of several tasks ({found})")
            self.tasks[qset] = found[0] if found else None
        sizes = {m: int((self.traj.get("batch_questions_by_model") or {}).get(m) or self.traj["batch_questions"])
                 for m in self.models}
        unknown = sorted(set(self.traj.get("batch_questions_by_model") or {}) - set(self.models))
        if unknown:
            raise PlanError(f"trajectories.batch_questions_by_model: {unknown} not in trajectories.models")
        specs = self.traj.get("decodings") or {}
        for name, spec in specs.items():
            for key, known in (("models", self.models), ("question_sets", self.traj["question_sets"])):
                unknown = [x for x in (spec or {}).get(key) or [] if x not in known]
                if unknown:
                    raise PlanError(f"trajectories.decodings.{name}.{key}: {unknown} not in trajectories.{key}")
        self.decodings = ["default", *sorted(specs)]
        self.batches = {(m, qset, batch_id(k // sizes[m], d)): list(qids)[k:k + sizes[m]]
                        for m in self.models for qset, qids in self.questions.items()
                        for d in self.decodings if d == "default" or decoding_applies(specs[d], m, qset)
                        for k in range(0, len(qids), sizes[m])}

    def trace_files(self, model: str, qset: str, batch: str) -> list[str]:
        return [f"results/traces/{model}/{qset}/{q}/{r}.json"
                for q in self.batches[(model, qset, batch)] for r in self.runs]

    def units(self, model: str, qset: str, batch: str) -> list[UnitKey]:
        """The units (realized traces) a batch samples: its questions x runs."""
        return [UnitKey(model, qset, q, r) for q in self.batches[(model, qset, batch)] for r in self.runs]

    def engine_model(self, model: str) -> dict[str, Any]:
        """The model's entry as the sampling job's parameter: without its resources and planning figures
        (:data:`~thinkprobe.generate.defaults.MODEL_RESOURCE_KEYS`), so that changing them reruns nothing."""
        return {k: v for k, v in self.models[model].as_stated().items() if k not in MODEL_RESOURCE_KEYS}

    def batch_questions(self, model: str, qset: str, batch: str) -> dict[str, dict[str, Any]]:
        return {q: self.questions[qset][q] for q in self.batches[(model, qset, batch)]}

    def files(self, folder: str) -> list[str]:
        return [f"results/{folder}/{m}/{q}/{b}.json" for m, q, b in self.batches]

    def sampling(self, batch: str | None = None, question_set: str | None = None) -> dict[str, Any]:
        """The sampling settings of a batch (the sampling job's param): its decoding's parameters overlaid on
        ``sampling``, and for a batch of ``question_set`` its task (``task``). Of ``forced.answer_cues`` only the
        entry of that task is kept, and only under the forced estimator: a cue edited for another task, or under
        another estimator, changes no batch's param (the cue's default is resolved from the task by
        :class:`~thinkprobe.trajectories.sampling.SamplingConfig`)."""
        decoding = decoding_of(batch) if batch else "default"
        out = {k: self.traj[k] for k in ("n", "stride", "estimator", "sampling", "forced", "stopping",
                                         "max_reasoning_tokens", "stop") if k in self.traj}
        task = self.tasks[question_set] if question_set is not None else None
        if "forced" in out:
            forced = {k: v for k, v in out["forced"].items() if k != "answer_cues"}
            cues = out["forced"].get("answer_cues") or {}
            if out.get("estimator") == "forced" and task in cues:
                forced["answer_cues"] = {task: cues[task]}
            out["forced"] = forced
        if task is not None:
            out["task"] = task
        if decoding != "default":
            out["sampling"] = decoded_sampling(self.traj, decoding)
            out["decoding"] = decoding
        return out

    def sampling_config(self, batch: str | None = None, question_set: str | None = None) -> SamplingConfig:
        """A batch's sampling settings parsed (:func:`sampling_config`)."""
        return sampling_config(self.sampling(batch, question_set))

    def overwrites(self) -> list[tuple[str, str]]:
        """Existing continuation batches this config would re-sample under other settings or another model
        (each compared with its own decoding's settings): ``(path, what changed)``, see :mod:`thinkprobe.protect`."""
        return protect.changed({path: batch_identity(self.sampling_config(b, q), self.models[m])
                                for path, (m, q, b) in zip(self.files("continuations"), self.batches)})

    def targets(self) -> list[str]:
        if not self.batches:
            return []
        return ["results/trajectories/traces.parquet", "results/tables/trajectory_conditions.parquet",
                "results/tables/trajectory_join.parquet", "results/figures/trajectory_mechanisms.png",
                "results/figures/trajectory_example.png", "results/figures/trajectory_join.png",
                "results/figures/trajectory_groups.png", "results/figures/trajectory_forest.png"]


# The batch wildcard of the trajectory rules: what batch_id makes.
BATCH_PATTERN = r"b[0-9]+(-[A-Za-z0-9_]+)?"


def sampling_config(traj: Mapping[str, Any]) -> SamplingConfig:
    """The trajectory settings of a batch (:meth:`TrajectoryJobs.sampling`, the sampling job's param; or a
    ``trajectories`` section) parsed into their dataclass: the one parse, which the planner's protection check,
    the sampling job and ``thinkprobe trajectory`` all use (:meth:`SamplingConfig.from_config`)."""
    return SamplingConfig.from_config(traj)


def batch_identity(cfg: SamplingConfig | Mapping[str, Any], model: ModelSpec | Mapping[str, Any]) -> dict[str, Any]:
    """What decides a continuation batch: its sampling settings (``cfg``, parsed: :func:`sampling_config`; a
    mapping is parsed here), its model (a spec, or the entry with its name; the entry as stated,
    :meth:`ModelSpec.as_stated`, enters), the model's engine settings that change what is sampled and the
    sampling code's hash (:func:`thinkprobe.protect.identity`). The sampling job records it beside the batch and
    keys the store and the finished documents with it; planning compares it before a rerun."""
    cfg = cfg if isinstance(cfg, SamplingConfig) else sampling_config(cfg)
    spec = ModelSpec.of(model)
    return protect.identity(cfg.as_dict(), spec.as_stated(), batch_code_sha256(cfg, spec.backend))


def batch_id(index: int, decoding: str = "default") -> str:
    """The batch wildcard: ``b0000`` for the default decoding (the paths of a study without decodings
    stay as they were), ``b0000-<decoding>`` for another one.

    >>> batch_id(3), batch_id(0, "t02"), decoding_of("b0000-t02"), decoding_of("b0003")
    ('b0003', 'b0000-t02', 't02', 'default')
    """
    return f"b{index:04d}" + ("" if decoding == "default" else f"-{decoding}")


def decoding_of(batch: str) -> str:
    return batch.split("-", 1)[1] if "-" in batch else "default"
