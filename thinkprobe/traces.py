"""Reading reasoning traces: plain text, JSON and JSONL records, and verbatim ``<think>`` extraction.

A trace is the reasoning of one model on one question in one run. Records may carry the reasoning in a
field of its own (``reasoning``, ``reasoning_content``, ``thinking``), which is taken over the answer;
otherwise the text's ``<think>...</think>`` block is extracted verbatim. A text with ``</think>`` but no
opening tag (chat templates that put ``<think>`` in the prompt) yields everything before the closing tag;
an unclosed ``<think>`` yields everything after it, marked ``truncated``.

Nothing here raises on bad input: every problem becomes an :class:`Exclusion` naming the trace and the
reason, and reading goes on with the next record. That includes what model outputs routinely contain: a
lone UTF-16 surrogate escape (``"\ud800"``, what a truncated emoji becomes in JSON; the record is excluded,
not repaired, since its text cannot be written as UTF-8), JSON nested beyond the parser's depth or integers
beyond Python's digit limit (excluded with their line), a UTF-8 byte-order mark (dropped), and paths that
are not regular files (a FIFO is never opened; hidden files, dangling links and other non-regular entries
met while walking a folder each get an exclusion row instead of being skipped silently).

Ids become file names through :func:`safe_id`, injectively: an id that is already file-safe is kept, any
other gets a readable ASCII slug plus a hash of the original id, so two different ids never share a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import unicodedata
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

_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
_LINE_END = re.compile(rb"\r\n|\r|\n")  # JSONL lines end in LF, CRLF or a lone CR (JSON strings hold neither raw)
_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
BOM = b"\xef\xbb\xbf"
SAFE_ID_MAX = 120


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
    record_id: str = ""  # the id as the input states it (``trace_id`` is its file-safe form)
    dropped_blocks: int = 0  # later <think> blocks of the source that are not in ``text`` (extract_reasoning)

    def ids(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "model": self.model, "question_id": self.question_id,
                "run": self.run, "domain": self.domain, "record_id": self.record_id or self.trace_id}


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
    dropped: int = 0  # later think blocks not taken (see extract_reasoning)


def extract_reasoning(text: str, require_think: bool = True) -> Extracted:
    """Return the reasoning part of ``text``: the first think block, verbatim.

    Tags are read in order (case-insensitive). When the first tag is ``</think>`` (the chat template opened
    the block), the reasoning is what precedes it. When it is ``<think>``, the block runs to the ``</think>``
    that closes it, nesting counted: ``<think>a <think>b</think> c</think>`` yields ``a <think>b</think> c``
    (the outermost block, inner tags kept verbatim); with no closing tag it runs to the end and is
    ``truncated``. Later blocks are not taken (joining them would break the character offsets): they are
    counted in ``dropped`` so that the trace is marked, never dropped silently.

    >>> extract_reasoning("<think>a b</think>answer").text
    'a b'
    >>> extract_reasoning("a b</think>answer").how
    'close-only'
    >>> extract_reasoning("<think>a b").truncated
    True
    >>> extract_reasoning("<think>a</think> so <think>b</think>").dropped
    1
    """
    tags = list(_TAG.finditer(text))
    if not tags:
        return Extracted(None, 0, False, "none") if require_think else Extracted(text, 0, False, "whole")
    first = tags[0]
    if first.group(1):  # a closing tag first
        return Extracted(text[:first.start()], 0, False, "close-only", _later_blocks(tags[1:]))
    depth = 0
    for k, tag in enumerate(tags):
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            return Extracted(text[first.end():tag.start()], first.end(), False, "think", _later_blocks(tags[k + 1:]))
    return Extracted(text[first.end():], first.end(), True, "unclosed")


def _later_blocks(tags: list[re.Match]) -> int:
    """Top-level ``<think>`` blocks among the tags after the reasoning (stray closing tags ignored)."""
    depth = blocks = 0
    for tag in tags:
        if tag.group(1):
            depth = max(0, depth - 1)
        else:
            blocks += depth == 0
            depth += 1
    return blocks


def run_name(value: Any) -> str:
    """A run as a name: a number with no fractional part is that integer (``1.0`` and ``1`` are run ``1``,
    as YAML and JSON writers turn one into the other); anything else is its text."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def safe_id(raw: Any) -> str:
    """A file name for an id, injective: two different ids never get the same name; ids equal once
    normalised to Unicode NFC are the same id (the original is normalised first).

    An id made only of ASCII letters, digits, ``.``, ``_`` and ``-`` (not starting with ``.``, at most
    120 characters) is its own name, so the ids of ordinary studies stay readable. Any other id becomes
    an ASCII slug (accents dropped, other characters replaced by ``_``, at most 120 characters) followed by
    ``-`` and the first 10 hex digits of the sha256 of the original id. The names match the workflow's
    wildcard pattern ``[A-Za-z0-9._-]+``. (A clash would need an id that is itself a slug ending in the
    hash of a different id: a 40-bit coincidence.)

    >>> safe_id("q01")
    'q01'
    >>> safe_id("Frage-ä") != safe_id("Frage-ö")
    True
    >>> safe_id("Frage-ä")[:8]
    'Frage-a-'
    >>> safe_id("問題一").startswith("id-")
    True
    >>> safe_id("Mod\u00e8le") == safe_id("Mode\u0300le")  # NFC and NFD: the same id
    True
    """
    raw = unicodedata.normalize("NFC", str(raw))  # one id, one name, however its accents are encoded (issue 37)
    if raw and len(raw) <= SAFE_ID_MAX and not _UNSAFE.search(raw) and not raw.startswith(".") \
            and raw not in ("..", "."):
        return raw
    folded = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode("ascii")
    slug = _UNSAFE.sub("_", folded).strip("._-")[:SAFE_ID_MAX] or "id"
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{slug}-{digest}"


def lone_surrogate(obj: Any, where: str = "") -> str | None:
    """Where a JSON value holds a lone UTF-16 surrogate (e.g. ``"\\ud800"``), as a readable location, or None.

    Such a string cannot be encoded as UTF-8; it is what a truncated emoji becomes in JSON. The walk is
    iterative, so a record nested as deeply as the JSON parser allows is checked too.

    >>> lone_surrogate({"id": "a", "text": "ok \\ud83d"})
    "field 'text', character 3"
    """
    stack: list[tuple[Any, str]] = [(obj, where)]
    while stack:
        value, at = stack.pop()
        if isinstance(value, str):
            m = _SURROGATE.search(value)
            if m is not None:
                at = at if len(at) <= 100 else at[:60] + " ... " + at[-30:]
                return f"{at or 'the value'}, character {m.start()}"
        elif isinstance(value, dict):
            items = []
            for key, sub in value.items():
                if _SURROGATE.search(key):
                    return f"a field name ({at or 'top level'})"
                items.append((sub, f"{at}.{key}" if at else f"field {key!r}"))
            stack.extend(reversed(items))
        elif isinstance(value, list):
            stack.extend(reversed([(sub, f"{at}[{i}]" if at else f"item {i}") for i, sub in enumerate(value)]))
    return None


def _surrogate_exclusion(obj: Any, default_id: str, source: str) -> Exclusion | None:
    found = lone_surrogate(obj)
    if found is None:
        return None
    return Exclusion(default_id, f"lone surrogate escape in {found} (a truncated emoji?): the text is not valid "
                     "Unicode and cannot be written; fix the record or drop the broken character", source)


def _load_json(text: str, lineno: int | None = None) -> tuple[Any, str | None]:
    """``json.loads`` that reports every way a JSON text can fail as a message (naming the JSONL line)."""
    where = f" on line {lineno}" if lineno is not None else ""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        at = f" column {exc.colno}" if lineno is not None else f" at line {exc.lineno} column {exc.colno}"
        return None, f"invalid JSON{where}{at}: {exc.msg}"
    except RecursionError:
        return None, f"invalid JSON{where}: nested too deeply to read"
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit
        return None, f"invalid JSON{where}: {exc}"


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
    ids["record_id"] = ids.pop("original_id")
    reasoning = _first(record, REASONING_FIELDS)
    if reasoning is not None:
        if not isinstance(reasoning, str):
            return Exclusion(trace_id, f"reasoning field is a {type(reasoning).__name__}, not a string", source)
        ext = extract_reasoning(reasoning, require_think=False)
        return Trace(trace_id, ext.text or "", source=source, truncated=ext.truncated, offset=ext.offset,
                     dropped_blocks=ext.dropped, **ids)
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
    return Trace(trace_id, ext.text, source=source, truncated=ext.truncated, offset=ext.offset,
                 dropped_blocks=ext.dropped, **meta)


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
        original = str(rid) if rid is not None else self.default_id
        return {
            "trace_id": safe_id(original),
            "original_id": original,
            "model": str(r.get("model") or ""),
            "question_id": str(qid) if qid is not None else "",
            "run": run_name(r.get("run")) if r.get("run") is not None else "",
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
        st = path.stat()
    except OSError as exc:
        yield Exclusion(stem, f"cannot read file: {exc.strerror or exc}", src)
        return
    size = st.st_size
    if not stat.S_ISREG(st.st_mode):
        yield Exclusion(stem, f"not a regular file ({_kind(path)}): not read", src)
        return
    if suffix not in JSON_SUFFIXES | JSONL_SUFFIXES and size > max_bytes:
        yield Exclusion(stem, f"too large: {size:,} bytes (limit {max_bytes:,}; raise input.max_trace_bytes)", src)
        return
    try:
        data = path.read_bytes()
    except OSError as exc:
        yield Exclusion(stem, f"cannot read file: {exc.strerror or exc}", src)
        return
    if data.startswith(BOM):
        data = data[len(BOM):]
    if suffix in JSONL_SUFFIXES:
        yield from _jsonl_records(data, stem, src, max_bytes)
        return
    text = _decode(data, stem, src)
    if isinstance(text, Exclusion):
        yield text
        return
    if suffix in JSON_SUFFIXES:
        obj, problem = _load_json(text)
        if problem:
            yield Exclusion(stem, problem, src)
            return
        if isinstance(obj, list):
            for i, record in enumerate(obj, 1):
                bad = _surrogate_exclusion(record, f"{stem}-{i}", f"{src}#{i}")
                if bad:
                    yield bad
                    continue
                try:
                    canon = json.dumps(record, sort_keys=True, ensure_ascii=False).encode()
                except (RecursionError, ValueError) as exc:
                    yield Exclusion(f"{stem}-{i}", f"invalid JSON record: {type(exc).__name__}: {exc}", f"{src}#{i}")
                    continue
                yield RawRecord(f"{stem}-{i}", f"{src}#{i}", record if isinstance(record, dict) else None,
                                None if isinstance(record, dict) else record, hashlib.sha256(canon).hexdigest())
        else:
            bad = _surrogate_exclusion(obj, stem, src)
            if bad:
                yield bad
                return
            yield RawRecord(stem, src, obj if isinstance(obj, dict) else None, None if isinstance(obj, dict) else obj,
                            hashlib.sha256(data).hexdigest())
        return
    yield RawRecord(stem, src, None, text, hashlib.sha256(data).hexdigest())


def _jsonl_lines(data: bytes, max_bytes: int) -> Iterator[tuple[int, bytes | int]]:
    """``(line number, line)`` of a JSONL file's bytes; a line longer than ``max_bytes`` is given as its length
    instead, never copied out of ``data`` (issue 37: a 100 MB line cost 550 MB before it was excluded)."""
    start = 0
    lineno = 0
    for end in _LINE_END.finditer(data):
        lineno += 1
        yield lineno, data[start:end.start()] if end.start() - start <= max_bytes else end.start() - start
        start = end.end()
    if start < len(data):
        yield lineno + 1, data[start:] if len(data) - start <= max_bytes else len(data) - start


def _jsonl_records(data: bytes, stem: str, src: str,
                   max_bytes: int = InputParams.max_trace_bytes) -> Iterator[RawRecord | Exclusion]:
    for lineno, raw in _jsonl_lines(data, max_bytes):
        default_id = f"{stem}-{lineno}"
        where = f"{src}:{lineno}"
        if isinstance(raw, int):
            yield Exclusion(default_id, f"too large: a line of {raw:,} bytes (limit {max_bytes:,}; raise "
                                        "input.max_trace_bytes): not parsed", where)
            continue
        if not raw.strip():
            continue
        line = _decode(raw, default_id, where)
        if isinstance(line, Exclusion):
            yield line
            continue
        record, problem = _load_json(line, lineno)
        if problem:
            yield Exclusion(default_id, problem, where)
            continue
        bad = _surrogate_exclusion(record, default_id, where)
        if bad:
            yield bad
            continue
        yield RawRecord(default_id, where, record if isinstance(record, dict) else None,
                        None if isinstance(record, dict) else record, hashlib.sha256(raw).hexdigest())


def read_path(path: str | os.PathLike, require_think: bool = True,
              max_bytes: int = InputParams.max_trace_bytes) -> Iterator[Trace | Exclusion]:
    """Yield the traces of one file: plain text (one trace), JSON (a record or a list) or JSONL."""
    for item in iter_records(path, max_bytes):
        yield item if isinstance(item, Exclusion) else to_trace(item, require_think)


def _kind(path: Path) -> str:
    try:
        mode = path.stat().st_mode
    except OSError:
        return "a dangling symbolic link" if path.is_symlink() else "unreadable"
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def walk_inputs(paths: Iterable[str | os.PathLike], skip: Iterable[str | os.PathLike] = ()) -> Iterator[Path | Exclusion]:
    """Expand directories (recursively, sorted) into trace files; files are passed through as given.

    Folders in ``skip`` (e.g. the ``--out`` folder of ``thinkprobe analyze`` when it lies inside an input
    folder: its graphs are JSON files) are not entered, so a rerun never reads its own outputs as traces.

    Inside a folder, entries with a trace suffix (``.txt``, ``.md``, ``.json``, ``.jsonl``, ...) that are
    hidden (the name starts with ``.``, including ``..txt``), dangling symbolic links or not regular files
    are not read; each yields an :class:`Exclusion` saying why, so nothing disappears without a row.
    Entries with other suffixes are not traces and are ignored.
    """
    suffixes = TEXT_SUFFIXES | JSON_SUFFIXES | JSONL_SUFFIXES
    skipped = [Path(d).resolve() for d in skip]
    for p in paths:
        p = Path(p)
        if not p.is_dir():
            yield p
            continue
        for child in sorted(p.rglob("*")):
            if child.suffix.lower() not in suffixes:
                continue
            if skipped and any(d in child.resolve().parents for d in skipped):
                continue
            if child.name.startswith("."):
                yield Exclusion(safe_id(child.name), "hidden file: not read (rename it without the leading '.' "
                                "or pass it explicitly to analyse it)", str(child))
            elif child.is_symlink() and not child.exists():
                yield Exclusion(safe_id(child.stem), "dangling symbolic link: its target does not exist", str(child))
            elif not child.is_file():
                if not child.is_dir():
                    yield Exclusion(safe_id(child.stem), f"not a regular file ({_kind(child)}): not read", str(child))
            else:
                yield child


def iter_files(paths: Iterable[str | os.PathLike]) -> Iterator[Path]:
    """The trace files of :func:`walk_inputs`, without the exclusions."""
    return (p for p in walk_inputs(paths) if isinstance(p, Path))


def read_traces(paths: Iterable[str | os.PathLike], require_think: bool = True,
                max_bytes: int = InputParams.max_trace_bytes,
                skip: Iterable[str | os.PathLike] = ()) -> Iterator[Trace | Exclusion]:
    """Yield every trace under ``paths`` (files, directories, JSONL), with ids made unique; folders in
    ``skip`` are not read (:func:`walk_inputs`)."""
    seen: dict[str, int] = {}
    for path in walk_inputs(paths, skip):
        if isinstance(path, Exclusion):
            items: Iterable[Trace | Exclusion] = [path]
        elif not path.exists():
            items = [Exclusion(safe_id(path.stem), "no such file", str(path))]
        else:
            items = read_path(path, require_think, max_bytes)
        for item in items:
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
