"""Stage ``metrics``: the 19 metrics of every Thought Graph of a question shard."""

from __future__ import annotations

from typing import Any

from ..graph import ThoughtGraph
from ..lexicon import load_hedges
from ..metrics import compute_metrics
from ..params import Params
from .unitfiles import load_embeddings, passthrough, read_unit, unit_doc, unit_provenance, write_unit

MODULES = ["metrics", "graph", "lexicon", "lexicons/hedges.txt", "outputs", "stages.unitfiles", "stages.metrics"]


def metrics_shard(graph_paths: list[str], emb_paths: list[str], metric_paths: list[str],
                  analysis: dict[str, Any]) -> dict[str, int]:
    params = Params.from_dict(analysis)
    hedges = load_hedges(params.metrics.hedge_lexicon or None)
    counts = {"ok": 0, "missing": 0, "excluded": 0}
    for graph_path, emb_path, out_path in zip(graph_paths, emb_paths, metric_paths):
        doc = read_unit(graph_path)
        prov = unit_provenance(MODULES, analysis, [graph_path, emb_path])
        if doc["status"] != "ok":
            out = passthrough(doc, prov)
        else:
            g = ThoughtGraph.from_node_link(doc["graph"], load_embeddings(emb_path))
            out = unit_doc(doc["unit"], "ok", prov, trace_id=doc["trace_id"], ids=doc["ids"],
                           metrics=compute_metrics(g, params.metrics, hedges))
        write_unit(out_path, out)
        counts[out["status"]] += 1
    return counts
