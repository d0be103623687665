"""The 19 metrics on small graphs, cross-checked against networkx and scipy where a library computes the same thing."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage

from thinkprobe import metrics as M
from thinkprobe.graph import ThoughtGraph

pytestmark = pytest.mark.fast


def random_graph(seed: int, n: int = 14) -> ThoughtGraph:
    rng = np.random.default_rng(seed)
    types = ["HYP"] + list(rng.choice(["HYP", "RFR", "SPC", "JUS", "CRT", "MET", "SYN", "CMP"], size=n - 1))
    edges = []
    for j in range(1, n):
        edges.append((j - 1, j, str(rng.choice(["SEQ", "BRCH", "ELAB"]))))
    for _ in range(n):
        u, v = sorted(rng.choice(n, size=2, replace=False))
        edges.append((int(v), int(u), str(rng.choice(["BACK", "SYNT", "CRIT"]))))
    emb = rng.normal(size=(n, 8))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    segments = list(np.cumsum([0] + [e[2] == "BRCH" for e in edges[: n - 1]]))
    return ThoughtGraph(["perhaps x"] * n, [(0, 1)] * n, ["none"] * n, types, segments, edges, emb, [5] * n)


@pytest.mark.parametrize("seed", range(10))
def test_mec_is_networkx_longest_path_of_elab_subgraph(seed):
    g = random_graph(seed)
    elab = nx.DiGraph()
    elab.add_nodes_from(range(g.n))
    elab.add_edges_from((u, v) for u, v, t in g.edges if t == "ELAB")
    assert M.max_elaboration_chain(g) == nx.dag_longest_path_length(elab)


@pytest.mark.parametrize("seed", range(10))
def test_mbd_matches_networkx_shortest_paths_from_sources(seed):
    g = random_graph(seed)
    sem = nx.DiGraph()
    sem.add_nodes_from(range(g.n))
    sem.add_edges_from((u, v) for u, v, t in g.edges if t != "SEQ")
    dists = [d for s in sem if sem.in_degree(s) == 0
             for t, d in nx.single_source_shortest_path_length(sem, s).items() if t != s]
    assert M.mean_branch_depth(g) == pytest.approx(np.mean(dists) if dists else 0.0)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("threshold", [0.2, 0.45, 0.7])
def test_domain_spread_clusters_match_scipy_average_linkage(seed, threshold):
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(9, 5))
    emb[:4] += 3 * np.eye(5)[0]
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    z = linkage(emb, method="average", metric="cosine")
    expected = len(set(fcluster(z, t=1 - threshold, criterion="distance")))
    assert M.average_linkage_clusters(emb, threshold) == expected


def test_graph_density_counts_ordered_pairs_once():
    g = random_graph(3)
    pairs = {(u, v) for u, v, t in g.edges if t != "SEQ"}
    assert M.graph_density(g) == pytest.approx(len(pairs) / (g.n * (g.n - 1)))
    assert 0 <= M.graph_density(g) <= 1


def test_single_node_graph_scores_zero_where_undefined():
    g = ThoughtGraph(["one idea, perhaps"], [(0, 17)], ["none"], ["HYP"], [0], [], np.ones((1, 3)) / np.sqrt(3), [4])
    m = M.compute_metrics(g)
    assert m["BF"] == m["MEC"] == m["MBD"] == m["BR"] == m["CBC"] == m["CI"] == m["GD"] == m["RvD"] == 0
    assert m["RR"] == m["FID"] == 0 and m["DS"] == 1 and m["ATU"] == 1 and m["AT"] == 4
    assert m["EER"] == 1.0 and m["HD"] == 1.0
    assert all(np.isfinite(v) for v in m.values())


def test_metric_parameters_change_values():
    g = random_graph(5)
    assert M.redundancy_ratio(g, -1.0) == 1.0 and M.redundancy_ratio(g, 1.0) == 0.0
    assert M.domain_spread(g, -1.0) == 1.0
    assert M.first_idea_diversity(g, k=1) == 0.0


def test_dimensions_cover_each_metric_once():
    assert sorted(M.METRIC_NAMES) == sorted(set(M.METRIC_NAMES)) and len(M.METRIC_NAMES) == 19
    assert [len(v) for v in M.DIMENSIONS.values()] == [4, 2, 6, 3, 4]
