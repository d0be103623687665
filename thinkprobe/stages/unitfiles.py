"""The per-unit files of the workflow: JSON documents with status and provenance, and embedding arrays."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Callable

from ..outputs import atomic_write_bytes, provenance, write_json
from ..timing import JobClock

STATUSES = ("ok", "missing", "excluded")


class UnitFileError(ValueError):
    """A per-unit file is unreadable or not in the expected format; the message names the file."""


def unit_doc(unit: dict[str, str], status: str, prov: dict[str, Any], reason: str | None = None,
             stage: str | None = None, **payload: Any) -> dict[str, Any]:
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}")
    return {"unit": unit, "status": status, "reason": reason, "stage": stage, **payload, "provenance": prov}


def passthrough(upstream: dict[str, Any], prov: dict[str, Any]) -> dict[str, Any]:
    """The document for a unit that an earlier stage already excluded (or that has no trace)."""
    return unit_doc(upstream["unit"], upstream["status"], prov, upstream.get("reason"), upstream.get("stage"),
                    trace_id=upstream.get("trace_id"), ids=upstream.get("ids", {}))


def transform_units(in_paths: list[str], emb_paths: list[str], out_paths: list[str], modules: list[str],
                    analysis: dict[str, Any], build: Callable[[dict[str, Any], str, dict[str, Any]], dict[str, Any]]
                    ) -> dict[str, int]:
    """One output per unit from its upstream file and embeddings; units already out pass their status through.

    ``build(doc, emb_path, provenance)`` returns the output document of an ``ok`` unit.
    """
    counts = {status: 0 for status in STATUSES}
    for in_path, emb_path, out_path in zip(in_paths, emb_paths, out_paths):
        doc = read_unit(in_path)
        prov = unit_provenance(modules, analysis, [in_path, emb_path])
        out = passthrough(doc, prov) if doc["status"] != "ok" else build(doc, emb_path, prov)
        write_unit(out_path, out)
        counts[out["status"]] += 1
    return counts


def read_unit(path: str | Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as exc:
        raise UnitFileError(f"{path}: cannot read unit file: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("status") not in STATUSES or "unit" not in doc:
        raise UnitFileError(f"{path}: not a thinkprobe unit file (no unit/status)")
    return doc


def write_unit(path: str | Path, doc: dict[str, Any]) -> None:
    write_json(path, doc)


def save_embeddings(path: str | Path, emb) -> None:
    import numpy as np  # not at module level: the import stage, which has no embeddings, stays light

    buf = io.BytesIO()
    np.savez(buf, tu=np.asarray(emb, dtype=np.float32))
    atomic_write_bytes(path, buf.getvalue())


def load_embeddings(path: str | Path):
    import numpy as np

    try:
        with np.load(path) as data:
            return data["tu"]
    except (OSError, ValueError, KeyError) as exc:
        raise UnitFileError(f"{path}: cannot read embeddings: {exc}") from exc


def unit_provenance(modules: list[str], params: dict[str, Any], inputs: list[str], **extra: Any) -> dict[str, Any]:
    """Provenance of one unit's output: thinkprobe version, code hash, parameters and its own input files.

    Deliberately free of timestamps and timings, so that a rerun writes byte-identical files.
    """
    return provenance(modules, params, [p for p in inputs if Path(p).exists()], **extra)


def log_timing(log, stage: str, clock: JobClock, units: int) -> None:
    """One JSON line in the job's log: where the job's time went (read by bench/workflow_bench.py)."""
    log.write("TIMING " + json.dumps({"stage": stage, **clock.as_dict(units)}) + "\n")
