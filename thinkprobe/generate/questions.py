"""Question sets: thinkprobe's 200 open-ended questions, benchmark loaders with gold answers, prompt variants.

A question set is chosen in config by a *spec* (a mapping), read by :func:`load_question_set`::

    {name: open200, source: builtin}                                  # the packaged 200 open-ended questions
    {name: mine, source: open, path: my_questions.jsonl}              # your own, same schema as the builtin file
    {name: gsm8k, source: gsm8k, path: .../gsm8k/test.jsonl, limit: 20, offset: 0}
    {name: svamp, source: svamp, path: .../svamp/SVAMP.json}
    {name: math, source: math, path: .../math/test.jsonl}              # Algebra subset (``math_type``, default "Algebra")
    {name: arc-c, source: arc, path: .../arc/test.jsonl, ids: [Mercury_7175875]}
    {name: gsm8k, source: gsm8k, hub_id: openai/gsm8k, config: main, split: test}   # a dataset by hub id

Keys: ``name`` (the question set's name in the unit paths; defaults to ``source``), ``source``
(:func:`source_names`), ``path`` (required for every source but ``builtin``; relative to ``base``), ``offset`` and
``limit`` (a window over the file's order, applied after ``ids``), ``ids`` (keep only these question ids, in
file order; a bare source id such as ``chal-1`` also matches ``svamp-chal-1``), ``math_type`` (``source:
math`` only; ``null`` keeps every type). ``description`` and ``prompt_variant`` are accepted and left to the
caller; any other key is an error, so that a typo such as ``lmit: 20`` cannot silently select everything.

Instead of ``path``, a set may name a Hugging Face dataset: ``hub_id`` (``org/name``), ``revision`` (a branch,
tag or commit; default ``main``), ``config`` (or its alias ``subset``: the dataset's configuration, e.g.
GSM8K's ``main``, MATH's ``algebra``) and ``split`` (default ``test``; a list reads several splits in
order). The snapshot is read from the hub cache (``resources.model_cache``) with pyarrow, never from the
network: rule ``fetch_dataset`` fills the cache (:mod:`thinkprobe.generate.datasets`). Its Parquet, JSONL or
JSON records go through the same loaders as a file's, with the hub's field layouts too (ARC's ``choices``
as ``{text: [...], label: [...]}``).

Gold answers and question ids (the contract the answer parser relies on: the canonical raw gold string; ids
stable: the same file gives the same ids on every load, whatever ``limit``/``offset`` select) are the task's:
each task file of :mod:`thinkprobe.tasks` holds its records' loader (``Task.read``) and says, in its docstring,
which fields it reads, how the gold is read and how ids are made (``thinkprobe/tasks/gsm8k.py``, ``svamp.py``,
``math.py``, ``arc.py``, ``choice.py``, ``open.py``). A source is a task's name (its loader), or ``builtin``:
the ``open`` loader on the packaged file. A spec key that a task declares (``Task.options``, e.g. MATH's
``math_type``) is read by that task's loader only.

Bad records never stop a load: a record that is not JSON, not an object, or lacks a field (a GSM8K answer
without ``####``, a MATH solution without ``\\boxed``, an ARC gold letter that is none of its choices, a choice
list with a repeated or missing letter) is
skipped with a :class:`Skipped` entry naming the file, the line (a Parquet file's row) and the reason (logged
as a warning; the full list is returned by :func:`read_question_set`, and the workflow puts each in the
exclusions table, stage ``questions``). A missing file, an unknown source, a malformed spec or a file none of
whose records has the fields its benchmark needs is a :class:`QuestionSetError`: that is a fault of the
configuration, not of one record.

Prompt variants (:data:`~thinkprobe.generate.prompts.PROMPT_VARIANTS`, chosen by name in config) live in
:mod:`thinkprobe.generate.prompts` (re-exported here); answer formats shared with the parser live in
:mod:`thinkprobe.answers`.
"""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from .. import tasks
from ..answers import last_boxed  # noqa: F401 - the gold reader of MATH, re-exported
from ..tasks.gsm8k import gsm8k_gold  # noqa: F401 - re-exported
from ..tasks.svamp import number_string  # noqa: F401 - re-exported
from .datasets import hub_records
from .prompts import ANSWER_FORMATS, PROMPT_VARIANTS, format_prompt, question_text  # noqa: F401 - re-exported
from .records import (Question, QuestionSet, QuestionSetError, Records, Skipped, _BadRecord,  # noqa: F401 - re-exported
                      _iter_records, file_records)

log = logging.getLogger("thinkprobe")

TASKS = tuple(tasks.names())  # every question's task: the registry's (thinkprobe.tasks)
BUILTIN = "builtin"  # the open task's loader on the packaged file
BUILTIN_FILE = "open200.jsonl"
_SPEC_KEYS = {"name", "source", "path", "limit", "offset", "ids", "description", "prompt_variant",
              "hub_id", "revision", "config", "subset", "split",
              "dataset_cache", "locked_commit"}  # the last two: filled in by datasets.prepare, never by a user
#: the keys that name a hub dataset's data (rule fetch_dataset; not limit/offset/ids, which select from it)
_DATASET_KEYS = ("source", "hub_id", "revision", "config", "subset", "split")


def source_names() -> list[str]:
    """Every question source: ``builtin`` and each task (the schema's enum of ``question_sets.<name>.source``)."""
    return [BUILTIN, *tasks.names()]



def task_options() -> dict[str, object]:
    """Every spec key a task declares (``Task.options``) with its default."""
    return {k: v for name in tasks.names() for k, v in tasks.get(name).options.items()}


def dataset_keys() -> tuple[str, ...]:
    """The spec keys that name a hub dataset's data: the fixed ones and every task option (rule
    ``fetch_dataset``'s params: changing one fetches again)."""
    return _DATASET_KEYS + tuple(task_options())


# -------------------------------------------------------------------------------------------- loaders


def _load_with(records: Records, build: Callable[[dict], Question | None]
               ) -> Iterator[tuple[str, int, Question | _BadRecord]]:
    """Every record through ``build``: a record that is not a JSON object, or that ``build`` rejects with
    :class:`_BadRecord`, is yielded as that error (with its file and line); ``None`` filters it out."""
    for where, line, rec in records:
        try:
            if isinstance(rec, _BadRecord):
                raise rec
            if not isinstance(rec, dict):
                raise _BadRecord(f"record is a {type(rec).__name__}, not an object")
            question = build(rec)
        except _BadRecord as exc:
            yield where, line, exc
            continue
        if question is not None:
            yield where, line, question


def _load_task(records: Records, name: str, task: "tasks.Task", options: Mapping[str, Any]
               ) -> Iterator[tuple[str, int, Question | _BadRecord]]:
    """The records through the task's own loader (``Task.read``), each a :class:`Question` of the task."""
    read = task.read(options)

    def build(rec: dict) -> Question | None:
        item = read(rec)
        if item is None:
            return None
        return Question(item.id, name, task.name, item.text, item.domain, item.gold, tuple(item.choices))

    return _load_with(records, build)


def builtin_path() -> Path:
    """Path of the packaged 200 open-ended questions (JSONL: ``id``, ``domain``, ``text``)."""
    return Path(str(resources.files("thinkprobe.generate") / "data" / BUILTIN_FILE))


def _check_int(spec: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = spec.get(key, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise QuestionSetError(f"question set {spec.get('name')!r}: {key} = {value!r} must be an integer >= 0")
    return value


def read_question_set(spec: Mapping[str, Any], base: Path = Path(".")) -> QuestionSet:
    """Load the questions a spec selects, with every skipped record; see the module docstring for specs.

    Raises
    ------
    QuestionSetError
        Unknown source or key, missing ``path`` or file, bad ``limit``/``offset``, ``ids`` not in the file,
        a file none of whose records has the fields its benchmark needs, two records with the same id; for
        a hub dataset (:mod:`thinkprobe.generate.datasets`), a config or split the snapshot lacks, or a
        dataset not in the cache (:class:`~thinkprobe.generate.datasets.DatasetPending`).
    """
    if not isinstance(spec, Mapping):
        raise QuestionSetError(f"a question set spec must be a mapping, got {type(spec).__name__}")
    source = spec.get("source", BUILTIN)
    if source not in source_names():  # the registry now: a task registered after import is a source too
        raise QuestionSetError(f"question set {spec.get('name')!r}: unknown source {source!r} "
                               f"(one of {', '.join(source_names())})")
    task = tasks.get("open" if source == BUILTIN else source)
    unknown = set(spec) - _SPEC_KEYS - set(task_options())
    if unknown:
        raise QuestionSetError(f"question set {spec.get('name')!r}: unknown key(s) {sorted(unknown)}")
    name = str(spec.get("name") or ("open200" if source == BUILTIN else source))
    offset = _check_int(spec, "offset", 0) or 0
    limit = _check_int(spec, "limit", None)
    if spec.get("hub_id"):
        if spec.get("path"):
            raise QuestionSetError(f"question set {name!r}: give either path or hub_id, not both "
                                   f"(question_sets.{name})")
        records, where = hub_records(name, spec)
    else:
        if source == BUILTIN:
            path = Path(spec["path"]) if spec.get("path") else builtin_path()
        else:
            if not spec.get("path"):
                raise QuestionSetError(f"question set {name!r}: source {source!r} needs a 'path' (or a 'hub_id')")
            path = Path(spec["path"])
        if not path.is_absolute() and not (source == BUILTIN and not spec.get("path")):
            path = Path(base) / path
        records, where = file_records(path), str(path)

    items = _load_task(records, name, task, {k: spec.get(k, v) for k, v in task.options.items()})

    questions: list[Question] = []
    skipped: list[Skipped] = []
    seen: dict[str, tuple[str, int]] = {}
    for file, line, item in items:
        if isinstance(item, _BadRecord):
            skipped.append(Skipped(file, line, str(item)))
            continue
        if item.id in seen:
            first = seen[item.id]
            at = f"line {first[1]}" if first[0] == file else f"{first[0]}:{first[1]}"
            skipped.append(Skipped(file, line, f"duplicate id {item.id!r} (first at {at})"))
            continue
        seen[item.id] = (file, line)
        questions.append(item)
    for s in skipped:
        log.warning("question set %s: skipped %s", name, s)
    if not questions and skipped:
        raise QuestionSetError(f"question set {name!r}: none of the {len(skipped)} records of {where} has what "
                               f"source {source!r} needs (first: {skipped[0]}); is it the right source, file or "
                               "dataset?")

    wanted = spec.get("ids")
    if wanted is not None:
        if isinstance(wanted, str) or not isinstance(wanted, (list, tuple)):
            raise QuestionSetError(f"question set {name!r}: ids must be a list")
        by_id = {q.id: q for q in questions}
        prefix = task.id_prefix
        keep: set[str] = set()
        missing = []
        for w in wanted:
            w = str(w)
            if w in by_id:
                keep.add(w)
            elif prefix + w in by_id:
                keep.add(prefix + w)
            else:
                missing.append(w)
        if missing:
            raise QuestionSetError(f"question set {name!r}: ids not found in {where}: {missing[:10]}"
                                   + (f" and {len(missing) - 10} more" if len(missing) > 10 else ""))
        questions = [q for q in questions if q.id in keep]
    questions = questions[offset:]
    if limit is not None:
        questions = questions[:limit]
    return QuestionSet(name, questions, skipped)


def load_question_set(spec: Mapping[str, Any], base: Path = Path(".")) -> list[Question]:
    """The questions a config spec selects (skipped records are logged; :func:`read_question_set` returns them).

    >>> qs = load_question_set({"name": "open200", "source": "builtin", "limit": 2})
    >>> [(q.id, q.task, q.domain) for q in qs]
    [('ethical-dilemmas-01', 'open', 'Ethical Dilemmas'), ('ethical-dilemmas-02', 'open', 'Ethical Dilemmas')]
    """
    return read_question_set(spec, base).questions

