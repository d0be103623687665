"""The study's statistics, each checked against an independent computation (scipy directly, or by hand)."""

from __future__ import annotations

import json
from itertools import combinations
from math import comb, factorial

import numpy as np
import pandas as pd
import pytest
from scipy import stats as ss

from thinkprobe.metrics import DIMENSIONS, LENGTH_METRICS, METRIC_NAMES
from thinkprobe.stats import confound, correlation, cycles, discriminability, posthoc, robustness, stability

pytestmark = pytest.mark.fast


def _study(seed: int = 0, models: int = 4, questions: int = 12, runs: int = 2) -> pd.DataFrame:
    """A synthetic metrics table: models shift every metric by a model-specific amount; 3 domains."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(models):
        for q in range(questions):
            for r in range(1, runs + 1):
                rows.append({"trace_id": f"m{m}/s/q{q}/{r}", "model": f"m{m}", "question_set": "s",
                             "question_id": f"q{q}", "run": str(r), "domain": f"d{q % 3}",
                             **{k: rng.normal(0.4 * m, 1.0) + (10 if k == "AT" else 0) for k in METRIC_NAMES}})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------ Kruskal-Wallis

def test_epsilon_squared_on_a_hand_worked_example():
    # ranks 1..6, groups {1,2,3} and {4,5,6}: H = 12/(6*7) * (6^2/3 + 15^2/3) - 3*7 = 27/7
    res = discriminability.kruskal_wallis([1, 2, 3, 4, 5, 6], ["a"] * 3 + ["b"] * 3)
    assert res["H"] == pytest.approx(27 / 7)
    assert res["epsilon2"] == pytest.approx((27 / 7) * 7 / 35)  # H (n+1) / (n^2 - 1) = 27/35
    assert res["n"] == 6 and res["k"] == 2
    assert discriminability.epsilon_squared(12.0, 31) == pytest.approx(0.4)


def test_kruskal_table_matches_scipy_and_bonferroni_over_the_19_metrics():
    df = _study()
    table = discriminability.kruskal_table(df, METRIC_NAMES, ("model", "domain"))
    assert list(table.columns) == ["target", "kind", "grouping", "H", "p", "n", "k", "epsilon2", "p_bonferroni",
                                   "friedman_chi2", "p_friedman", "kendall_w", "n_blocks", "p_friedman_holm"]
    assert len(table) == 2 * 19
    for _, row in table.iterrows():
        samples = [g[row["target"]].to_numpy() for _, g in df.groupby(row["grouping"])]
        h, p = ss.kruskal(*samples)
        n = len(df)
        assert row["H"] == pytest.approx(h) and row["p"] == pytest.approx(p)
        assert row["epsilon2"] == pytest.approx(h * (n + 1) / (n ** 2 - 1))
        assert row["p_bonferroni"] == pytest.approx(min(1.0, p * 19))
        assert row["k"] == (4 if row["grouping"] == "model" else 3)
        if row["grouping"] == "model":  # every model answers every question: Friedman on the run means
            cells = df.groupby(["question_id", "model"])[row["target"]].mean().unstack()
            assert row["p_friedman"] == pytest.approx(ss.friedmanchisquare(*cells.to_numpy().T).pvalue)
            assert row["n_blocks"] == 12
        else:  # a question has one domain: no block holds every domain
            assert np.isnan(row["p_friedman"]) and row["n_blocks"] == 0


def test_a_constant_metric_has_no_effect_and_missing_groups_are_skipped():
    df = _study().assign(BF=1.0, domain="")
    table = discriminability.kruskal_table(df, ["BF", "UPC"], ("model", "domain"))
    assert set(table["grouping"]) == {"model"}  # every domain label empty: no domain test
    bf = table.set_index("target").loc["BF"]
    assert (bf["H"], bf["p"], bf["epsilon2"]) == (0.0, 1.0, 0.0)


def test_model_over_domain_ratio():
    k = pd.DataFrame([{"target": "AT", "kind": "metric", "grouping": "model", "epsilon2": 0.6},
                      {"target": "AT", "kind": "metric", "grouping": "domain", "epsilon2": 0.15},
                      {"target": "GD", "kind": "metric", "grouping": "model", "epsilon2": 0.1},
                      {"target": "GD", "kind": "metric", "grouping": "domain", "epsilon2": 0.2}])
    r = discriminability.model_over_domain(k).set_index("target")
    assert r.loc["AT", "ratio"] == pytest.approx(4.0) and bool(r.loc["AT", "model_dominates"])
    assert r.loc["GD", "ratio"] == pytest.approx(0.5) and not bool(r.loc["GD", "model_dominates"])


# ------------------------------------------------------------------------------------------------- Dunn

def _dunn_by_hand(values, groups):
    """Dunn (1964) z with the tie correction, two-sided p, Bonferroni over the pairs."""
    values, groups = np.asarray(values, float), np.asarray(groups)
    ranks = ss.rankdata(values)
    n = len(values)
    _, ties = np.unique(values, return_counts=True)
    tie_term = (ties ** 3 - ties).sum() / (12 * (n - 1))
    labels = sorted(set(groups))
    pairs = list(combinations(labels, 2))
    out = {}
    for a, b in pairs:
        ra, rb = ranks[groups == a], ranks[groups == b]
        se = np.sqrt((n * (n + 1) / 12 - tie_term) * (1 / len(ra) + 1 / len(rb)))
        z = abs(ra.mean() - rb.mean()) / se
        out[(a, b)] = min(1.0, 2 * ss.norm.sf(z) * len(pairs))
    return out


def test_dunn_matches_a_hand_computation_with_ties():
    rng = np.random.default_rng(3)
    values = np.round(np.concatenate([rng.normal(0, 1, 15), rng.normal(1, 1, 15), rng.normal(1.5, 1, 15)]), 1)
    groups = ["x"] * 15 + ["y"] * 15 + ["z"] * 15
    got = posthoc.dunn_pairs(values, groups)
    expected = _dunn_by_hand(values, groups)
    assert len(got) == 3
    for _, row in got.iterrows():
        assert row["p_adj"] == pytest.approx(expected[(row["group_a"], row["group_b"])], rel=1e-9)


def test_dunn_table_contract_and_stars():
    table = posthoc.dunn_table(_study(), ["BF", "AT"])
    assert list(table.columns[:4]) == ["target", "group_a", "group_b", "p_adj"]
    assert len(table) == 2 * comb(4, 2)
    assert [posthoc.significance_stars(p) for p in (0.0005, 0.005, 0.02, 0.2)] == ["***", "**", "*", "ns"]


# ---------------------------------------------------------------------------------- Spearman + Ward

def test_spearman_matches_scipy_and_ward_groups_planted_clusters():
    rng = np.random.default_rng(1)
    base = rng.normal(size=(200, 3))
    df = pd.DataFrame({m: base[:, i % 3] + 0.5 * rng.normal(size=200) for i, m in enumerate(METRIC_NAMES)})
    long = correlation.spearman_table(df, METRIC_NAMES)
    assert len(long) == 19 * 19
    row = long[(long.metric_a == "BF") & (long.metric_b == "MEC")].iloc[0]
    ref = ss.spearmanr(df["BF"], df["MEC"])
    assert row["rho"] == pytest.approx(ref.statistic) and row["p"] == pytest.approx(ref.pvalue)
    order = correlation.ward_order(correlation.matrix_from_table(long, ordered=False))
    cluster_of = {m: i % 3 for i, m in enumerate(METRIC_NAMES)}
    labels = [cluster_of[m] for m in order]
    assert sum(a != b for a, b in zip(labels, labels[1:])) == 2  # three contiguous blocks


def test_constant_metric_has_nan_correlation_but_clusters():
    df = _study().assign(HD=0.0)
    long = correlation.spearman_table(df, METRIC_NAMES)
    assert long[(long.metric_a == "HD") & (long.metric_b == "BF")]["rho"].isna().all()
    assert sorted(long["ward_position_a"].unique()) == list(range(19))


# -------------------------------------------------------------------------------------------- stability

def test_run_to_run_cv_by_hand():
    df = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 2, "question_set": "s", "question_id": ["q1", "q1", "q2", "q2",
                                                                                           "q1", "q1"],
                       "run": ["1", "2", "1", "2", "1", "2"], "BF": [2.0, 4.0, 1.0, 1.0, 0.0, 0.0]})
    cv = stability.run_cv(df, ["BF"]).set_index("model")
    # a: q1 sd=sqrt(2), mean 3 -> 0.4714; q2 sd 0 -> 0; mean 0.2357. b: mean 0 -> no CV
    assert cv.loc["a", "cv"] == pytest.approx((np.sqrt(2) / 3 + 0) / 2)
    assert cv.loc["a", "n_questions"] == 2 and np.isnan(cv.loc["b", "cv"])
    assert stability.run_cv(df[df.run == "1"], ["BF"]).empty  # one run: no CV


def test_cosine_table_matches_numpy():
    prof = pd.DataFrame({"model": ["a", "b", "c"], "Breadth": [1.0, -1.0, 0.5], "Depth": [0.0, 1.0, 0.5],
                         "Structure": [2.0, 0.0, 0.0], "Metacognition": [0.0, 0.0, 0.0], "Efficiency": [1, 1, 0]})
    cos = stability.cosine_table(prof, list(DIMENSIONS)).set_index(["model_a", "model_b"])["cosine"]
    u, v = prof.iloc[0, 1:].to_numpy(float), prof.iloc[1, 1:].to_numpy(float)
    assert cos[("a", "b")] == pytest.approx(u @ v / np.linalg.norm(u) / np.linalg.norm(v))
    assert cos[("a", "a")] == pytest.approx(1.0) and len(cos) == 9


# ----------------------------------------------------------------------------------------------- cycles

def _complete_digraph(n):
    return [(u, v, "SEQ") for u in range(n) for v in range(n) if u != v]


def test_cycle_counts_on_hand_made_graphs():
    # complete digraph on 4 nodes: sum_k C(4,k) (k-1)! = 6 + 8 + 6 = 20 simple cycles
    lengths, capped = cycles.simple_cycles(4, _complete_digraph(4))
    assert len(lengths) == sum(comb(4, k) * factorial(k - 1) for k in range(2, 5)) == 20 and not capped
    assert sorted(set(lengths)) == [2, 3, 4] and lengths.count(4) == 6
    # a chain 0->1->2->3 with SYNT 3->0 and BACK 2->1: cycles (0123) and (12); by subgraph
    edges = [(0, 1, "SEQ"), (1, 2, "SEQ"), (2, 3, "SEQ"), (3, 0, "SYNT"), (2, 1, "BACK"), (0, 2, "ELAB")]
    assert cycles.simple_cycles(4, edges)[0] == [2, 3, 4]  # (12), (023) via ELAB, (0123)
    assert cycles.simple_cycles(4, edges, {"SEQ", "SYNT"})[0] == [4]
    assert cycles.simple_cycles(4, edges, {"ELAB", "BACK"})[0] == []


def test_cycle_enumeration_is_capped():
    n_k7 = sum(comb(7, k) * factorial(k - 1) for k in range(2, 8))
    assert len(cycles.simple_cycles(7, _complete_digraph(7))[0]) == n_k7 == 2365
    lengths, capped = cycles.simple_cycles(7, _complete_digraph(7), cap=100)
    assert len(lengths) == 100 and capped
    # a complete digraph on 40 nodes has ~1e46 cycles; the cap makes it return
    lengths, capped = cycles.simple_cycles(40, _complete_digraph(40), cap=2000)
    assert len(lengths) == 2000 and capped


def test_cycle_rows_and_summary():
    graph = {"nodes": [{}] * 4, "edges": [{"source": u, "target": v, "edge_type": t} for u, v, t in
                                          [(0, 1, "SEQ"), (1, 2, "SEQ"), (2, 3, "SEQ"), (3, 0, "SYNT")]]}
    empty = {"nodes": [{}] * 3, "edges": [{"source": 0, "target": 1, "edge_type": "SEQ"}]}
    rows = (cycles.graph_cycle_rows(graph, {"trace_id": "t1", "model": "a"})
            + cycles.graph_cycle_rows(empty, {"trace_id": "t2", "model": "a"}))
    table = pd.DataFrame(rows)
    full = table[table.subgraph == "full"].set_index("trace_id")
    assert full.loc["t1", "n_cycles"] == 1 and full.loc["t1", "length_counts"] == [0, 0, 0, 0, 1]
    assert full.loc["t2", "n_cycles"] == 0 and not full.loc["t2", "has_cycle"]
    summary = cycles.cycle_summary(table).set_index(["model", "subgraph"])
    assert summary.loc[("a", "full"), "prevalence"] == 0.5
    assert summary.loc[("(all)", "full"), "mean"] == 0.5 and summary.loc[("a", "full"), "median_length"] == 4


# ---------------------------------------------------------------------------------------- length confound

def test_length_correlations_match_scipy():
    df = _study()
    df["ATU"] = df["AT"] * 2 + 1  # a perfect monotone function of length
    table = confound.length_correlations(df).set_index("metric")
    assert "AT" not in table.index and len(table) == 18
    assert table.loc["ATU", "rho"] == pytest.approx(1.0)
    assert table.loc["GD", "rho"] == pytest.approx(ss.spearmanr(df["AT"], df["GD"]).statistic)


def test_length_excluded_profile_changes_only_efficiency():
    table = confound.length_excluded_effects(_study())
    assert set(LENGTH_METRICS) == {"AT", "ATU", "TPI"}
    unchanged = table[table.dimension != "Efficiency"]
    assert np.allclose(unchanged["delta"], 0.0)
    assert (table[table.dimension == "Efficiency"]["delta"].abs() > 0).all()
    assert set(table["grouping"]) == {"model", "domain"}


# ------------------------------------------------------------------------------------- PCA aggregation

def test_pca_weights_match_an_svd():
    rng = np.random.default_rng(5)
    z = rng.normal(size=(100, 4)) @ rng.normal(size=(4, 4))
    z = (z - z.mean(0)) / z.std(0)
    w, ev = robustness.pca_weights(z)
    _, s, vt = np.linalg.svd(z - z.mean(0), full_matrices=False)
    v = vt[0] * np.sign(vt[0].sum())
    assert np.allclose(w, v / np.abs(v).sum()) and ev == pytest.approx(s[0] ** 2 / (s ** 2).sum())


def test_aggregation_robustness_is_perfect_for_equal_loadings():
    df = _study()
    for m in ("UPC", "DS", "FID"):
        df[m] = df["BF"]  # Breadth's four metrics identical: PC1 weights are equal
    out = robustness.aggregation_robustness(df).set_index("dimension")
    assert json.loads(out.loc["Breadth", "weights"]) == {m: 0.25 for m in DIMENSIONS["Breadth"]}
    assert out.loc["Breadth", "rho"] == pytest.approx(1.0) and out.loc["Breadth", "n_models"] == 4


def test_length_excluded_follows_the_dimension_map():
    """Under App. G's map (Efficiency = TPI, RR), the length-excluded Efficiency is RR alone."""
    df = _study()
    table = confound.length_excluded_effects(df, ("model",), dimensions="app_g").set_index("dimension")
    rr = discriminability.kruskal_wallis(df["RR"], df["model"])["epsilon2"]
    assert table.loc["Efficiency", "epsilon2_excluded"] == pytest.approx(rr)
    full = discriminability.kruskal_wallis(
        (df["TPI"] - df["TPI"].mean()) / df["TPI"].std(ddof=0) + (df["RR"] - df["RR"].mean()) / df["RR"].std(ddof=0),
        df["model"])["epsilon2"]
    assert table.loc["Efficiency", "epsilon2_full"] == pytest.approx(full)
