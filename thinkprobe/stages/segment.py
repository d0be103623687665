"""Stage ``segment``: layers 1 and 2 and the TU embeddings, for all units of a question shard.

Embedding is part of this stage, not a job of its own: layer 2 already needs the encoder, and a separate
``embed`` job would load it a second time per shard for no gain (the DAG still has one embeddings file
per unit). The encoder is loaded once per job and each distinct text is encoded once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..encoder import load_encoder
from ..params import Params
from ..pipeline import SegmentedTrace, segment_traces
from ..traces import Exclusion, Trace
from ..timing import JobClock
from .unitfiles import passthrough, read_unit, save_embeddings, unit_doc, unit_provenance, write_unit

MODULES = ["traces", "text", "lexicon", "lexicons/cues.tsv", "segmentation", "texttiling", "encoder", "pipeline",
           "outputs", "stages.unitfiles", "stages.segment"]


def segment_shard(trace_paths: list[str], seg_paths: list[str], emb_paths: list[str], analysis: dict[str, Any],
                  clock: JobClock | None = None, extra_provenance: dict[str, Any] | None = None) -> dict[str, int]:
    """Segment and embed every ``ok`` unit of a shard; other units pass their status through."""
    clock = clock or JobClock()
    params = Params.from_dict(analysis)
    docs = [read_unit(p) for p in trace_paths]
    todo = [i for i, d in enumerate(docs) if d["status"] == "ok"]
    traces = [Trace(docs[i]["trace_id"], docs[i]["trace"]["text"], source=docs[i]["trace"]["source"],
                    truncated=docs[i]["trace"]["truncated"], offset=docs[i]["trace"]["offset"],
                    model=docs[i]["unit"]["model"], question_id=docs[i]["unit"]["question_id"],
                    run=docs[i]["unit"]["run"], domain=docs[i]["ids"].get("domain", "")) for i in todo]
    clock.mark("read")
    results: dict[int, SegmentedTrace | Exclusion] = {}
    encoder_id = None
    if traces:
        encoder = load_encoder(params.encoder)
        encoder_id = encoder.encoder_id
        clock.mark("model_load")
        results = dict(zip(todo, segment_traces(traces, params, encoder)))
        clock.mark("work")
    counts = {"ok": 0, "missing": 0, "excluded": 0}
    dim = next((r.embeddings.shape[1] for r in results.values() if isinstance(r, SegmentedTrace)), 0)
    for i, (doc, seg_path, emb_path) in enumerate(zip(docs, seg_paths, emb_paths)):
        prov = unit_provenance(MODULES, analysis, [trace_paths[i]], encoder=encoder_id, **(extra_provenance or {}))
        res = results.get(i)
        if res is None:
            out = passthrough(doc, prov)
            emb = np.zeros((0, dim), np.float32)
        elif isinstance(res, Exclusion):
            out = unit_doc(doc["unit"], "excluded", prov, res.reason, f"segment:{res.stage}",
                           trace_id=doc["trace_id"], ids=doc["ids"])
            emb = np.zeros((0, dim), np.float32)
        else:
            out = unit_doc(doc["unit"], "ok", prov, trace_id=doc["trace_id"], ids=doc["ids"],
                           text=res.trace.text, segmentation=res.to_dict())
            emb = res.embeddings
        save_embeddings(emb_path, emb)
        write_unit(seg_path, out)
        counts[out["status"]] += 1
    clock.mark("write")
    return counts
