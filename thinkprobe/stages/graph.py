"""Stage ``graph``: layers 3 and 4, node classification and invariants, for all units of a question shard."""

from __future__ import annotations

from typing import Any

from ..graph import InvariantError
from ..params import Params
from ..pipeline import SegmentedTrace, graph_of
from .unitfiles import load_embeddings, passthrough, read_unit, unit_doc, unit_provenance, write_unit

MODULES = ["graph", "text", "pipeline", "outputs", "stages.unitfiles", "stages.graph"]


def graph_shard(seg_paths: list[str], emb_paths: list[str], graph_paths: list[str],
                analysis: dict[str, Any]) -> dict[str, int]:
    params = Params.from_dict(analysis)
    counts = {"ok": 0, "missing": 0, "excluded": 0}
    for seg_path, emb_path, out_path in zip(seg_paths, emb_paths, graph_paths):
        doc = read_unit(seg_path)
        prov = unit_provenance(MODULES, analysis, [seg_path, emb_path])
        if doc["status"] != "ok":
            out = passthrough(doc, prov)
        else:
            seg = SegmentedTrace.from_dict(doc["segmentation"], doc["text"], load_embeddings(emb_path))
            try:
                g = graph_of(seg, params, attrs={"unit": doc["trace_id"]})
                out = unit_doc(doc["unit"], "ok", prov, trace_id=doc["trace_id"], ids=doc["ids"],
                               graph=g.to_node_link())
            except InvariantError as exc:
                out = unit_doc(doc["unit"], "excluded", prov, str(exc), "graph", trace_id=doc["trace_id"],
                               ids=doc["ids"])
        write_unit(out_path, out)
        counts[out["status"]] += 1
    return counts
