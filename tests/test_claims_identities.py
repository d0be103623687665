"""The identities of thinkprobe/stats/claims.py, proved on random graphs and tables (property tests), and the
rules that keep them apart from the replications: never counted, each named by its test, each replication's
criterion quoted from the paper's own text."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from thinkprobe.graph import build_graph
from thinkprobe.metrics import (backtracking_rate, branching_factor, cross_branch_connectivity, revision_depth)
from thinkprobe.params import Params
from thinkprobe.profile import dimension_map, trace_profiles
from thinkprobe.segmentation import BOUNDARY_CLASSES
from thinkprobe.stats import claims
from thinkprobe.stats.register import load_register
from thinkprobe.stats.cycles import graph_cycle_rows, simple_cycles
from thinkprobe.vocabulary import LENGTH_METRICS, METRIC_NAMES

pytestmark = pytest.mark.fast

REPO = Path(__file__).resolve().parents[1]
PAPER = Path(os.environ.get("THINKPROBE_PAPER", REPO.parent / "shared" / "papers" / "thinkprobe-paper.md"))
P = Params()
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def random_graph(seed: int, n: int, layers: str, topics: int = 3, noise: float = 0.6):
    """A Thought Graph built by thinkprobe's layers from random TUs: embeddings scattered around a few random
    topic centres (so similarities span the thresholds), random layer-1 boundary classes."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, 8))
    emb = centres[rng.integers(0, topics, n)] + noise * rng.normal(size=(n, 8))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    boundaries = ["none"] + list(rng.choice(BOUNDARY_CLASSES, n - 1, p=[0.6, 0.1, 0.05, 0.1, 0.1, 0.025, 0.025]))
    texts = [f"tu {i}" for i in range(n)]
    return build_graph(texts, [(i, i + 1) for i in range(n)], boundaries, emb, [5] * n, P.trajectory,
                       P.cross_segment, P.classification, layers)


graphs = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 5), st.floats(0.2, 1.5))


@PROPERTY
@given(graphs)
def test_elab_back_subgraph_is_acyclic(spec):
    seed, n, topics, noise = spec
    g = random_graph(seed, n, "l4", topics, noise)
    lengths, capped = simple_cycles(g.n, g.edges, {"ELAB", "BACK"}, cap=1000)
    assert lengths == [] and not capped


def test_the_random_graphs_hold_what_the_identities_are_about():
    """Not vacuous: the random graphs have ELAB and BACK edges together, SYNT arcs and cycles."""
    kinds = {"elab+back": 0, "synt": 0, "cycle": 0}
    for seed in range(60):
        g = random_graph(seed, 30, "l4")
        types = {t for _, _, t in g.edges}
        kinds["elab+back"] += {"ELAB", "BACK"} <= types
        kinds["synt"] += "SYNT" in types
        kinds["cycle"] += bool(simple_cycles(g.n, g.edges, cap=10)[0])
    assert min(kinds.values()) >= 10, kinds


@PROPERTY
@given(graphs)
def test_layer_one_has_no_typed_edges(spec):
    seed, n, topics, noise = spec
    g = random_graph(seed, n, "l1", topics, noise)
    assert {t for _, _, t in g.edges} <= {"SEQ"}
    assert (branching_factor(g), backtracking_rate(g), cross_branch_connectivity(g), revision_depth(g)) == (0, 0, 0, 0)


@PROPERTY
@given(graphs)
def test_layer_three_always_branches(spec):
    seed, n, topics, noise = spec
    g = random_graph(seed, n, "l3", topics, noise)
    sims = np.einsum("ij,ij->i", g.embeddings[:-1], g.embeddings[1:])
    if n >= 3 and np.ptp(sims) > 0:
        assert branching_factor(g) > 0


@PROPERTY
@given(graphs)
def test_no_backward_arc_before_layer_four(spec):
    seed, n, topics, noise = spec
    g = random_graph(seed, n, "l3", topics, noise)
    assert all(u < v for u, v, _ in g.edges)  # every edge points forward
    assert (revision_depth(g), backtracking_rate(g), cross_branch_connectivity(g)) == (0, 0, 0)


edges = st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.sampled_from(["SEQ", "BRCH", "ELAB", "BACK",
                                                                                    "SYNT", "CRIT"])), max_size=40)


@PROPERTY
@given(edges)
def test_a_subgraph_has_no_more_cycles_than_the_graph(es):
    graph = {"nodes": [{}] * 10, "edges": [{"source": u, "target": v, "edge_type": t} for u, v, t in es]}
    rows = {r["subgraph"]: r for r in graph_cycle_rows(graph, {}, cap=100_000)}
    for sub in ("seq+synt", "elab+back"):
        assert rows[sub]["n_cycles"] <= rows["full"]["n_cycles"]
        assert rows[sub]["has_cycle"] <= rows["full"]["has_cycle"]


metric_tables = st.tuples(st.integers(0, 2**32 - 1), st.integers(3, 60), st.sampled_from(["table2", "app_g"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(metric_tables)
def test_length_exclusion_changes_only_the_dimensions_that_hold_length_metrics(spec):
    seed, n, dims = spec
    rng = np.random.default_rng(seed)
    m = pd.DataFrame(rng.lognormal(size=(n, len(METRIC_NAMES))), columns=list(METRIC_NAMES))
    m["model"] = rng.choice(["a", "b", "c"], n)
    full, _ = trace_profiles(m, dimensions=dims)
    reduced, _ = trace_profiles(m, tuple(LENGTH_METRICS), dimensions=dims)
    for dim, members in dimension_map(dims).items():
        if not set(members) & set(LENGTH_METRICS):
            assert np.array_equal(full[dim].to_numpy(), reduced[dim].to_numpy()), dim


# ----------------------------------------------------------------- identities are checks, not replications

def test_every_identity_names_a_property_test_of_this_module_and_none_is_a_replication():
    here = Path(__file__)
    defined = {n.name for n in ast.parse(here.read_text()).body if isinstance(n, ast.FunctionDef)}
    for ident in claims.IDENTITIES.values():
        path, name = ident.test.split("::")
        assert path == f"tests/{here.name}" and name in defined, ident.key
    register_ids = {r["id"] for r in load_register()}
    assert not set(claims.IDENTITIES) & register_ids
    assert not set(claims.NOT_COMPARABLE) & register_ids
    for r in load_register():  # a register criterion true by construction names one of these identities
        for c in r.get("criteria", []):
            if "identity" in c:
                assert c["identity"] in claims.IDENTITIES or c["identity"] == "by_construction", r["id"]


def test_identities_and_not_comparable_rows_are_absent_from_the_replication_count():
    rows = pd.DataFrame([{**{c: "" for c in claims.CLAIM_COLUMNS}, "kind": k, "verdict": v}
                         for k, v in [("replication", claims.REPLICATES), ("replication", claims.FAILS),
                                      ("replication", claims.INCONCLUSIVE), ("identity", "holds"),
                                      ("identity", "holds"), ("not_comparable", "not comparable")]])
    c = claims.counts(rows)
    assert (c["replications"], c[claims.REPLICATES], c[claims.FAILS], c[claims.INCONCLUSIVE]) == (3, 1, 1, 1)
    assert c["identities"] == 2 and c["not_comparable"] == 1


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_each_identity_and_not_comparable_finding_is_quoted_from_the_paper():
    """The sentences behind each identity and not-comparable finding are the paper's, verbatim (the register's
    sentences are checked in tests/test_claims_register.py)."""
    if not PAPER.is_file():
        pytest.skip(f"the paper's text is not at {PAPER} (set THINKPROBE_PAPER)")
    text = _normal(PAPER.read_text(encoding="utf-8"))
    quoted = [(i.key, q) for i in claims.IDENTITIES.values() for q in i.quote]
    quoted += [(n.key, q) for n in claims.NOT_COMPARABLE.values() for q in n.quote]
    missing = [(k, q) for k, q in quoted if _normal(q) not in text]
    assert not missing, missing


def test_register_thresholds_come_from_their_sentences():
    """Each criterion's number is printed in its sentence or is one of the register's fixed readings
    (Figure 3's lines 0.06 / 0.14, Figure 18's 0.2, near-universal 0.9, 0 for a sign, 0.5 for a majority)."""
    fixed = {0, 0.06, 0.14, 0.2, 0.9, 0.5, 1, 1.0, 2, 0.75}
    reg = {r["id"]: r for r in load_register()}
    for r in reg.values():
        for c in r.get("criteria", []):
            if "value" not in c:
                continue
            v = c["value"]
            quote = reg[c["value_from"]]["quote"] if "value_from" in c else r["quote"]
            printed = f"{abs(v):.2f}".rstrip("0").rstrip(".") in quote or str(v) in quote
            assert printed or v in fixed or v in (19, 5, -0.14, 4), (r["id"], v)  # all 19, five, 14%, fourfold


@pytest.mark.parametrize("lo,hi,verdict", [(0.2, 0.3, claims.REPLICATES), (0.01, 0.05, claims.FAILS),
                                           (0.1, 0.2, claims.INCONCLUSIVE), (np.nan, 0.2, claims.MISSING)])
def test_an_interval_that_straddles_its_criterion_is_inconclusive(lo, hi, verdict):
    from thinkprobe.stats.register import verdict as interval_verdict

    assert interval_verdict(">=", 0.14, lo, hi) == verdict
