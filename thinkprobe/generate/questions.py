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
(:data:`SOURCES`), ``path`` (required for every source but ``builtin``; relative to ``base``), ``offset`` and
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

Gold answers (the contract the answer parser relies on: the canonical raw gold string)
    * GSM8K (``test.jsonl``): the text after the last ``####`` of ``answer``, stripped, commas removed.
    * SVAMP (``SVAMP.json``, a JSON array): text = ``Body`` + " " + ``Question``; gold = ``Answer`` written as
      a number without a trailing ``.0`` (``51.0`` -> ``"51"``, ``0.5`` -> ``"0.5"``).
    * MATH (the harness's ``test.jsonl`` with ``type``, or ``DERIVED_algebra_test.jsonl``): the records whose
      ``type`` is ``math_type`` (default ``"Algebra"``: 1,187 of the 5,000 test problems); gold = the content
      of the LAST ``\\boxed{...}`` (or ``\\fbox{...}``, or ``\\boxed 5``) of ``solution``, nested braces
      balanced.
    * ARC: the skywork format (a JSON array of ``{id, question, answer, A..E, label}``) and the AllenAI
      schema (JSONL of ``{id, question: {stem, choices: [{text, label}]}, answerKey}``) and the hub's
      (``allenai/ai2_arc``: ``{id, question, choices: {text: [...], label: [...]}, answerKey}``). Digit labels 1-5
      (about 2% of ARC items) are mapped to A-E, in the choices and in the gold letter alike. The choices are
      kept as ``((label, text), ...)``.

Question ids (stable: the same file gives the same ids on every load, whatever ``limit``/``offset`` select)
    * builtin / open: the file's ``id`` (``<domain-slug>-NN`` for the builtin set).
    * SVAMP: ``svamp-<ID>`` (the dataset's own id, e.g. ``svamp-chal-1``); ARC: ``arc-<id>`` (ARC's own id).
    * MATH: ``math-<idx>`` from the harness's ``idx`` field (its index into the fixed 5,000-problem MATH
      test split; the derived algebra file keeps the same ``idx``, so both files give the same ids); a record
      without ``idx`` (the hub's copies of MATH have none) gets ``math-h<content hash>``.
    * GSM8K has no ids of its own: ``gsm8k-<first 10 hex of sha256(question)>``, a content hash, so an id
      survives reordering or a new version of the file; two records with the same question text would be
      disambiguated by ``-2``, ``-3`` in file order (none in the public test split).

Bad records never stop a load: a record that is not JSON, not an object, or lacks a field (a GSM8K answer
without ``####``, a MATH solution without ``\\boxed``, an ARC gold letter that is none of its choices) is
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

import hashlib
import logging
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..answers import digit_key, last_boxed  # noqa: F401 - last_boxed: the gold reader, re-exported
from .datasets import hub_records
from .prompts import ANSWER_FORMATS, PROMPT_VARIANTS, format_prompt, question_text  # noqa: F401 - re-exported
from .records import (Question, QuestionSet, QuestionSetError, Records, Skipped, _BadRecord,  # noqa: F401 - re-exported
                      _iter_records, file_records)

log = logging.getLogger("thinkprobe")

from ..tasks import names as _task_names

TASKS = tuple(_task_names())  # every question's task: the registry's (thinkprobe.tasks)
SOURCES = ("builtin", "open", "gsm8k", "svamp", "math", "arc", "choice")  # choice: any lettered set, ARC's fields
BUILTIN_FILE = "open200.jsonl"
_SPEC_KEYS = {"name", "source", "path", "limit", "offset", "ids", "math_type", "description", "prompt_variant",
              "hub_id", "revision", "config", "subset", "split",
              "dataset_cache", "locked_commit"}  # the last two: filled in by datasets.prepare, never by a user


def _field(rec: Mapping[str, Any], key: str, kind: type = str) -> Any:
    if key not in rec:
        raise _BadRecord(f"missing field {key!r}")
    value = rec[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _BadRecord(f"field {key!r} is {type(value).__name__}, expected {kind.__name__}")
    if kind is str and not value.strip():
        raise _BadRecord(f"field {key!r} is empty")
    return value


# ------------------------------------------------------------------------------------------ gold answers


def gsm8k_gold(answer: str) -> str:
    """The number after the last ``####`` of a GSM8K answer, stripped, with commas removed.

    >>> gsm8k_gold("She makes 9 * 2 = $18.\\n#### 1,018")
    '1018'
    """
    if "####" not in answer:
        raise _BadRecord("answer has no '####' line")
    gold = answer.rsplit("####", 1)[1].strip().replace(",", "")
    if not gold:
        raise _BadRecord("nothing after '####'")
    return gold


def number_string(value: float | int | str) -> str:
    """A number written without a trailing ``.0`` (SVAMP's ``Answer``).

    >>> number_string(51.0), number_string(0.5), number_string("12.0"), number_string(-3)
    ('51', '0.5', '12', '-3')
    """
    if isinstance(value, bool):
        raise _BadRecord(f"answer {value!r} is not a number")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise _BadRecord(f"answer {value!r} is not a number") from None
    if x != x or x in (float("inf"), float("-inf")):
        raise _BadRecord(f"answer {value!r} is not a finite number")
    if x.is_integer():
        return str(int(x))
    return repr(x)


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


def _load_open(records: Records, name: str) -> Iterator[tuple[str, int, Question | _BadRecord]]:
    def build(rec: dict) -> Question:
        qid = _field(rec, "id")
        domain = rec.get("domain")
        if domain is not None and not isinstance(domain, str):
            raise _BadRecord("field 'domain' is not a string")
        return Question(qid, name, "open", _field(rec, "text"), domain or None)

    return _load_with(records, build)


def _load_gsm8k(records: Records, name: str) -> Iterator[tuple[str, int, Question | _BadRecord]]:
    seen: dict[str, int] = {}

    def build(rec: dict) -> Question:
        text = _field(rec, "question")
        gold = gsm8k_gold(_field(rec, "answer"))
        base = "gsm8k-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
        seen[base] = seen.get(base, 0) + 1
        qid = base if seen[base] == 1 else f"{base}-{seen[base]}"
        return Question(qid, name, "gsm8k", text.strip(), gold=gold)

    return _load_with(records, build)


def _load_svamp(records: Records, name: str) -> Iterator[tuple[str, int, Question | _BadRecord]]:
    def build(rec: dict) -> Question:
        sid = rec.get("ID")
        if not isinstance(sid, (str, int)) or isinstance(sid, bool) or str(sid).strip() == "":
            raise _BadRecord("missing field 'ID'")
        body = _field(rec, "Body").strip()
        question = _field(rec, "Question").strip()
        if "Answer" not in rec:
            raise _BadRecord("missing field 'Answer'")
        gold = number_string(rec["Answer"])
        if body and body[-1] not in ".!?,;:":
            body += "."
        return Question(f"svamp-{sid}", name, "svamp", f"{body} {question}".strip(), gold=gold)

    return _load_with(records, build)


def _load_math(records: Records, name: str, math_type: str | None) -> Iterator[tuple[str, int, Question | _BadRecord]]:
    def build(rec: dict) -> Question | None:
        if math_type is not None and rec.get("type", rec.get("subject")) != math_type:
            return None
        problem = _field(rec, "problem")
        gold = last_boxed(_field(rec, "solution"))
        if gold is None or not gold.strip():
            raise _BadRecord("solution has no \\boxed{...} answer")
        idx = rec.get("idx")
        if isinstance(idx, int) and not isinstance(idx, bool):
            qid = f"math-{idx}"
        else:
            qid = "math-h" + hashlib.sha256(problem.encode("utf-8")).hexdigest()[:10]
        return Question(qid, name, "math", problem.strip(), gold=gold.strip())

    return _load_with(records, build)


def _arc_label(label: Any) -> str:
    return digit_key(str(label))


def _arc_record(rec: Mapping[str, Any]) -> tuple[str, str, str, tuple[tuple[str, str], ...]]:
    """(source id, stem, gold letter, choices) from a skywork, AllenAI or hub (ai2_arc) ARC record."""
    rid = _field(rec, "id")
    q = rec.get("question")
    if isinstance(q, dict):
        stem = _field(q, "stem")
        raw = q.get("choices")
        if not isinstance(raw, list) or not raw:
            raise _BadRecord("question has no 'choices' list")
        choices = []
        for c in raw:
            if not isinstance(c, dict) or "label" not in c or not isinstance(c.get("text"), str):
                raise _BadRecord("a choice lacks 'label' or 'text'")
            choices.append((_arc_label(c["label"]), c["text"].strip()))
        key = rec.get("answerKey")
    elif isinstance(rec.get("choices"), dict):  # the hub's ai2_arc: choices = {text: [...], label: [...]}
        stem = _field(rec, "question")
        texts, labels = rec["choices"].get("text"), rec["choices"].get("label")
        if not isinstance(texts, list) or not isinstance(labels, list) or not texts or len(texts) != len(labels):
            raise _BadRecord("'choices' needs lists 'text' and 'label' of the same length")
        if not all(isinstance(t, str) for t in texts):
            raise _BadRecord("a choice text is not a string")
        choices = [(_arc_label(lab), t.strip()) for lab, t in zip(labels, texts)]
        key = rec.get("answerKey")
    else:
        stem = _field(rec, "question")
        labels = rec.get("label")
        if not isinstance(labels, list) or not labels:
            raise _BadRecord("missing 'label' list of choice keys")
        choices = []
        for lab in labels:
            text = rec.get(str(lab))
            if not isinstance(text, str):
                raise _BadRecord(f"choice {lab!r} has no text")
            choices.append((_arc_label(lab), text.strip()))
        key = rec.get("answer")
    if not isinstance(key, (str, int)) or isinstance(key, bool) or str(key).strip() == "":
        raise _BadRecord("missing gold answer key")
    gold = _arc_label(key)
    letters = [lab for lab, _ in choices]
    if len(set(letters)) != len(letters):
        raise _BadRecord(f"duplicate choice labels {letters}")
    if letters != list("ABCDEFGHIJ"[:len(letters)]):
        raise _BadRecord(f"choice labels {letters} are not A, B, C, ... in order (a letter is missing or unknown)")
    if gold not in letters:
        raise _BadRecord(f"gold {key!r} is none of the choices {letters}")
    return rid, stem.strip(), gold, tuple(choices)


def _load_arc(records: Records, name: str, task: str = "arc") -> Iterator[tuple[str, int, Question | _BadRecord]]:
    """ARC records, or any lettered multiple-choice set in ARC's fields (``task`` ``choice``)."""
    def build(rec: dict) -> Question:
        rid, stem, gold, choices = _arc_record(rec)
        return Question(f"{task}-{rid}", name, task, stem, gold=gold, choices=choices)

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
    source = spec.get("source", "builtin")
    if source not in SOURCES:
        raise QuestionSetError(f"question set {spec.get('name')!r}: unknown source {source!r} "
                               f"(one of {', '.join(SOURCES)})")
    unknown = set(spec) - _SPEC_KEYS
    if unknown:
        raise QuestionSetError(f"question set {spec.get('name')!r}: unknown key(s) {sorted(unknown)}")
    name = str(spec.get("name") or ("open200" if source == "builtin" else source))
    offset = _check_int(spec, "offset", 0) or 0
    limit = _check_int(spec, "limit", None)
    if spec.get("hub_id"):
        if spec.get("path"):
            raise QuestionSetError(f"question set {name!r}: give either path or hub_id, not both "
                                   f"(question_sets.{name})")
        records, where = hub_records(name, spec)
    else:
        if source == "builtin":
            path = Path(spec["path"]) if spec.get("path") else builtin_path()
        else:
            if not spec.get("path"):
                raise QuestionSetError(f"question set {name!r}: source {source!r} needs a 'path' (or a 'hub_id')")
            path = Path(spec["path"])
        if not path.is_absolute() and not (source == "builtin" and not spec.get("path")):
            path = Path(base) / path
        records, where = file_records(path), str(path)

    if source in ("builtin", "open"):
        items = _load_open(records, name)
    elif source == "gsm8k":
        items = _load_gsm8k(records, name)
    elif source == "svamp":
        items = _load_svamp(records, name)
    elif source == "math":
        items = _load_math(records, name, spec.get("math_type", "Algebra"))
    else:
        items = _load_arc(records, name, source)

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
        prefix = {"gsm8k": "gsm8k-", "svamp": "svamp-", "math": "math-", "arc": "arc-", "choice": "choice-"}.get(source, "")
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

