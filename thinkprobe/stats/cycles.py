"""Simple directed cycles in Thought Graphs (paper Appendix F).

A simple directed cycle is a closed walk ``v_1 -> ... -> v_L -> v_1`` through L distinct nodes; its length
is L (nodes). Parallel edges of different types between the same two TUs are one arc here (a cycle is a
node sequence), so the count is that of the simple digraph underlying the Thought Graph.

Enumeration uses ``networkx.simple_cycles`` (Johnson's algorithm: time O((V + E)(C + 1)) for C cycles),
stopped after ``cap`` cycles (config ``stats.cycle_cap``). The number of simple cycles of a dense
digraph grows exponentially with its size, so without a cap one pathological graph could stall a job;
with it, the work per trace is bounded by about ``cap * (V + E)``. A capped trace reports ``n_cycles =
cap`` and ``capped = True``: its count is a lower bound, and the summaries say how many traces were capped;
when any trace of a group was capped, that group's count statistics (mean, quantiles, max, total) are lower
bounds too (``counts_are_lower_bounds``), and the figure and the results summary print them with ">=".
Prevalence is exact either way (a capped trace has a cycle); cycle lengths are those of the cycles found.

Subgraphs (the paper's decomposition): ``full`` (every edge type), ``seq+synt`` (SEQ and SYNT edges only)
and ``elab+back`` (ELAB and BACK only). The paper reports cycles arising from SYNT arcs closing over the
SEQ backbone and none in ``elab+back``.
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

SUBGRAPHS: dict[str, frozenset[str] | None] = {
    "full": None,
    "seq+synt": frozenset({"SEQ", "SYNT"}),
    "elab+back": frozenset({"ELAB", "BACK"}),
}
CYCLE_COLUMNS = ["trace_id", "model", "question_set", "question_id", "run", "domain", "subgraph", "n_nodes",
                 "n_arcs", "n_cycles", "capped", "has_cycle", "mean_length", "median_length", "max_length",
                 "length_counts"]
SUMMARY_COLUMNS = ["model", "subgraph", "n_traces", "prevalence", "mean", "median", "q1", "q3", "max",
                   "n_capped", "n_cycles_total", "median_length", "counts_are_lower_bounds"]


def simple_cycles(n_nodes: int, edges: Iterable[tuple[int, int, str]], edge_types: Iterable[str] | None = None,
                  cap: int = 10_000) -> tuple[list[int], bool]:
    """Lengths of the simple directed cycles (at most ``cap`` of them) and whether the cap was hit.

    ``edges`` are ``(source, target, edge_type)``; ``edge_types`` keeps only those types (None: all).

    >>> simple_cycles(3, [(0, 1, "SEQ"), (1, 2, "SEQ"), (2, 0, "SYNT"), (1, 0, "BACK")])
    ([2, 3], False)
    >>> lengths, capped = simple_cycles(3, [(0, 1, "SEQ"), (1, 2, "SEQ"), (2, 0, "SYNT"), (1, 0, "BACK")], cap=1)
    >>> len(lengths), capped
    (1, True)
    """
    import networkx as nx

    if cap < 1:
        raise ValueError(f"cap must be >= 1, got {cap}")
    keep = None if edge_types is None else set(edge_types)
    g = nx.DiGraph()
    g.add_nodes_from(range(n_nodes))
    g.add_edges_from((int(u), int(v)) for u, v, t in edges if (keep is None or t in keep) and u != v)
    found = [len(c) for c in islice(nx.simple_cycles(g), cap + 1)]
    capped = len(found) > cap
    return sorted(found[:cap]), capped


def _length_summary(lengths: Sequence[int]) -> dict[str, Any]:
    if not lengths:
        return {"mean_length": float("nan"), "median_length": float("nan"), "max_length": 0, "length_counts": []}
    arr = np.asarray(lengths, dtype=int)
    return {"mean_length": float(arr.mean()), "median_length": float(np.median(arr)), "max_length": int(arr.max()),
            "length_counts": np.bincount(arr).astype(int).tolist()}


def graph_cycle_rows(graph: dict[str, Any], ids: dict[str, str], cap: int = 10_000,
                     subgraphs: dict[str, frozenset[str] | None] = SUBGRAPHS) -> list[dict[str, Any]]:
    """One row per subgraph for one node-link Thought Graph (``edges`` with ``source, target, edge_type``)."""
    n = len(graph.get("nodes", []))
    edges = [(int(e["source"]), int(e["target"]), str(e["edge_type"])) for e in graph.get("edges", [])]
    rows = []
    for name, types in subgraphs.items():
        lengths, capped = simple_cycles(n, edges, types, cap)
        arcs = {(u, v) for u, v, t in edges if (types is None or t in types) and u != v}
        rows.append({**{k: ids.get(k, "") for k in CYCLE_COLUMNS[:6]}, "subgraph": name, "n_nodes": n,
                     "n_arcs": len(arcs), "n_cycles": len(lengths), "capped": capped,
                     "has_cycle": bool(lengths), **_length_summary(lengths)})
    return rows


def cycle_summary(cycles: pd.DataFrame) -> pd.DataFrame:
    """Prevalence, count distribution (mean, median, quartiles, max) and median cycle length per model and
    subgraph, plus ``model = "(all)"`` over every trace."""
    if cycles.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    rows = []
    for model, part in [("(all)", cycles)] + list(cycles.groupby("model", sort=True)):
        for sub, grp in part.groupby("subgraph", sort=False):
            counts = grp["n_cycles"].to_numpy(dtype=float)
            hist = _sum_counts(grp["length_counts"])
            rows.append({"model": model, "subgraph": sub, "n_traces": len(grp),
                         "prevalence": float((counts > 0).mean()), "mean": float(counts.mean()),
                         "median": float(np.median(counts)), "q1": float(np.percentile(counts, 25)),
                         "q3": float(np.percentile(counts, 75)), "max": float(counts.max()),
                         "n_capped": int(grp["capped"].sum()), "n_cycles_total": int(counts.sum()),
                         "median_length": _median_from_counts(hist),
                         "counts_are_lower_bounds": bool(grp["capped"].any())})
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def _sum_counts(series: Iterable[Sequence[int]]) -> np.ndarray:
    total = np.zeros(0, dtype=np.int64)
    for counts in series:
        c = np.asarray(list(counts) if counts is not None else [], dtype=np.int64)
        if len(c) > len(total):
            total = np.pad(total, (0, len(c) - len(total)))
        total[:len(c)] += c
    return total


def _median_from_counts(hist: np.ndarray) -> float:
    """Median of the values whose histogram (index = value) is ``hist`` (NaN when empty).

    >>> _median_from_counts(np.array([0, 0, 1, 2]))
    3.0
    """
    total = int(hist.sum())
    if total == 0:
        return float("nan")
    cum = np.cumsum(hist)
    lo = int(np.searchsorted(cum, (total - 1) // 2 + 1))
    hi = int(np.searchsorted(cum, total // 2 + 1))
    return (lo + hi) / 2.0
