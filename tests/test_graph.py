"""Layers 3-4, node classification rules and invariants on hand-made embeddings."""

from __future__ import annotations

import numpy as np
import pytest

from thinkprobe.graph import (InvariantError, ThoughtGraph, build_graph, check_invariants, classify_nodes,
                              cross_segment_arcs, semantic_trajectory)
from thinkprobe.params import ClassificationParams, CrossSegmentParams, TrajectoryParams


def unit(*v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def chain(sims):
    """Unit vectors in the plane whose consecutive cosines are exactly ``sims``."""
    angles = np.concatenate([[0.0], np.cumsum(np.arccos(sims))])
    return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float64)


def test_layer3_percentile_thresholds_type_each_transition():
    sims = [0.9, 0.1, 0.5, 0.7, 0.3, 0.95, 0.6, 0.2]
    emb = chain(sims)
    edges, segments, th = semantic_trajectory(["none"] * 9, emb, TrajectoryParams())
    assert th["tau_branch"] == pytest.approx(np.percentile(sims, 25))
    assert th["tau_elab"] == pytest.approx(np.percentile(sims, 65))
    kinds = [k for _, _, k in sorted(edges)]
    # sorted: .1 .2 .3 .5 .6 .7 .9 .95; P25 at rank 1.75 = 0.275 -> 0.1 and 0.2 branch;
    # P65 at rank 4.55 = 0.6 + 0.55 * 0.1 = 0.655 -> 0.7, 0.9 and 0.95 elaborate; the rest are SEQ
    assert th["tau_elab"] == pytest.approx(0.655)
    assert kinds == ["ELAB", "BRCH", "SEQ", "ELAB", "SEQ", "ELAB", "SEQ", "BRCH"]
    assert segments == [0, 0, 1, 1, 1, 1, 1, 1, 2]


def test_layer3_overrides_beat_cosine():
    emb = chain([0.99, 0.99, 0.99, 0.01])
    edges, segments, _ = semantic_trajectory(["none", "branch", "convergence", "backtrack", "none"], emb,
                                             TrajectoryParams())
    assert set(edges) == {(0, 1, "BRCH"), (1, 2, "SEQ"), (2, 1, "SYNT"), (2, 3, "SEQ"), (3, 2, "BACK"),
                          (3, 4, "BRCH")}
    assert segments == [0, 1, 1, 1, 2]


def test_layer4_synthesis_needs_two_prior_segments_above_threshold():
    a, b, c = unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)
    bridge = unit(1, 1, 0)  # cos 0.707 with a and b
    emb = np.stack([a, a, b, b, c, bridge])
    segments = [0, 0, 1, 1, 2, 2]
    edges, bounds = cross_segment_arcs(["none"] * 6, emb, segments, CrossSegmentParams())
    assert {e for e in edges if e[2] == "SYNT"} == {(5, 0, "SYNT"), (5, 2, "SYNT")}
    assert bounds[5] == "convergence" and bounds[4] == "none"
    edges, _ = cross_segment_arcs(["none"] * 6, emb, segments, CrossSegmentParams(synthesis_similarity=0.8))
    assert not [e for e in edges if e[2] == "SYNT"]


def test_layer4_revision_arc_conditions():
    x, y = unit(1, 0), unit(0, 1)
    near_x = unit(1, 0.2)  # cos 0.98 with x
    emb = np.stack([y, x, y, y, y, y, near_x])
    segments = [0, 0, 1, 1, 1, 1, 2]
    edges, _ = cross_segment_arcs(["none"] * 7, emb, segments, CrossSegmentParams())
    # v6 returns to v1: different segment, gap 5 >= 4, v2 in (1, 5) has cos 0 < 0.45 with v1
    assert (6, 1, "BACK") in edges
    # v1's successors all stay on x: no divergence, so no revision arc back to v1 (or anywhere)
    emb2 = np.stack([y, x, x, x, x, x, near_x])
    edges2, _ = cross_segment_arcs(["none"] * 7, emb2, segments, CrossSegmentParams())
    assert not [e for e in edges2 if e[2] == "BACK"]


def test_crit_from_backtrack_to_most_similar_non_adjacent_tu():
    emb = np.stack([unit(1, 0), unit(0, 1), unit(0, 1), unit(1, 0.1)])
    edges, _ = cross_segment_arcs(["none", "none", "none", "backtrack"], emb, [0, 0, 0, 0], CrossSegmentParams())
    assert edges == [(3, 0, "CRIT")]


def test_classification_priority_rules():
    p = ClassificationParams()
    emb = np.stack([unit(1, 0), unit(1, 1), unit(0, 1), unit(0, 1), unit(0, 1), unit(0, 1), unit(0, 1),
                    unit(0, 1), unit(0, 1)])
    bounds = ["none", "none", "none", "meta", "contrast", "support", "convergence", "none", "meta"]
    edges = [(0, 1, "BRCH"), (1, 2, "BRCH"), (2, 3, "SEQ"), (3, 4, "SEQ"), (4, 5, "SEQ"), (5, 6, "SEQ"),
             (6, 7, "SEQ"), (7, 8, "BRCH"), (7, 0, "SYNT"), (7, 1, "SYNT"), (8, 0, "BACK")]
    types = classify_nodes(bounds, edges, emb, p)
    # 0 default HYP; 1 BRCH-in, cos(v1,v0)=0.707 in (0.25,0.72) -> RFR; 2 BRCH-in, cos 0 -> HYP; 3 MET;
    # 4 CMP; 5 JUS; 6 SYN (class); 7 two SYNT targets -> SYN; 8 BACK out beats meta and BRCH-in -> CRT
    assert types == ["HYP", "RFR", "HYP", "MET", "CMP", "JUS", "SYN", "SYN", "CRT"]


def _graph(edges, types, n):
    return ThoughtGraph(["t"] * n, [(0, 1)] * n, ["none"] * n, types, [0] * n, edges, np.eye(n), [1] * n)


@pytest.mark.parametrize("edges, types, invariant", [
    ([(0, 0, "SEQ")], ["HYP"], "no-self-loops"),
    ([(0, 5, "SEQ")], ["HYP", "SPC"], "valid-endpoints"),
    ([(0, 1, "ELAB"), (1, 0, "ELAB")], ["HYP", "SPC"], "elab-acyclic"),
    ([(1, 0, "SEQ")], ["HYP", "SPC"], "reachable-from-v0"),
    ([(0, 1, "SEQ")], ["MET", "SPC"], "exploration-node"),
])
def test_each_invariant_is_enforced(edges, types, invariant):
    with pytest.raises(InvariantError) as info:
        check_invariants(_graph(edges, types, len(types)))
    assert info.value.invariant == invariant


def test_build_graph_layers_for_ablation():
    emb = chain([0.9, 0.1, 0.5, 0.7, 0.3, 0.95, 0.6, 0.2])
    args = (["t"] * 9, [(0, 1)] * 9, ["none"] * 9, emb, [1] * 9, TrajectoryParams(), CrossSegmentParams(),
            ClassificationParams())
    l1 = build_graph(*args, layers="l1")
    assert {k for _, _, k in l1.edges} == {"SEQ"} and len(l1.edges) == 8
    l3 = build_graph(*args, layers="l3")
    assert {"BRCH", "ELAB"} <= {k for _, _, k in l3.edges}
    with pytest.raises(ValueError):
        build_graph(*args, layers="l2")
