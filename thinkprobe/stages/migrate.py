"""The explicit migration of files written before digests (issue 37, item 3): ``thinkprobe migrate``.

Since this release a file without an ``integrity`` block is refused like an altered one (deleting the block
must not switch verification off): the collection store's units (``results/collect/<m>/<s>/units/``), the
per-unit files of every stage (``results/<stage>/<m>/<s>/<q>/<run>.json``) and the embeddings files
(``.npz``). Files that a release before digests wrote pass only through this step, which a user runs on
purpose: it seals each unsealed file under the key it is found at (a stored unit under the unit its document
names, and only when the file lies where that unit belongs), leaves every sealed file as it is (an altered
one stays refused), and records what it sealed in ``results/migrations/digests-<UTC time>.json``.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

from .. import __version__, integrity
from ..boundedjson import read_json_bounded
from ..generate.unit_store import store_key, store_path
from ..outputs import write_json
from .unitfiles import MAX_UNIT_BYTES, save_embeddings, unit_key


def _store_unit(path: Path) -> dict[str, str] | None:
    """The unit a collection store's file belongs to, when ``path`` is one (``collect/<m>/<s>/units/<q>/<r>``)."""
    parts = path.parts
    return None if len(parts) < 6 or parts[-6] != "collect" or parts[-3] != "units" else {}


def _is_unit_file(rel: Path) -> bool:
    """Whether a path below the results folder is a stored unit or a stage's unit file
    (``<stage>/<m>/<s>/<q>/<run>.json``), never a batch, a manifest or a continuation store's file."""
    parts = rel.parts
    if len(parts) == 6 and parts[0] == "collect" and parts[3] == "units":
        return True
    return len(parts) == 5 and parts[0] not in ("collect", "continuations", "trajectories")


def migrate_digests(results: str | os.PathLike) -> dict[str, Any]:
    """Seal every unsealed unit, store and embeddings file below ``results``; write and return the record
    (``{"sealed": [...], "skipped": [{"file", "why"}], ...}``)."""
    root = Path(results)
    sealed: list[str] = []
    skipped: list[dict[str, str]] = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file() or "migrations" in path.relative_to(root).parts[:1]:
            continue
        if path.suffix == ".npz" and _is_unit_file(path.relative_to(root)):
            _migrate_npz(path, sealed, skipped)
        elif path.suffix == ".json" and _is_unit_file(path.relative_to(root)):
            _migrate_json(path, sealed, skipped)
    record = {"migration": "digests", "thinkprobe_version": __version__,
              "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "results": str(root),
              "sealed": sealed, "skipped": skipped}
    out = root / "migrations" / f"digests-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.json"
    write_json(out, record)
    record["record"] = str(out)
    return record


def _migrate_json(path: Path, sealed: list[str], skipped: list[dict[str, str]]) -> None:
    try:
        doc = read_json_bounded(path, MAX_UNIT_BYTES)
    except (OSError, ValueError) as exc:
        skipped.append({"file": str(path), "why": f"not readable: {exc}"})
        return
    if not isinstance(doc, dict) or not isinstance(doc.get("unit"), dict) or doc.get(integrity.FIELD) is not None:
        return  # not a unit file, or sealed already (verified when it is read, never rewritten here)
    body = integrity.unsealed(doc)
    if _store_unit(path) is not None:
        unit = doc["unit"]
        try:
            home = store_path(path.parents[1], unit)
        except (KeyError, TypeError):
            home = None
        if home is None or home.resolve() != path.resolve():
            skipped.append({"file": str(path), "why": "it does not lie where the unit it names is stored"})
            return
        mode = stat.S_IMODE(path.stat().st_mode)
        write_json(path, integrity.seal(body, store_key(unit)))
        os.chmod(path, mode)  # a stored unit stays read-only
    else:
        write_json(path, integrity.seal(body, unit_key(path)))
    sealed.append(str(path))


def _migrate_npz(path: Path, sealed: list[str], skipped: list[dict[str, str]]) -> None:
    import numpy as np

    try:
        with np.load(path) as data:
            if "integrity" in data.files:
                return
            tu = data["tu"]
    except (OSError, ValueError, KeyError) as exc:
        skipped.append({"file": str(path), "why": f"not readable embeddings: {exc}"})
        return
    save_embeddings(path, tu)
    sealed.append(str(path))


def summary(record: dict[str, Any]) -> str:
    return (f"sealed {len(record['sealed'])} file(s) written before digests, skipped {len(record['skipped'])}; "
            f"recorded in {record['record']}")


__all__ = ["migrate_digests", "summary"]
