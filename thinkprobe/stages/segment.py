"""Stage ``segment``: layers 1 and 2 and the TU embeddings, for all units of a batch (:mod:`.batches`).

Embedding is part of this stage, not a job of its own: layer 2 already needs the encoder, and a separate
``embed`` job would load it a second time per shard for no gain (the DAG still has one embeddings file
per unit). The encoder is loaded once per job and each distinct text is encoded once.

Per-unit failures (an unreadable unit file, a trace the segmenter cannot handle) exclude that unit; when
the shard's batched call fails as a whole, its traces are retried one by one so the culprit alone is
excluded. Failing to load the encoder fails the job: that is a fault of the job, not of a unit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..codedeps import code_modules
from ..encoder import load_encoder
from ..params import Params
from ..pipeline import SegmentedTrace, segment_traces
from ..timing import JobClock
from ..traces import Exclusion, Trace
from .batches import current_doc
from .unitfiles import (STATUSES, absent_doc, failure_doc, passthrough, read_unit, save_embeddings, unit_doc, unit_from_file,
                        unit_provenance, write_unit_or_exclude)


RUNTIME_BASE_MIN = 5  # encoder start and a shard of ordinary traces
RUNTIME_MIN_PER_MB = 6  # measured: a 1.9 MB prose trace took 494 s on the 2-core reference machine (bench/README.md)


def runtime_minutes(input_mb: float) -> int:
    """The segment rule's runtime (minutes) for a shard of ``input_mb`` MB of unit files: layer 2 encodes every
    sentence, so the time grows with the text; twice the measured rate, so a trace under the caps finishes."""
    import math

    return RUNTIME_BASE_MIN + math.ceil(RUNTIME_MIN_PER_MB * max(0.0, input_mb))


def _trace_of(doc: dict[str, Any]) -> Trace:
    return Trace(doc["trace_id"], doc["trace"]["text"], source=doc["trace"]["source"],
                 truncated=doc["trace"]["truncated"], offset=doc["trace"]["offset"],
                 dropped_blocks=doc["trace"].get("dropped_blocks") or 0,
                 model=doc["unit"]["model"], question_id=doc["unit"]["question_id"],
                 run=doc["unit"]["run"], domain=doc["ids"].get("domain", ""))


def _segment_each(traces: dict[int, Trace], params: Params, encoder) -> dict[int, SegmentedTrace | Exclusion | Exception]:
    """Segment the traces together; when that raises, one by one, so a failure is pinned on its unit."""
    try:
        return dict(zip(traces, segment_traces(list(traces.values()), params, encoder)))
    except Exception:  # noqa: BLE001 - retried per trace below
        out: dict[int, SegmentedTrace | Exclusion | Exception] = {}
        for i, tr in traces.items():
            try:
                out[i] = segment_traces([tr], params, encoder)[0]
            except Exception as exc:  # noqa: BLE001 - this unit alone is excluded
                out[i] = exc
        return out


def segment_shard(trace_paths: list[str | None], seg_paths: list[str], emb_paths: list[str], analysis: dict[str, Any],
                  clock: JobClock | None = None, extra_provenance: dict[str, Any] | None = None,
                  device: str = "auto", gpu: bool | None = None) -> dict[str, int]:
    """Segment and embed every ``ok`` unit of a shard; other units pass their status through.

    ``trace_paths`` holds each unit's trace file, or None for a unit outside its question set's grid (a collected
    set's absent unit has no trace file: its segment document says ``absent``).

    ``device``/``gpu`` choose where the encoder runs (see :func:`thinkprobe.encoder.load_encoder`); the
    device actually used goes into every unit's provenance.
    """
    clock = clock or JobClock()
    params = Params.from_dict(analysis)
    counts = {status: 0 for status in STATUSES}
    todo = []  # units whose segments file is not current (stages.batches.current_doc: a rerun batch keeps the rest)
    for i, (p, seg_path, emb_path) in enumerate(zip(trace_paths, seg_paths, emb_paths)):
        kept = current_doc(seg_path, unit_provenance(code_modules(segment_shard), analysis, [] if p is None else [p]),
                           emb_path)
        if kept is None:
            todo.append(i)
        else:
            counts[kept["status"]] += 1
    trace_paths, seg_paths, emb_paths = ([xs[i] for i in todo] for xs in (trace_paths, seg_paths, emb_paths))
    docs: list[dict[str, Any] | Exception] = []
    for p, seg_path in zip(trace_paths, seg_paths):
        try:  # None: a unit outside its question set's grid, which has no trace file (stages.unitfiles.absent_doc)
            docs.append(absent_doc(unit_from_file(seg_path)) if p is None else read_unit(p, outdate=True))
        except Exception as exc:  # noqa: BLE001
            docs.append(exc)
    traces: dict[int, Trace] = {}
    results: dict[int, SegmentedTrace | Exclusion | Exception] = {}
    for i, d in enumerate(docs):
        if isinstance(d, dict) and d["status"] == "ok":
            try:
                traces[i] = _trace_of(d)
            except Exception as exc:  # noqa: BLE001
                results[i] = exc
    clock.mark("read")
    encoder_prov: dict[str, Any] = {"encoder": None}
    if traces:
        encoder = load_encoder(params.encoder, device=device, gpu=gpu)
        encoder_prov = encoder.provenance()
        clock.mark("model_load")
        results.update(_segment_each(traces, params, encoder))
        clock.mark("work")
    dim = next((r.embeddings.shape[1] for r in results.values() if isinstance(r, SegmentedTrace)), 0)
    for i, (doc, seg_path, emb_path) in enumerate(zip(docs, seg_paths, emb_paths)):
        prov = unit_provenance(code_modules(segment_shard), analysis, [p for p in trace_paths[i:i + 1] if p is not None], **encoder_prov,
                               **(extra_provenance or {}))
        res = results.get(i)
        emb = np.zeros((0, dim), np.float32)
        if isinstance(doc, Exception) or isinstance(res, Exception):
            unit = unit_from_file(seg_path) if isinstance(doc, Exception) else doc["unit"]
            out = failure_doc(unit, prov, "segment", doc if isinstance(doc, Exception) else res,
                              None if isinstance(doc, Exception) else doc)
        elif res is None:
            out = passthrough(doc, prov)
        elif isinstance(res, Exclusion):
            out = unit_doc(doc["unit"], "excluded", prov, res.reason, f"segment:{res.stage}",
                           trace_id=doc["trace_id"], ids=doc["ids"])
        else:
            out = unit_doc(doc["unit"], "ok", prov, trace_id=doc["trace_id"], ids=doc["ids"],
                           text=res.trace.text, segmentation=res.to_dict())
            emb = res.embeddings
        # the embeddings first, the segments file last: Snakemake tracks the segments file alone (a unit's
        # embeddings are its companion, stages.unitfiles.embeddings_files), so its presence implies both
        empty = np.zeros((0, dim), np.float32)
        save_embeddings(emb_path, emb if out["status"] == "ok" else empty)
        written = write_unit_or_exclude(seg_path, out, "segment")
        if written["status"] != out["status"]:
            save_embeddings(emb_path, empty)
        out = written
        counts[out["status"]] += 1
    clock.mark("write")
    return counts

