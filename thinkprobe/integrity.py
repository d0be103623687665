"""Digests that let a stored result be verified before it is reused (issue 28, item 1).

A result that a later run takes instead of recomputing it (a finished continuation document, a part of the
continuation store, a per-unit file that a later rule reads, a batch file) carries an ``integrity`` block:
the sha256 of its content (the document without the block, serialised canonically) and the sha256 of its
key (what it was stored under: the finished document's key, the store digest and trace of a part, the path
of a unit file below ``results/``). Before reuse the reader recomputes both: a document altered after it
was written (still valid JSON, e.g. a checkpoint dropped and every label rewritten) or copied under another
key does not match, is never reused, and is recomputed from what is intact; the reader logs a warning
naming the file and what happens instead. A store's file is moved aside (:func:`quarantine`: renamed, never
deleted) so that no later run meets it again; a workflow output that other jobs of the same run may still
list as their input is marked out of date instead (:func:`outdate`), so that the next run recomputes it.

The digest guards against accidents and naive edits (a file edited by hand or by a script, a copy under the
wrong name, a disk that returned other bytes), not against someone who recomputes it: the hash is not
keyed by a secret.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Mapping

FIELD = "integrity"


def _sha256(obj: Any) -> str:
    from .outputs import _json_default

    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=_json_default)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def seal(doc: Mapping[str, Any], key: Any) -> dict[str, Any]:
    """``doc`` with its ``integrity`` block (content and key digests) as the last field.

    >>> sealed = seal({"labels": ["7", "7"]}, "k1")
    >>> problem(sealed, "k1") is None
    True
    >>> problem({**sealed, "labels": ["999"]}, "k1")
    'its content does not match its digest: it was altered after it was written'
    >>> problem(sealed, "k2")
    'its key does not match: it was stored under another key'
    """
    body = {k: v for k, v in doc.items() if k != FIELD}
    return {**body, FIELD: {"content_sha256": _sha256(body), "key_sha256": _sha256(key)}}


def problem(doc: Any, key: Any, required: bool = True) -> str | None:
    """Why ``doc`` (as read back) cannot be reused under ``key``, or None when its digests match.

    A document without the block is a problem when ``required`` (stores whose every file is written
    sealed); otherwise it is read as it is (files written before digests, or by hand).
    """
    if not isinstance(doc, Mapping):
        return "it is not a JSON object"
    block = doc.get(FIELD)
    if block is None:
        return "it carries no digest" if required else None
    if not isinstance(block, Mapping):
        return "its digest block is not an object"
    if block.get("key_sha256") != _sha256(key):
        return "its key does not match: it was stored under another key"
    if block.get("content_sha256") != _sha256({k: v for k, v in doc.items() if k != FIELD}):
        return "its content does not match its digest: it was altered after it was written"
    return None


def unsealed(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` without its ``integrity`` block."""
    return {k: v for k, v in doc.items() if k != FIELD}


def quarantine(path: str | os.PathLike) -> Path | None:
    """Move a file that failed verification aside (``<name>.altered-<UTC time>-<pid>``, beside it), so that
    no later run reads it as a result and the workflow sees it missing; nothing is deleted. Returns the new
    path, or None when the file is gone already (another job moved it)."""
    src = Path(path)
    dest = src.with_name(f"{src.name}.altered-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}")
    try:
        os.replace(src, dest)
    except FileNotFoundError:
        return None
    return dest


def outdate(path: str | os.PathLike) -> bool:
    """Mark a workflow output that failed verification out of date: its modification time is set to the
    epoch, so it is older than its inputs and the next ``snakemake`` run reruns the job that writes it (and
    what follows from it). The file stays where it is, so other jobs of the running workflow that list it as
    an input still start (those that verify it do not use it). Returns False when the file is gone."""
    try:
        os.utime(path, (1, 1))
    except FileNotFoundError:
        return False
    return True


def refused(path: str | os.PathLike, why: str, moved: Path | None, instead: str) -> str:
    """The warning for a stored result that is not reused: the file, why, where it went, what happens instead."""
    where = f" (moved to {moved.name})" if moved is not None else ""
    return f"WARNING: {path}: {why}; not reused{where}: {instead}"
