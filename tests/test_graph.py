"""Layers 3-4, node classification rules and invariants on hand-made embeddings."""

from __future__ import annotations

import numpy as np
import pytest

from thinkprobe.graph import (InvariantError, ThoughtGraph, build_graph, check_invariants, classify_nodes,
                              cross_segment_arcs, semantic_trajectory)
from thinkprobe.params import ClassificationParams, CrossSegmentParams, TrajectoryParams

pytestmark = pytest.mark.fast


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
    edges, segments, th, bounds = semantic_trajectory(["none"] * 9, emb, TrajectoryParams())
    assert th["tau_branch"] == pytest.approx(np.percentile(sims, 25))
    assert th["tau_elab"] == pytest.approx(np.percentile(sims, 65))
    # every consecutive pair has its SEQ edge (the backbone); typed transitions add one BRCH or ELAB edge
    assert sorted((u, v) for u, v, k in edges if k == "SEQ") == [(j - 1, j) for j in range(1, 9)]
    kinds = [next((k for u, v, k in edges if v == j and k != "SEQ"), "SEQ") for j in range(1, 9)]
    # sorted: .1 .2 .3 .5 .6 .7 .9 .95; P25 at rank 1.75 = 0.275 -> 0.1 and 0.2 branch;
    # P65 at rank 4.55 = 0.6 + 0.55 * 0.1 = 0.655 -> 0.7, 0.9 and 0.95 elaborate; the rest are SEQ only
    assert th["tau_elab"] == pytest.approx(0.655)
    assert kinds == ["ELAB", "BRCH", "SEQ", "ELAB", "SEQ", "ELAB", "SEQ", "BRCH"]
    assert len(edges) == 8 + 5
    assert segments == [0, 0, 1, 1, 1, 1, 1, 1, 2]
    # the two BRCH transitions are branch boundaries (TUs 2 and 8); the rest stay none
    assert bounds == ["none", "none", "branch", "none", "none", "none", "none", "none", "branch"]


def test_layer3_has_only_seq_elab_brch_and_the_branch_override():
    """Algorithm 1: layer 3 builds E0 from SEQ, ELAB and BRCH; SYNT/BACK/CRIT come only from layer 4."""
    emb = chain([0.9, 0.95, 0.99, 0.01])
    edges, segments, th, bounds = semantic_trajectory(["none", "branch", "convergence", "backtrack", "none"],
                                                      emb, TrajectoryParams())
    # sorted sims .01 .9 .95 .99: P25 = .01 + .75 * .89 = .6775, P65 = .9 + .95 * .05 = .9475;
    # the branch class forces BRCH at 1 (s = .9 would be SEQ); convergence and backtrack add no edge
    assert th["tau_branch"] == pytest.approx(0.6775) and th["tau_elab"] == pytest.approx(0.9475)
    assert [e for e in edges if e[2] != "SEQ"] == [(0, 1, "BRCH"), (1, 2, "ELAB"), (2, 3, "ELAB"), (3, 4, "BRCH")]
    assert [e for e in edges if e[2] == "SEQ"] == [(j - 1, j, "SEQ") for j in range(1, 5)]
    assert segments == [0, 1, 1, 1, 2]
    assert bounds == ["none", "branch", "convergence", "backtrack", "branch"]


def test_layer4_synthesis_needs_two_prior_segments_above_threshold():
    a, b, c = unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)
    bridge = unit(1, 1, 0)  # cos 0.707 with a and b
    emb = np.stack([a, a, b, b, c, bridge])
    segments = [0, 0, 1, 1, 2, 2]
    edges, bounds = cross_segment_arcs(["none"] * 6, emb, segments, CrossSegmentParams())
    # v5: centroids of segments 0 and 1 at 0.707 > 0.50, and its own segment without it (= c) at 0 < 0.707
    assert {e for e in edges if e[2] == "SYNT"} == {(5, 0, "SYNT"), (5, 2, "SYNT")}
    assert bounds[5] == "convergence" and bounds[4] == "none"
    edges, _ = cross_segment_arcs(["none"] * 6, emb, segments, CrossSegmentParams(synthesis_similarity=0.8))
    assert not [e for e in edges if e[2] == "SYNT"]


def test_layer4_synthesis_must_draw_more_on_prior_threads_than_on_its_own():
    """Our reading: a TU closer to its own thread than to the prior segments is no synthesis."""
    a, b = unit(1, 0, 0), unit(0, 1, 0)
    bridge = unit(1, 1, 0)
    own = unit(1, 1, 0.3)  # cos 0.97 with bridge: more than bridge's 0.707 with segments 0 and 1
    emb = np.stack([a, a, b, b, own, bridge])
    edges, bounds = cross_segment_arcs(["none"] * 6, emb, [0, 0, 1, 1, 2, 2], CrossSegmentParams())
    assert not [e for e in edges if e[2] == "SYNT" and e[0] == 5] and bounds[5] == "none"


def test_layer4_synthesis_targets_are_capped():
    dims = 12
    emb = [unit(*np.eye(dims)[k] + 0.0) for k in range(10)]
    bridge = unit(*np.r_[np.ones(10), 0, 0])  # cos 0.316 with each of 10 segments
    emb = np.stack(emb + [bridge])
    segments = list(range(11))
    p = CrossSegmentParams(synthesis_similarity=0.3, synthesis_max_targets=3)
    edges, _ = cross_segment_arcs(["none"] * 11, emb, segments, p)
    assert len([e for e in edges if e[2] == "SYNT"]) == 3


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


def test_backward_arc_is_crit_from_a_backtrack_tu_and_back_otherwise():
    """Algorithm 1: a backtrack-class TU with a backward arc emits CRIT; any other class emits BACK."""
    x, y = unit(1, 0), unit(0, 1)
    near_x = unit(1, 0.2)
    emb = np.stack([y, x, y, y, y, y, near_x])
    segments = [0, 0, 1, 1, 1, 1, 2]
    for cls, kind in [("backtrack", "CRIT"), ("meta", "BACK"), ("none", "BACK")]:
        edges, _ = cross_segment_arcs(["none"] * 6 + [cls], emb, segments, CrossSegmentParams())
        assert [e for e in edges if e[0] == 6 and e[2] in ("BACK", "CRIT")] == [(6, 1, kind)], cls


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
    # rule 2 also takes the backtrack class and an outgoing CRIT; v0 is HYP whatever its class
    types = classify_nodes(["meta", "backtrack", "none"], [(0, 1, "SEQ"), (1, 2, "SEQ"), (2, 0, "CRIT")],
                           emb[:3], p)
    assert types == ["HYP", "CRT", "CRT"]


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
