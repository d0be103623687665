"""Stage ``import_traces``: copy each unit's trace from the configured inputs into its unit file.

The unit file holds the reasoning extracted verbatim (``<think>`` block or reasoning field), the ids as the
input states them (``ids``; ``unit`` holds their file-safe forms) and the content hash of the source
record, so every later number traces back to the exact input item. A record is found again by its content
hash, wherever it now is in its file; the line it was found on goes into the provenance.
"""

from __future__ import annotations

from typing import Any

from ..codedeps import code_modules
from ..traces import Exclusion, to_trace
from ..rerun_tokens import register
from ..units import ChangedInput, InputError, UnitKey, load_records, record_key
from .unitfiles import STATUSES, failure_doc, unit_doc, unit_provenance, write_unit_or_exclude


def import_shard(unit_paths: list[str], records: dict[str, dict[str, Any] | None], outputs: list[str],
                 require_think: bool, max_trace_bytes: int, shard: tuple[str, str] | None = None,
                 base: str = ".") -> dict[str, int]:
    """Write one trace unit file per unit of a question shard; returns counts per status.

    A unit whose record changed after planning is written ``excluded`` and, when ``shard`` (question set,
    question id) is given, registered for the next run (:mod:`thinkprobe.rerun_tokens`): it is retried, not lost."""
    if len(unit_paths) != len(outputs):
        raise ValueError(f"{len(unit_paths)} units but {len(outputs)} output paths")
    params = {"require_think": require_think, "max_trace_bytes": max_trace_bytes}
    loaded = load_records([r for r in records.values() if r and not r.get("absent")], max_trace_bytes)
    counts = {status: 0 for status in STATUSES}
    changed: list[str] = []
    for unit_path, out in zip(unit_paths, outputs):
        unit = UnitKey.from_path(unit_path).as_dict()
        ref = records.get(unit_path)
        if ref and ref.get("absent"):  # outside its question set's grid: no unit of the study
            doc = unit_doc(unit, "absent", unit_provenance(code_modules(import_shard), params, []), ref["absent"], "import",
                           trace_id=None, ids={**unit, "domain": ""})
            counts[write_unit_or_exclude(out, doc, "import")["status"]] += 1
            continue
        raw = loaded.get(record_key(ref)) if ref else None
        source = getattr(raw, "source", "")
        prov = unit_provenance(code_modules(import_shard), params, [], record={**ref, "source": source} if ref else None)
        try:
            doc = _unit_document(unit, unit_path, ref, raw, prov, require_think)
        except Exception as exc:  # noqa: BLE001 - one record never costs its shard
            doc = failure_doc(unit, prov, "import", exc)
        doc = write_unit_or_exclude(out, doc, "import")
        counts[doc["status"]] += 1
        if isinstance(raw, ChangedInput):
            changed.append(unit_path)
    if changed and shard is not None:
        register(shard[0], shard[1], changed, base)
    counts["changed"] = len(changed)
    return counts


def _unit_document(unit: dict[str, str], unit_path: str, ref: dict[str, Any] | None, raw, prov: dict[str, Any],
                   require_think: bool) -> dict[str, Any]:
    if ref is None:
        return unit_doc(unit, "missing", prov, "missing: no trace for this unit in the inputs", "import",
                        trace_id=None, ids={**unit, "domain": ""})
    original = ref.get("original", {})
    ids: dict[str, Any] = {**unit, **{k: original[k] for k in ("model", "question_id", "run") if k in original},
                           "domain": ref.get("domain", ""), "record_id": original.get("record_id", ref["trace_id"]),
                           "source": getattr(raw, "source", ref["path"])}
    item = Exclusion(ref["trace_id"], str(raw), ref["path"], "import") if isinstance(raw, InputError) \
        else to_trace(raw, require_think)
    if isinstance(item, Exclusion):
        return unit_doc(unit, "excluded", prov, item.reason, "import", trace_id=unit_path, ids=ids)
    return unit_doc(unit, "ok", prov, trace_id=unit_path, ids=ids,
                    trace={"text": item.text, "source": item.source, "truncated": item.truncated,
                           "offset": item.offset,
                           **({"dropped_blocks": item.dropped_blocks} if item.dropped_blocks else {})})

