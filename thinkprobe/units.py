"""Units of analysis for the workflow: model x question set x question x run, and where each one's trace is.

The workflow plans its jobs from this module's :func:`discover`: it reads the configured inputs (trace
folders, JSON and JSONL files) once at parse time, maps every record to its unit, and reports what cannot
be mapped (unreadable files, broken lines, records without a model, duplicate units) as exclusions instead
of stopping. Each unit is identified by path-safe names (:func:`~thinkprobe.traces.safe_id`, injective, so
``問題一`` and ``問題二`` are two units); its files live at
``results/<stage>/<model>/<question_set>/<question_id>/<run>.<ext>``, and the ids as the input states them
travel with the unit into its files and the tables.

A record is found again by its content hash within its file, not by its line number: the rule parameters
hold no line numbers, so inserting a blank line (or any other record) into an input file reruns nothing
that did not change. (A record without an id is named after its line, ``<file>-<line>``; moving such a
record renames its unit. Give records ids.)

Analysis jobs are sharded per question (all models and runs of one question in one job): a job loads the
encoder once for many traces, and adding a question creates new jobs without touching existing ones.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from .corpus_inputs import adapt
from .traces import Exclusion, RawRecord, iter_records, run_name, safe_id, walk_inputs


UNIT_FIELDS = ("model", "question_set", "question_id", "run")
# An `inputs:` entry's defaults (config/schema.yaml reads them: x-defaults-from): the run of records naming none.
INPUT_DEFAULTS = {"run": 1}


def unit_path(unit: Mapping[str, Any], missing: str | None = None) -> str:
    """``model/question_set/question_id/run`` of a unit mapping: its id in tables and messages.

    ``missing`` stands in for an absent field; without it an absent field raises ``KeyError``.

    >>> unit_path({"model": "m", "question_set": "s", "question_id": "q", "run": 1})
    'm/s/q/1'
    >>> unit_path({"model": "m"}, missing="?")
    'm/?/?/?'
    """
    return "/".join(str(unit[k] if missing is None else unit.get(k, missing)) for k in UNIT_FIELDS)


@dataclass(frozen=True, order=True)
class UnitKey:
    model: str
    question_set: str
    question_id: str
    run: str

    @property
    def path(self) -> str:
        return f"{self.model}/{self.question_set}/{self.question_id}/{self.run}"

    @classmethod
    def from_path(cls, path: str) -> "UnitKey":
        return cls(*path.split("/"))

    def as_dict(self) -> dict[str, str]:
        return {"model": self.model, "question_set": self.question_set, "question_id": self.question_id,
                "run": self.run}


@dataclass(frozen=True)
class RecordRef:
    """Where one unit's trace comes from: the file and the item's content hash (plus ids as stated).

    ``source`` (``path:LINE``) is where the item was when the workflow was planned; it is reported in
    messages but left out of :meth:`as_dict` (the rule parameters), so that moving a record within its file
    changes no parameter. The import job finds the item again by ``sha256``.
    """

    path: str
    source: str
    sha256: str
    trace_id: str
    domain: str
    ids: tuple[tuple[str, str], ...] = ()  # model, question_id, run, record_id as the input states them

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "trace_id": self.trace_id, "domain": self.domain,
                "original": dict(self.ids)}


@dataclass
class Discovery:
    """Everything the workflow needs to plan: the unit grid and the input problems."""

    records: dict[UnitKey, RecordRef] = field(default_factory=dict)
    problems: list[Exclusion] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    questions: dict[str, list[str]] = field(default_factory=dict)  # question set -> question ids
    found_models: list[str] = field(default_factory=list)  # every model in the inputs (before the grid)
    found_runs: list[str] = field(default_factory=list)
    # question set -> (models, runs) that apply to it: the configured grid.models/runs when the study names
    # them, else the models and runs of its inputs (imported) or of its collection jobs (collected)
    grids: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)

    def in_grid(self, key: UnitKey) -> bool:
        """Whether a unit belongs to its question set's grid (else it is ``absent``, no unit of the study)."""
        models, runs = self.grids.get(key.question_set, (self.models, self.runs))
        return key.model in models and key.run in runs

    def shard_records(self, question_set: str, question_id: str) -> dict[str, dict[str, str] | None]:
        """Unit path -> record reference for one question's shard: None when a unit of the question set's
        grid has no trace (``missing``), ``{"absent": reason}`` for a unit outside that grid."""
        out: dict[str, dict[str, str] | None] = {}
        for model in self.models:
            for run in self.runs:
                key = UnitKey(model, question_set, question_id, run)
                ref = self.records.get(key)
                out[key.path] = ref.as_dict() if ref else (None if self.in_grid(key) else {"absent": (
                    f"absent: model {model} run {run} does not apply to question set {question_set}")})
        return out


class InputError(ValueError):
    """An input entry of the configuration cannot be used at all (e.g. its path does not exist)."""


class ChangedInput(InputError):
    """A planned record is gone from its file or changed after planning: retried on the next run
    (:mod:`thinkprobe.rerun_tokens`), never a finished result."""


def _unit_of(raw: RawRecord, entry: dict[str, Any]) -> tuple[UnitKey | None, str, dict[str, str]]:
    ids = raw.ids()
    model = ids["model"] or str(entry.get("model") or "")
    if not model:
        return None, "no model: the record has no `model` field and the input entry sets no `model`", {}
    qid = ids["question_id"] or (raw.default_id if raw.record is None else ids["original_id"])
    run = ids["run"] or run_name(entry.get("run", INPUT_DEFAULTS["run"]))
    model, qid, run = (unicodedata.normalize("NFC", str(v)) for v in (model, qid, run))  # one spelling of an id
    original = {"model": model, "question_id": qid, "run": run, "record_id": ids["original_id"]}
    key = UnitKey(safe_id(model), safe_id(entry["question_set"]), safe_id(qid), safe_id(run))
    return key, ids["domain"], original


def is_pattern(path: Path) -> bool:
    return any(c in str(path) for c in "*?[")


def input_roots(root: Path) -> list[Path]:
    """The files or folders an input's ``path`` names: itself, or every match of a glob pattern in its last
    component(s) (``.../reasoning_comparison_deepseek-r1-distill-*.json``), sorted; [] when none exists."""
    if not is_pattern(root):
        return [root] if root.exists() else []
    anchor = Path(root.anchor) if root.is_absolute() else Path(".")
    parts = root.parts[1:] if root.is_absolute() else root.parts
    return sorted(anchor.glob(str(Path(*parts))))


def discover(inputs: Iterable[dict[str, Any]], base: str | Path = ".", max_bytes: int = 2_000_000,
             models: list[str] | None = None, runs: list[str] | None = None) -> Discovery:
    """Read every configured input and map its records to units.

    ``inputs`` entries: ``{"path": file, folder or glob pattern, "question_set": name, "model": default, "run":
    default}`` (a git entry is turned into a path inside its clone first: :mod:`thinkprobe.corpus_git`).
    ``models``/``runs`` fix the unit grid (a study's design); when empty, the grid is every model and run
    found. Each question set has its own grid (:attr:`Discovery.grids`): the configured models and runs, or
    when those are empty the models and runs found in that set's inputs; units of a set's grid without a
    record are planned anyway and end as "missing" exclusions, units outside it are "absent" (no unit).
    """
    base = Path(base)
    found = Discovery()
    first_seen: dict[UnitKey, str] = {}
    for entry in inputs:
        root = Path(entry["path"])
        root = root if root.is_absolute() else base / root
        roots = input_roots(root)
        if not roots:
            raise InputError(f"input {entry['path']!r} (question set {entry['question_set']!r}): "
                             + ("no file matches the pattern" if is_pattern(root) else "no such file or folder"))
        for path in walk_inputs(roots):
            if isinstance(path, Exclusion):
                found.problems.append(path)
                continue
            for raw in iter_records(path, max_bytes):
                if not isinstance(raw, Exclusion):
                    raw = adapt(raw, entry)  # entry["adapter"]: ids kept outside the records (corpus_inputs)
                if isinstance(raw, Exclusion):
                    found.problems.append(raw)
                    continue
                key, domain, original = _unit_of(raw, entry)
                if key is None:
                    found.problems.append(Exclusion(raw.ids()["trace_id"], domain, raw.source))
                    continue
                if key in first_seen:
                    found.problems.append(Exclusion(raw.ids()["trace_id"],
                                                    f"duplicate unit {key.path}: already taken from {first_seen[key]}",
                                                    raw.source))
                    continue
                first_seen[key] = raw.source
                found.records[key] = RecordRef(str(path), raw.source, raw.sha256, raw.ids()["trace_id"], domain,
                                               tuple(original.items()))
    found.found_models = sorted({dict(r.ids)["model"] for r in found.records.values()})
    found.found_runs = sorted({dict(r.ids)["run"] for r in found.records.values()}, key=lambda r: (len(r), r))
    found.models = [safe_id(m) for m in models] if models else sorted({k.model for k in found.records})
    found.runs = [safe_id(run_name(r)) for r in runs] if runs else sorted({k.run for k in found.records},
                                                                     key=lambda r: (len(r), r))
    questions: dict[str, set[str]] = {}
    for k in found.records:
        if k.model in found.models and k.run in found.runs:
            questions.setdefault(k.question_set, set()).add(k.question_id)
    found.questions = {q: sorted(ids) for q, ids in sorted(questions.items())}
    for qset in found.questions:
        keys = [k for k in found.records if k.question_set == qset and k.model in found.models
                and k.run in found.runs]
        found.grids[qset] = (list(found.models) if models else sorted({k.model for k in keys}),
                             list(found.runs) if runs else sorted({k.run for k in keys}, key=lambda r: (len(r), r)))
    outside = [k for k in found.records if k.model not in found.models or k.run not in found.runs]
    for k in sorted(outside):
        ref = found.records.pop(k)
        found.problems.append(Exclusion(ref.trace_id, f"unit {k.path} is outside the configured models/runs",
                                        ref.source))
    return found


def record_key(ref: dict[str, Any]) -> tuple[str, str]:
    """How a planned record is found again: its file and its content hash."""
    return ref["path"], ref["sha256"]


def load_records(refs: Iterable[dict[str, Any]], max_bytes: int = 2_000_000
                 ) -> dict[tuple[str, str], RawRecord | InputError]:
    """Re-read the items ``refs`` point to (each file once), keyed by :func:`record_key`.

    Items are matched by content hash, wherever they now are in their file. An item that changed since
    the workflow was planned, or is gone, maps to an :class:`InputError`.
    """
    by_path: dict[str, list[dict[str, Any]]] = {}
    for ref in refs:
        by_path.setdefault(ref["path"], []).append(ref)
    out: dict[tuple[str, str], RawRecord | InputError] = {}
    for path, wanted in by_path.items():
        index: dict[str, RawRecord] = {}
        for raw in iter_records(path, max_bytes):
            if isinstance(raw, RawRecord):
                index.setdefault(raw.sha256, raw)
        for ref in wanted:
            raw = index.get(ref["sha256"])
            out[record_key(ref)] = raw if raw is not None else ChangedInput(
                f"{path}: the record of {ref['trace_id']!r} is gone from its file or changed after the workflow "
                "was planned; the next run imports it again")
    return out


def no_traces_message(plan: Discovery, inputs: Iterable[dict[str, Any]], models: list[str], runs: list[str]) -> str:
    """Why planning found no unit to analyse, naming what the inputs hold when the grid selects none of it."""
    paths = ", ".join(str(e["path"]) for e in inputs)
    if plan.found_models:
        return (f"no trace of the inputs ({paths}) belongs to the configured study grid: "
                f"grid.models = {models or '(all)'}, grid.runs = {runs or '(all)'}; the inputs hold "
                f"models {plan.found_models} and runs {plan.found_runs}")
    unreadable = len(plan.problems)
    return (f"no traces found in the configured inputs: {paths}"
            + (f" ({unreadable} item(s) could not be used; first: {plan.problems[0].reason})" if unreadable else ""))
