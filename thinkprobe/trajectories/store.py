"""The continuation store: per-trace part files of finished engine calls, written atomically, read merged.

Split out of :mod:`thinkprobe.trajectories.sampling` (which samples into it): the store is the durable record
of every continuation sampled, so that a killed job rerun samples only what is missing and no finished
checkpoint is redone.

Beside the parts, :class:`FinishedDocuments` keeps the assembled continuation document of every trace whose
sampling finished, keyed by what decides it (the trace unit's bytes; the batch identity of
:func:`thinkprobe.protect.identity`: sampling settings, model, the engine settings that change what is
sampled or cut, the sampling code's hash; the question's task and gold; the decoding's name): a sampling job
rerun whose traces are all finished (its batch file lost, or rebuilt after a change that does not touch
them) assembles its output from them and never starts an engine (issue 19, item 7).

Both are verified before reuse (issue 28, item 1; :mod:`thinkprobe.integrity`): every part and every finished
document carries the digest of its content and of its key. A part that does not match (altered, copied from
another trace or setting, unreadable) is not used, so its checkpoints are sampled again; a finished document
that does not match is not used, so the trace's document is assembled again from its parts. Either is logged
as a warning naming the file, which is moved aside (renamed, never deleted).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .. import integrity


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class ContinuationStore:
    """Per-trace folders of part files; a call's continuations of one trace form one part, written atomically.

    Layout: ``root/<model>/<question_set>/<question_id>/<run>/<store digest>-<trace hash>/part-*.json``; the
    store digest (:func:`thinkprobe.trajectories.sampling.store_digest`) keys the settings, model, engine
    settings and sampling code, the trace hash the prompt and completion token ids (a re-collected trace
    starts afresh). The store
    outlives the job: a killed job rerun, or a batch rebuilt with one more question, reads what is there
    and samples only what is missing. ``entries(keys)`` merges the parts of those traces into
    ``{(trace_key, checkpoint_index): entry}``, the continuations of one checkpoint concatenated in
    sampling order; a part that fails verification is left out (and moved aside, with a warning to ``log``).
    """

    def __init__(self, root: str | os.PathLike, digest: str, trace_hashes: Mapping[str, str] | None = None,
                 log: Callable[[str], None] | None = None):
        self.root = Path(root)
        self.digest = digest
        self.trace_hashes = dict(trace_hashes or {})
        self.log = log or _stderr

    def part_key(self, key: str) -> list[str | None]:
        """What a part of trace ``key`` is stored under: the store digest, the trace and its hash."""
        return [self.digest, key, self.trace_hashes.get(key)]

    def folder(self, key: str) -> Path:
        tail = self.digest + (f"-{self.trace_hashes[key][:12]}" if key in self.trace_hashes else "")
        return _trace_dir(self.root, key.split("/")) / tail

    def parts(self, key: str) -> list[Path]:
        folder = self.folder(key)
        return sorted(folder.glob("part-*.json")) if folder.is_dir() else []

    def read_part(self, key: str, path: Path) -> dict[str, Any] | None:
        """A part of trace ``key`` that passes verification, else None (warned, moved aside)."""
        try:
            with open(path, encoding="utf-8") as fh:
                part = json.load(fh)
            why = integrity.problem(part, self.part_key(key))
            if why is None and not all(isinstance(e, dict) and e.get("trace") == key for e in part["entries"]):
                why = "its entries are not this trace's"
        except (OSError, ValueError, KeyError, TypeError) as exc:
            why = f"it cannot be read ({type(exc).__name__}: {exc})"
        if why is None:
            return part
        self.log(integrity.refused(path, why, integrity.quarantine(path),
                                   "its checkpoints are sampled again (the other parts are intact)"))
        return None

    def entries(self, keys: Sequence[str]) -> dict[tuple[str, int], dict[str, Any]]:
        merged: dict[tuple[str, int], dict[str, Any]] = {}
        for key, path in [(key, p) for key in keys for p in self.parts(key)]:
            part = self.read_part(key, path)
            if part is None:
                continue
            for e in part["entries"]:
                key = (e["trace"], int(e["checkpoint_index"]))
                if key not in merged:
                    merged[key] = {**e, "continuations": list(e["continuations"]), "seeds": [e.get("seed")],
                                   "calls": 1}
                else:
                    m = merged[key]
                    m["continuations"].extend(e["continuations"])
                    m["seeds"].append(e.get("seed"))
                    m["calls"] += 1
                    m["cached_tokens"] = _add(m.get("cached_tokens"), e.get("cached_tokens"))
                    m["computed_prefill"] = _add(m.get("computed_prefill"), e.get("computed_prefill"))
                    if e["status"] != "ok":
                        m["status"], m["reason"] = e["status"], e.get("reason")
        return merged

    def write(self, entries: list[dict[str, Any]], call: dict[str, Any]) -> list[Path]:
        """One part per trace of a finished call."""
        from ..outputs import write_json

        by_trace: dict[str, list[dict[str, Any]]] = {}
        for e in entries:
            by_trace.setdefault(e["trace"], []).append(e)
        paths = []
        for key, items in by_trace.items():
            path = self.folder(key) / f"part-{time.time_ns():020d}-{os.getpid()}.json"
            write_json(path, integrity.seal({"entries": items, "call": call}, self.part_key(key)))
            paths.append(path)
        return paths


def _trace_dir(root: Path, fields: Sequence[Any]) -> Path:
    """A trace's folder in the store: one safe folder name per unit field (model, question set, id, run)."""
    from ..traces import safe_id

    return root.joinpath(*[safe_id(str(f)) for f in fields])


def _add(a, b):
    return None if a is None or b is None else a + b


class FinishedDocuments:
    """The continuation document of every trace whose sampling finished, one file per trace and key.

    Layout: ``root/<model>/<question_set>/<question_id>/<run>/finished-<key[:24]>.json`` beside the trace's
    part folders. ``key`` (:meth:`key`) hashes everything the document depends on, so a changed trace,
    setting, model or gold answer finds nothing and is sampled (from the parts: nothing finished is redone).
    Written atomically after the document was assembled with no checkpoint missing, sealed with the digest of
    its content and key (:mod:`thinkprobe.integrity`); never deleted. One that fails verification is not
    reused: it is moved aside with a warning to ``log``, and the document is assembled again from the parts.
    """

    def __init__(self, root: str | os.PathLike, log: Callable[[str], None] | None = None):
        self.root = Path(root)
        self.log = log or _stderr

    @staticmethod
    def key(unit_bytes: bytes, identity: Mapping[str, Any], question: Mapping[str, Any],
            decoding: str = "default") -> str:
        """The decoding's name counts too: two decodings with the same settings share continuations (the
        store's parts) but not documents, which are labelled with their decoding."""
        blob = json.dumps([hashlib.sha256(unit_bytes).hexdigest(), dict(identity),
                           {k: question.get(k) for k in ("task", "gold")}, decoding], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def path(self, unit: Mapping[str, str], key: str) -> Path:
        from ..units import UNIT_FIELDS

        return _trace_dir(self.root, [unit[k] for k in UNIT_FIELDS]) / f"finished-{key[:24]}.json"

    def get(self, unit: Mapping[str, str], key: str) -> dict[str, Any] | None:
        """The stored document, or None when there is none, or when it cannot be read or fails verification
        (warned and moved aside: the document is then re-assembled from the store's parts)."""
        path = self.path(unit, key)
        try:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            why = f"it cannot be read ({type(exc).__name__}: {exc})"
        else:
            why = integrity.problem(doc, key)
            if why is None and (doc.get("key") != key or not isinstance(doc.get("document"), dict)):
                why = "it holds no document of this key"
            if why is None:
                return doc["document"]
        self.log(integrity.refused(path, why, integrity.quarantine(path),
                                   "the trace's document is assembled again from the store's parts"))
        return None

    def put(self, unit: Mapping[str, str], key: str, document: Mapping[str, Any]) -> bool:
        """Store ``document`` when it is final (no checkpoint ``missing``); returns whether it was stored."""
        from ..outputs import write_json

        if any(c.get("status") == "missing" for c in document.get("checkpoints") or []):
            return False
        write_json(self.path(unit, key), integrity.seal({"key": key, "document": dict(document)}, key))
        return True
