"""The per-unit files of the workflow: JSON documents with status and provenance, and embedding arrays.

Every per-unit failure of a stage becomes that unit's ``excluded`` status, with the stage and the reason
(the traceback goes to the job's log): a unit file that cannot be read, an input the stage's code cannot
handle, an output that cannot be written. A job fails only for faults of the job itself (its encoder
cannot load, its disk is full), never for one unit.

Every unit file is written sealed (issue 28, item 1; :mod:`thinkprobe.integrity`): a JSON document carries the
digest of its content and of its key (its place: the stage folder and the unit, :func:`unit_key`), an
embeddings file the digest of its array and key. The next stage verifies what it reads: a file altered after
it was written, or copied to another unit's place, is not used. The reading job logs a warning naming it,
excludes that unit for this run, and marks the file out of date (:func:`thinkprobe.integrity.outdate`: its
time set to the epoch; it stays in place, so the other jobs of the running workflow that list it still
start): the next ``snakemake`` run recomputes it from its inputs, and what follows from it. A file without a
digest (written before digests, or by hand) is read as it is.
"""

from __future__ import annotations

import io
import json
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

from .. import integrity
from ..outputs import atomic_write_bytes, provenance, write_json
from ..units import unit_path

# ``absent``: a unit outside its question set's grid (a model or run that never applies to that set, e.g. a
# model that answered other questions only); its files exist because a shard's outputs are one static
# pattern over every model x run, but it is no unit of the study: no table, no exclusion, no count.
STATUSES = ("ok", "missing", "excluded", "absent")


class UnitFileError(ValueError):
    """A per-unit file is unreadable or not in the expected format; the message names the file."""


def unit_doc(unit: dict[str, str], status: str, prov: dict[str, Any], reason: str | None = None,
             stage: str | None = None, **payload: Any) -> dict[str, Any]:
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}")
    return {"unit": unit, "status": status, "reason": reason, "stage": stage, **payload, "provenance": prov}


def absent_doc(unit: dict[str, str], reason: str | None = None) -> dict[str, Any]:
    """The document of a unit outside its question set's grid (no collection job for this model, run and
    question set): the trace stage's view of it, without a file of its own."""
    from .. import __version__

    unit = dict(unit)
    return unit_doc(unit, "absent", {"thinkprobe_version": __version__},
                    reason or "absent: no collection job for this model, run and question set", "collect",
                    trace_id=None, ids={**unit, "domain": ""})


def passthrough(upstream: dict[str, Any], prov: dict[str, Any]) -> dict[str, Any]:
    """The document for a unit that an earlier stage already excluded (or that has no trace)."""
    return unit_doc(upstream["unit"], upstream["status"], prov, upstream.get("reason"), upstream.get("stage"),
                    trace_id=upstream.get("trace_id"), ids=upstream.get("ids", {}))


def embeddings_files(unit_files: list[str]) -> list[str]:
    """The embeddings file of each unit of a later stage's files (``results/<stage>/<m>/<s>/<q>/<r>.json`` ->
    ``results/embeddings/<m>/<s>/<q>/<r>.npz``). The segment job writes a unit's embeddings just before its
    segments file, which the workflow tracks alone: one Snakemake file per unit and stage fewer to plan.

    >>> embeddings_files(["results/graphs/m/s/q/1.json"])
    ['results/embeddings/m/s/q/1.npz']
    """
    out = []
    for f in unit_files:
        p = Path(f)
        out.append(str(p.parents[4] / "embeddings" / Path(*p.parts[-4:]).with_suffix(".npz")))
    return out


def unit_from_file(path: str | Path) -> dict[str, str]:
    """The unit of a per-unit file, from its path ``results/<stage>/<model>/<qset>/<qid>/<run>.<ext>``."""
    model, question_set, question_id, run = Path(path).with_suffix("").parts[-4:]
    return {"model": model, "question_set": question_set, "question_id": question_id, "run": run}


def failure_doc(unit: dict[str, str], prov: dict[str, Any], stage: str, exc: BaseException,
                upstream: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``excluded`` document of a unit whose processing raised; the traceback goes to stderr (the log)."""
    unit_id = unit_path(unit)
    print(f"unit {unit_id}: excluded in stage {stage}:", file=sys.stderr)
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    reason = str(exc) if isinstance(exc, UnitFileError) else f"internal error in {stage}: {type(exc).__name__}: {exc}"
    upstream = upstream or {}
    return unit_doc(unit, "excluded", prov, reason, stage, trace_id=upstream.get("trace_id", unit_id),
                    ids=upstream.get("ids", {**unit, "domain": ""}))


def write_unit_or_exclude(path: str | Path, doc: dict[str, Any], stage: str) -> dict[str, Any]:
    """Write ``doc``; when it cannot be serialised or written, write the unit's exclusion instead."""
    try:
        write_unit(path, doc)
        return doc
    except (TypeError, ValueError) as exc:  # not serialisable, e.g. a text that is not valid Unicode
        out = failure_doc(doc["unit"], doc["provenance"], stage, exc, doc)
        write_unit(path, out)
        return out


def transform_units(in_paths: list[str], emb_paths: list[str], out_paths: list[str], modules: list[str],
                    analysis: dict[str, Any], build: Callable[[dict[str, Any], str, dict[str, Any]], dict[str, Any]],
                    stage: str = "") -> dict[str, int]:
    """One output per unit from its upstream file and embeddings; units already out pass their status through.

    ``build(doc, emb_path, provenance)`` returns the output document of an ``ok`` unit. Whatever fails
    for one unit (its upstream file, ``build``, the write) makes that unit ``excluded`` in ``stage``.
    """
    counts = {status: 0 for status in STATUSES}
    for in_path, emb_path, out_path in zip(in_paths, emb_paths, out_paths):
        prov = unit_provenance(modules, analysis, [in_path, emb_path])
        doc: dict[str, Any] | None = None
        try:
            doc = read_unit(in_path, outdate=True)
            out = passthrough(doc, prov) if doc["status"] != "ok" else build(doc, emb_path, prov)
        except Exception as exc:  # noqa: BLE001 - one unit never costs its shard
            out = failure_doc(doc["unit"] if doc else unit_from_file(out_path), prov, stage, exc, doc)
        out = write_unit_or_exclude(out_path, out, stage)
        counts[out["status"]] += 1
    return counts


def unit_key(path: str | Path) -> str:
    """What a unit file is stored under: its stage folder and unit, the last five parts of its path
    (``segments/<model>/<question_set>/<question_id>/<run>.json``), so that a file copied to another unit's
    or another stage's place does not verify; the tree may move as a whole."""
    return "/".join(Path(path).parts[-5:])


def _refuse(path: str | Path, why: str, outdate: bool) -> UnitFileError:
    """Warn (stderr: the job's log) that ``path`` is not used; mark it out of date when ``outdate``."""
    if outdate and integrity.outdate(path):
        instead = ("this unit is excluded for this run; the file is marked out of date (its time set to 1970), so "
                   "the next run recomputes it from its inputs")
    else:
        instead = "this unit is excluded; rerun the rule that writes it (or delete it)"
    print(integrity.refused(path, why, None, instead), file=sys.stderr, flush=True)
    return UnitFileError(f"{path}: {why}: not used")


def read_unit(path: str | Path, outdate: bool = False) -> dict[str, Any]:
    """A unit file's document (without its digest block), verified (:mod:`thinkprobe.integrity`).

    Raises :class:`UnitFileError` naming the file when it cannot be read, is no unit file, or fails
    verification (then a warning goes to stderr, and with ``outdate`` the file is marked out of date so that
    the workflow recomputes it: the stage jobs do this, readers outside the workflow do not)."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as exc:
        raise UnitFileError(f"{path}: cannot read unit file: {exc}") from exc
    why = integrity.problem(doc, unit_key(path), required=False)
    if why is not None:
        raise _refuse(path, why, outdate)
    if not isinstance(doc, dict) or doc.get("status") not in STATUSES or "unit" not in doc:
        raise UnitFileError(f"{path}: not a thinkprobe unit file (no unit/status)")
    return integrity.unsealed(doc)


def write_unit(path: str | Path, doc: dict[str, Any]) -> None:
    """Write a unit file, sealed with the digest of its content and of its key (:func:`unit_key`)."""
    write_json(path, integrity.seal(doc, unit_key(path)))


def _array_digest(arr) -> dict[str, Any]:
    import hashlib

    return {"shape": list(arr.shape), "dtype": str(arr.dtype), "sha256": hashlib.sha256(arr.tobytes()).hexdigest()}


def save_embeddings(path: str | Path, emb) -> None:
    """Write a unit's TU embeddings (``tu``, float32) with the digest of the array and of its key."""
    import numpy as np  # not at module level: the import stage, which has no embeddings, stays light

    tu = np.ascontiguousarray(np.asarray(emb, dtype=np.float32))
    sealed = integrity.seal({"tu": _array_digest(tu)}, unit_key(path))[integrity.FIELD]
    buf = io.BytesIO()
    np.savez(buf, tu=tu, integrity=np.array(json.dumps(sealed)))
    atomic_write_bytes(path, buf.getvalue())


def load_embeddings(path: str | Path, outdate: bool = True):
    """A unit's TU embeddings, verified like a unit file (:func:`read_unit`; the stage jobs that read them
    mark a file that fails out of date, so the next run recomputes it)."""
    import numpy as np

    try:
        with np.load(path) as data:
            tu = data["tu"]
            block = json.loads(str(data["integrity"])) if "integrity" in data.files else None
    except (OSError, ValueError, KeyError) as exc:
        raise UnitFileError(f"{path}: cannot read embeddings: {exc}") from exc
    if block is not None:
        why = integrity.problem({"tu": _array_digest(np.ascontiguousarray(tu)), integrity.FIELD: block},
                                unit_key(path))
        if why is not None:
            raise _refuse(path, why, outdate)
    return tu


def unit_provenance(modules: list[str], params: dict[str, Any], inputs: list[str], **extra: Any) -> dict[str, Any]:
    """Provenance of one unit's output: thinkprobe version, code hash, parameters and its own input files.

    Deliberately free of timestamps and timings, so that a rerun writes byte-identical files.
    """
    return provenance(modules, params, [p for p in inputs if Path(p).exists()], **extra)
