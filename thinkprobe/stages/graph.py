"""Stage ``graph``: layers 3 and 4, node classification and invariants, for all units of an analysis batch (:mod:`.batches`)."""

from __future__ import annotations

from typing import Any

from ..codedeps import code_modules
from ..graph import InvariantError
from ..params import Params
from ..pipeline import SegmentedTrace, graph_of
from .batches import transform_batch
from .unitfiles import load_embeddings, unit_doc


def graph_shard(seg_paths: list[str], emb_paths: list[str], graph_paths: list[str],
                analysis: dict[str, Any]) -> dict[str, int]:
    params = Params.from_dict(analysis)

    def build(doc: dict[str, Any], emb_path: str, prov: dict[str, Any]) -> dict[str, Any]:
        seg = SegmentedTrace.from_dict(doc["segmentation"], doc["text"], load_embeddings(emb_path))
        try:
            g = graph_of(seg, params, attrs={"unit": doc["trace_id"]})
        except InvariantError as exc:
            return unit_doc(doc["unit"], "excluded", prov, str(exc), "graph", trace_id=doc["trace_id"],
                            ids=doc["ids"])
        return unit_doc(doc["unit"], "ok", prov, trace_id=doc["trace_id"], ids=doc["ids"], graph=g.to_node_link())

    return transform_batch(seg_paths, emb_paths, graph_paths, code_modules(graph_shard), analysis, build, stage="graph")

