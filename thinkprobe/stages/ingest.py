"""Stage ``import_traces``: copy each unit's trace from the configured inputs into its unit file.

The unit file holds the reasoning extracted verbatim (``<think>`` block or reasoning field) and the
content hash of the source record, so every later number traces back to the exact input item.
"""

from __future__ import annotations

from typing import Any

from ..traces import Exclusion, to_trace
from ..units import InputError, UnitKey, load_records
from .unitfiles import unit_doc, unit_provenance, write_unit

MODULES = ["traces", "units", "outputs", "stages.unitfiles", "stages.ingest"]


def import_shard(unit_paths: list[str], records: dict[str, dict[str, str] | None], outputs: list[str],
                 require_think: bool, max_trace_bytes: int) -> dict[str, int]:
    """Write one trace unit file per unit of a question shard; returns counts per status."""
    if len(unit_paths) != len(outputs):
        raise ValueError(f"{len(unit_paths)} units but {len(outputs)} output paths")
    params = {"require_think": require_think, "max_trace_bytes": max_trace_bytes}
    loaded = load_records([r for r in records.values() if r], max_trace_bytes)
    counts = {"ok": 0, "missing": 0, "excluded": 0}
    for unit_path, out in zip(unit_paths, outputs):
        unit = UnitKey.from_path(unit_path).as_dict()
        ref = records.get(unit_path)
        prov = unit_provenance(MODULES, params, [], record=ref)
        if ref is None:
            doc = unit_doc(unit, "missing", prov, "missing: no trace for this unit in the inputs", "import",
                           trace_id=None, ids={**unit, "domain": ""})
        else:
            ids: dict[str, Any] = {**unit, "domain": ref.get("domain", ""), "record_id": ref["trace_id"],
                                   "source": ref["source"]}
            raw = loaded[ref["source"]]
            item = Exclusion(ref["trace_id"], str(raw), ref["source"], "import") if isinstance(raw, InputError) \
                else to_trace(raw, require_think)
            if isinstance(item, Exclusion):
                doc = unit_doc(unit, "excluded", prov, item.reason, "import", trace_id=unit_path, ids=ids)
            else:
                doc = unit_doc(unit, "ok", prov, trace_id=unit_path, ids=ids,
                               trace={"text": item.text, "source": item.source, "truncated": item.truncated,
                                      "offset": item.offset})
        write_unit(out, doc)
        counts[doc["status"]] += 1
    return counts
