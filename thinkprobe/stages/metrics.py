"""Stage ``metrics``: the 19 metrics of every Thought Graph of an analysis batch (:mod:`.batches`)."""

from __future__ import annotations

from typing import Any

from ..codedeps import code_modules
from ..graph import ThoughtGraph
from ..lexicon import load_hedges
from ..metrics import compute_metrics
from ..params import Params
from .batches import transform_batch
from .unitfiles import load_embeddings, unit_doc



def metrics_shard(graph_paths: list[str], emb_paths: list[str], metric_paths: list[str],
                  analysis: dict[str, Any]) -> dict[str, int]:
    params = Params.from_dict(analysis)
    hedges = load_hedges(params.metrics.hedge_lexicon or None)

    def build(doc: dict[str, Any], emb_path: str, prov: dict[str, Any]) -> dict[str, Any]:
        g = ThoughtGraph.from_node_link(doc["graph"], load_embeddings(emb_path))
        return unit_doc(doc["unit"], "ok", prov, trace_id=doc["trace_id"], ids=doc["ids"],
                        metrics=compute_metrics(g, params.metrics, hedges))

    return transform_batch(graph_paths, emb_paths, metric_paths, code_modules(metrics_shard), analysis, build,
                           stage="metrics")

