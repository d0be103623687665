"""Question records and reading question files: a leaf of :mod:`thinkprobe.generate`.

:class:`Question` (one question of a set), :class:`Skipped` (a record left out, with its file, line and
reason), :class:`QuestionSet`, :class:`QuestionSetError` (a fault of the spec or the file as a whole), and
the readers of JSONL files and JSON arrays that give every record with its line (:func:`file_records`).
:mod:`thinkprobe.generate.questions` (the benchmark loaders), :mod:`thinkprobe.generate.datasets` (hub
snapshots) and :mod:`thinkprobe.generate.prompts` import them from here, so that none of the three needs
another that needs it back (docs/development.md, "Layers and imports").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..tasks._task import BadRecord


@dataclass(frozen=True)
class Question:
    """One question of a question set.

    ``task`` is one of :data:`TASKS`; ``gold`` is the canonical raw gold answer string (None for open
    questions); ``choices`` holds ARC's ``(label, text)`` pairs with letter labels.
    """

    id: str
    question_set: str
    task: str
    text: str
    domain: str | None = None
    gold: str | None = None
    choices: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A record left out of a question set: the file, the 1-based line where the record starts, and why."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass
class QuestionSet:
    """The questions a spec selects, plus every record skipped while reading the file."""

    name: str
    questions: list[Question]
    skipped: list[Skipped] = field(default_factory=list)


class QuestionSetError(ValueError):
    """A fault of the spec or the file as a whole (unknown source, missing file, unreadable JSON array)."""


_BadRecord = BadRecord  # a record a loader cannot read: the tasks' loaders raise it too (thinkprobe.tasks._task)


# --------------------------------------------------------------------------------------------- reading


def _iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object or the exception) for every non-blank line."""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                yield lineno, json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                yield lineno, _BadRecord(f"not valid JSON: {exc}")


def _iter_json_array(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """(line where the element starts, element) for each element of a top-level JSON array.

    Elements are decoded one by one so that a record's line is known; a syntax error inside the array
    ends the file there (its line is reported by the caller as one skipped record).
    """
    dec = json.JSONDecoder()
    i = text.index("[") + 1
    n = len(text)
    line, counted = 1, 0
    while True:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n:
            raise QuestionSetError(f"{path}: JSON array is not closed")
        if text[i] == "]":
            return
        line += text.count("\n", counted, i)
        counted = i
        try:
            obj, i = dec.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            yield line, _BadRecord(f"not valid JSON ({exc}); the rest of the array is unreadable")
            return
        yield line, obj


def _iter_records(path: Path) -> Iterator[tuple[int, Any]]:
    """Records of a JSON array file or a JSONL file, whatever the extension says, with their lines."""
    if not path.is_file():
        raise QuestionSetError(f"question file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise QuestionSetError(f"{path}: not UTF-8 ({exc})") from exc
    if text.lstrip().startswith("["):
        yield from _iter_json_array(path, text)
    else:
        yield from _iter_jsonl(path)


Records = Iterator[tuple[str, int, Any]]  # (file, line or row, the record or the _BadRecord it is)


def file_records(path: Path) -> Records:
    """(file, line, record) for every record of a question file (:func:`_iter_records`)."""
    for line, rec in _iter_records(path):
        yield str(path), line, rec
