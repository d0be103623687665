"""Reading reasoning traces: plain text, JSON and JSONL records, and verbatim ``<think>`` extraction.

A trace is the reasoning of one model on one question in one run. Records may carry the reasoning in a
field of its own (``reasoning``, ``reasoning_content``, ``thinking``), which is taken over the answer;
otherwise the text's ``<think>...</think>`` block is extracted verbatim. A text with ``</think>`` but no
opening tag (chat templates that put ``<think>`` in the prompt) yields everything before the closing tag;
an unclosed ``<think>`` yields everything after it, marked ``truncated``.

Nothing here raises on bad input: every problem becomes an :class:`Exclusion` naming the trace and the
reason, and reading goes on with the next record.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Iterator

from .params import InputParams
from .text import count_words

REASONING_FIELDS = ("reasoning", "reasoning_content", "thinking", "thinking_process", "reasoning_text")
TEXT_FIELDS = ("text", "response", "content", "completion", "output", "full_response")
ID_FIELDS = ("id", "trace_id")
QUESTION_FIELDS = ("question_id", "qid")
TEXT_SUFFIXES = {".txt", ".md", ".text"}
JSON_SUFFIXES = {".json"}
JSONL_SUFFIXES = {".jsonl", ".ndjson"}

_OPEN = re.compile(r"<think>", re.IGNORECASE)
_CLOSE = re.compile(r"</think>", re.IGNORECASE)


@dataclass(frozen=True)
class Trace:
    """One reasoning trace: the reasoning text verbatim plus the identifiers of its unit."""

    trace_id: str
    text: str
    model: str = ""
    question_id: str = ""
    run: str = ""
    domain: str = ""
    source: str = ""
    truncated: bool = False
    offset: int = 0  # character offset of ``text`` inside the source document's text

    def ids(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "model": self.model, "question_id": self.question_id,
                "run": self.run, "domain": self.domain}


@dataclass(frozen=True)
class Exclusion:
    """A trace (or an input item) left out of the analysis, and why."""

    trace_id: str
    reason: str
    source: str = ""
    stage: str = "input"

    def as_row(self) -> dict[str, str]:
        return {"trace_id": self.trace_id, "reason": self.reason, "source": self.source, "stage": self.stage}


@dataclass(frozen=True)
class Extracted:
    text: str | None
    offset: int
    truncated: bool
    how: str  # "think", "close-only", "unclosed", "whole", "none"


def extract_reasoning(text: str, require_think: bool = True) -> Extracted:
    """Return the reasoning part of ``text``: the first ``<think>`` block, verbatim.

    >>> extract_reasoning("<think>a b</think>answer").text
    'a b'
    >>> extract_reasoning("a b</think>answer").how
    'close-only'
    >>> extract_reasoning("<think>a b").truncated
    True
    """
    m_open = _OPEN.search(text)
    if m_open:
        m_close = _CLOSE.search(text, m_open.end())
        if m_close:
            return Extracted(text[m_open.end():m_close.start()], m_open.end(), False, "think")
        return Extracted(text[m_open.end():], m_open.end(), True, "unclosed")
    m_close = _CLOSE.search(text)
    if m_close:
        return Extracted(text[:m_close.start()], 0, False, "close-only")
    if require_think:
        return Extracted(None, 0, False, "none")
    return Extracted(text, 0, False, "whole")


def safe_id(raw: str) -> str:
    """A trace id usable as a file name: letters, digits, ``.``, ``_`` and ``-`` only."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", str(raw)).strip("._")
    return cleaned[:150] or "trace"


def _first(record: dict[str, Any], names: Iterable[str]) -> Any:
    for name in names:
        value = record.get(name)
        if value not in (None, ""):
            return value
    return None


def trace_from_record(record: Any, default_id: str, source: str, require_think: bool = True) -> Trace | Exclusion:
    """Turn one JSON record into a :class:`Trace`, or an :class:`Exclusion` saying what is wrong with it."""
    if not isinstance(record, dict):
        return Exclusion(safe_id(default_id), f"record is a {type(record).__name__}, not a JSON object", source)
    ids = RawRecord(default_id, source, record, None, "").ids()
    trace_id = ids.pop("trace_id")
    reasoning = _first(record, REASONING_FIELDS)
    if reasoning is not None:
        if not isinstance(reasoning, str):
            return Exclusion(trace_id, f"reasoning field is a {type(reasoning).__name__}, not a string", source)
        ext = extract_reasoning(reasoning, require_think=False)
        return Trace(trace_id, ext.text or "", source=source, truncated=ext.truncated, offset=ext.offset, **ids)
    text = _first(record, TEXT_FIELDS)
    if text is None:
        return Exclusion(trace_id, "no reasoning: the record has none of the fields "
                         f"{list(REASONING_FIELDS) + list(TEXT_FIELDS)}", source)
    if not isinstance(text, str):
        return Exclusion(trace_id, f"text field is a {type(text).__name__}, not a string", source)
    return _trace_from_text(text, trace_id, source, require_think, ids)


def _trace_from_text(text: str, trace_id: str, source: str, require_think: bool, meta: dict[str, str]) -> Trace | Exclusion:
    if not text.strip():
        return Exclusion(trace_id, "empty input: the text is empty or whitespace only", source)
    ext = extract_reasoning(text, require_think)
    if ext.text is None:
        return Exclusion(trace_id, "no reasoning: no <think> block and no reasoning field "
                         "(analyse the whole text with require_think: false / --whole-text)", source)
    return Trace(trace_id, ext.text, source=source, truncated=ext.truncated, offset=ext.offset, **meta)


def _decode(data: bytes, trace_id: str, source: str) -> str | Exclusion:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Exclusion(trace_id, f"invalid UTF-8 at byte {exc.start}: {exc.reason}", source)


@dataclass(frozen=True)
class RawRecord:
    """One input item before reasoning extraction: a JSON record, or the text of a plain-text file."""

    default_id: str
    source: str  # file path plus locator: "path:LINE" (JSONL), "path#INDEX" (JSON list) or "path"
    record: dict[str, Any] | None
    text: str | None
    sha256: str  # of the item's bytes (JSONL line, canonical JSON of a list item, or the file)

    def ids(self) -> dict[str, str]:
        """``trace_id``, ``model``, ``question_id``, ``run``, ``domain`` as the record states them (may be empty)."""
        r = self.record if isinstance(self.record, dict) else {}
        rid, qid = _first(r, ID_FIELDS), _first(r, QUESTION_FIELDS)
        return {
            "trace_id": safe_id(rid if rid is not None else self.default_id),
            "model": str(r.get("model") or ""),
            "question_id": str(qid) if qid is not None else "",
            "run": str(r.get("run") if r.get("run") is not None else ""),
            "domain": str(r.get("domain") or r.get("category") or ""),
        }


def to_trace(raw: RawRecord, require_think: bool = True) -> Trace | Exclusion:
    """Extract the reasoning of one raw input item."""
    if raw.record is not None or not isinstance(raw.text, str):
        return trace_from_record(raw.record if raw.record is not None else raw.text, raw.default_id, raw.source,
                                 require_think)
    return _trace_from_text(raw.text, raw.default_id, raw.source, require_think, {})


def iter_records(path: str | os.PathLike, max_bytes: int = InputParams.max_trace_bytes) -> Iterator[RawRecord | Exclusion]:
    """Yield the raw items of one file: plain text (one item), JSON (a record or a list) or JSONL."""
    path = Path(path)
    stem = safe_id(path.stem)
    src = str(path)
    suffix = path.suffix.lower()
    try:
        size = path.stat().st_size
    except OSError as exc:
        yield Exclusion(stem, f"cannot read file: {exc.strerror or exc}", src)
        return
    if suffix not in JSON_SUFFIXES | JSONL_SUFFIXES and size > max_bytes:
        yield Exclusion(stem, f"too large: {size:,} bytes (limit {max_bytes:,}; raise input.max_trace_bytes)", src)
        return
    try:
        data = path.read_bytes()
    except OSError as exc:
        yield Exclusion(stem, f"cannot read file: {exc.strerror or exc}", src)
        return
    if suffix in JSONL_SUFFIXES:
        yield from _jsonl_records(data, stem, src)
        return
    text = _decode(data, stem, src)
    if isinstance(text, Exclusion):
        yield text
        return
    if suffix in JSON_SUFFIXES:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            yield Exclusion(stem, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", src)
            return
        if isinstance(obj, list):
            for i, record in enumerate(obj, 1):
                canon = json.dumps(record, sort_keys=True, ensure_ascii=False).encode()
                yield RawRecord(f"{stem}-{i}", f"{src}#{i}", record if isinstance(record, dict) else None,
                                None if isinstance(record, dict) else record, hashlib.sha256(canon).hexdigest())
        else:
            yield RawRecord(stem, src, obj if isinstance(obj, dict) else None, None if isinstance(obj, dict) else obj,
                            hashlib.sha256(data).hexdigest())
        return
    yield RawRecord(stem, src, None, text, hashlib.sha256(data).hexdigest())


def _jsonl_records(data: bytes, stem: str, src: str) -> Iterator[RawRecord | Exclusion]:
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        default_id = f"{stem}-{lineno}"
        where = f"{src}:{lineno}"
        line = _decode(raw, default_id, where)
        if isinstance(line, Exclusion):
            yield line
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            yield Exclusion(default_id, f"invalid JSON on line {lineno}: {exc.msg}", where)
            continue
        yield RawRecord(default_id, where, record if isinstance(record, dict) else None,
                        None if isinstance(record, dict) else record, hashlib.sha256(raw).hexdigest())


def read_path(path: str | os.PathLike, require_think: bool = True,
              max_bytes: int = InputParams.max_trace_bytes) -> Iterator[Trace | Exclusion]:
    """Yield the traces of one file: plain text (one trace), JSON (a record or a list) or JSONL."""
    for item in iter_records(path, max_bytes):
        yield item if isinstance(item, Exclusion) else to_trace(item, require_think)


def iter_files(paths: Iterable[str | os.PathLike]) -> Iterator[Path]:
    """Expand directories (recursively, sorted) into trace files; files are passed through as given."""
    suffixes = TEXT_SUFFIXES | JSON_SUFFIXES | JSONL_SUFFIXES
    for p in paths:
        p = Path(p)
        if p.is_dir():
            for child in sorted(p.rglob("*")):
                if child.is_file() and child.suffix.lower() in suffixes and not child.name.startswith("."):
                    yield child
        else:
            yield p


def read_traces(paths: Iterable[str | os.PathLike], require_think: bool = True,
                max_bytes: int = InputParams.max_trace_bytes) -> Iterator[Trace | Exclusion]:
    """Yield every trace under ``paths`` (files, directories, JSONL), with ids made unique."""
    seen: dict[str, int] = {}
    for path in iter_files(paths):
        if not path.exists():
            yield Exclusion(safe_id(path.stem), "no such file", str(path))
            continue
        for item in read_path(path, require_think, max_bytes):
            n = seen.get(item.trace_id, 0)
            seen[item.trace_id] = n + 1
            if n:
                item = replace(item, trace_id=f"{item.trace_id}~{n + 1}")
            yield item


def validate_trace(trace: Trace, params: InputParams) -> str | None:
    """The reason to exclude ``trace`` before segmentation, or None when it can be analysed."""
    size = len(trace.text.encode("utf-8"))
    if size > params.max_trace_bytes:
        return f"too large: {size:,} bytes of reasoning (limit {params.max_trace_bytes:,}; raise input.max_trace_bytes)"
    if not trace.text.strip():
        return "empty reasoning: the reasoning text is empty or whitespace only"
    words = count_words(trace.text)
    if words < params.min_words:
        return f"too short: {words} words of reasoning (minimum {params.min_words}; input.min_words)"
    return None
