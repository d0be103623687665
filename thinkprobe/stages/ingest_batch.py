"""Stage ``import_traces`` for one analysis batch: import its units (:func:`thinkprobe.stages.ingest.import_shard`,
their inputs read once), then register each question with a unit whose input changed after planning, so that the
next run imports it again (:mod:`thinkprobe.rerun_tokens`; issue 32, item 6).

A module of its own, beside :mod:`thinkprobe.stages.ingest`: a trace unit file's provenance names the code of
``import_shard``, so leaving that module as it was keeps every trace file of an earlier import current.
"""

from __future__ import annotations

from typing import Any

from ..rerun_tokens import register
from ..units import UnitKey
from .ingest import import_shard
from .unitfiles import read_unit

CHANGED = "changed after the workflow was planned"
"""What the reason of a unit excluded for a changed input says (:func:`thinkprobe.units.load_records`)."""


def import_batch(units: list[str], records: dict[str, dict[str, Any] | None], outputs: list[str],
                 require_think: bool, max_trace_bytes: int, base: str = ".") -> dict[str, int]:
    """Write one trace unit file per unit of an import job (one model's batch of questions); returns counts per
    status and ``changed``. The questions whose units were excluded for a changed input are registered for a rerun,
    each with the units concerned."""
    counts = import_shard(units, records, outputs, require_think, max_trace_bytes)
    if counts["changed"]:
        by_shard: dict[tuple[str, str], list[str]] = {}
        for unit, out in zip(units, outputs):
            doc = read_unit(out)
            if doc["status"] == "excluded" and doc.get("stage") == "import" and CHANGED in (doc.get("reason") or ""):
                key = UnitKey.from_path(unit)
                by_shard.setdefault((key.question_set, key.question_id), []).append(unit)
        for (question_set, question_id), changed in by_shard.items():
            register(question_set, question_id, changed, base)
    return counts
