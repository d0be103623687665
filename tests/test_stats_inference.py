"""Multiplicity, exact and blocked tests, Monte Carlo error and the bootstrap (thinkprobe/stats): each against
an independent implementation (statsmodels, scipy) or a case computed by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import friedmanchisquare, permutation_test, spearmanr
from statsmodels.stats.multitest import multipletests

from thinkprobe.metrics import METRIC_NAMES
from thinkprobe.stats import blocked, bootstrap, discriminability, exact, multiplicity, permutation, robustness


@pytest.mark.fast
@pytest.mark.parametrize("seed", range(6))
def test_holm_equals_statsmodels(seed):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 0.02, 4), rng.uniform(0, 1, 15)])
    rng.shuffle(p)
    ours = multiplicity.holm(p)
    ref = multipletests(p, method="holm")[1]
    assert np.allclose(ours, ref, rtol=0, atol=1e-12)
    # the same rejections as statsmodels' step-down procedure at 0.05
    assert ((ours <= 0.05) == multipletests(p, alpha=0.05, method="holm")[0]).all()


@pytest.mark.fast
def test_holm_leaves_missing_tests_out():
    p = [0.01, np.nan, 0.04]
    out = multiplicity.holm(p)
    assert np.isnan(out[1]) and np.allclose(out[[0, 2]], multipletests([0.01, 0.04], method="holm")[1])


@pytest.mark.fast
@pytest.mark.parametrize("n,seed", [(4, 0), (5, 1), (6, 2), (6, 3), (5, 4)])
def test_exact_spearman_equals_every_ordering_counted_with_scipy(n, seed):
    from itertools import permutations

    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    if seed == 4:
        y = np.round(y)  # ties
    rho = spearmanr(x, y).statistic
    null = np.array([spearmanr(x, y[list(p)]).statistic for p in permutations(range(n))])
    ours = exact.spearman(x, y)
    assert ours["method"] == "exact"
    assert ours["rho"] == pytest.approx(rho, abs=1e-12)
    assert ours["p"] == pytest.approx(np.mean(np.abs(null) >= abs(rho) - 1e-9), abs=1e-12)


@pytest.mark.slow
def test_exact_spearman_equals_scipys_permutation_test():
    x, y = np.array([0.3, 1.2, -0.5, 2.0, 0.9]), np.array([0.1, 0.8, 0.2, 1.9, 1.5])
    ref = permutation_test((x, y), lambda a, b: spearmanr(a, b).statistic, permutation_type="pairings",
                           n_resamples=np.inf, alternative="two-sided", vectorized=False)
    assert exact.spearman(x, y)["p"] == pytest.approx(ref.pvalue, abs=1e-12)


@pytest.mark.fast
def test_five_models_ranked_alike_give_the_exact_p_not_the_t_approximation():
    r = exact.spearman([1, 2, 3, 4, 5], [10, 20, 30, 40, 50])
    assert r["p"] == pytest.approx(2 / 120) and spearmanr([1, 2, 3, 4, 5], [10, 20, 30, 40, 50]).pvalue < 1e-20
    big = exact.spearman(np.arange(12.0), np.arange(12.0) ** 2)
    assert big["method"] == "asymptotic"


@pytest.mark.fast
def test_aggregation_robustness_reports_the_exact_p():
    rng = np.random.default_rng(0)
    rows = []
    for m in range(5):
        for q in range(20):
            rows.append({"model": f"m{m}", **{k: m + rng.normal(0, 0.1) for k in METRIC_NAMES}})
    out = robustness.aggregation_robustness(pd.DataFrame(rows)).set_index("dimension")
    assert (out.p_method == "exact").all()
    assert out.loc["Breadth", "rho"] == pytest.approx(1.0) and out.loc["Breadth", "p"] == pytest.approx(2 / 120)


@pytest.mark.fast
@pytest.mark.parametrize("seed", range(4))
def test_friedman_equals_scipy(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, size=(30, 4)).astype(float)  # ties within blocks
    ref = friedmanchisquare(*x.T)
    groups = np.tile(["a", "b", "c", "d"], 30)
    blocks = np.repeat(np.arange(30), 4)
    ours = blocked.friedman(x.ravel(), groups, blocks)
    assert ours["friedman_chi2"] == pytest.approx(ref.statistic, rel=1e-10)
    assert ours["p_friedman"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert ours["n_blocks"] == 30


@pytest.mark.fast
def test_friedman_uses_complete_blocks_and_cell_means():
    v = [1.0, 3.0, 2.0, 5.0, 1.0, 2.0, 9.0]   # block 0: a has two runs (mean 2); block 2: only a -> dropped
    g = ["a", "a", "b", "b", "a", "b", "a"]
    b = [0, 0, 0, 1, 1, 1, 2]
    r = blocked.friedman(v, g, b)
    assert r["n_blocks"] == 2
    # k = 2 (scipy refuses it), by hand: block 0: a 2 vs b 2 (a tie: ranks 1.5, 1.5); block 1: a 5 > b 1
    # (ranks 2, 1); R = (3.5, 2.5); the tie correction removes one tied pair of two
    q = (12 / (2 * 2 * 3) * (3.5 ** 2 + 2.5 ** 2) - 3 * 2 * 3) / (1 - 6 / (2 * 2 * 3))
    assert r["friedman_chi2"] == pytest.approx(q)


@pytest.mark.fast
def test_kruskal_table_has_the_blocked_test_and_holm_columns():
    rng = np.random.default_rng(1)
    rows = []
    for q in range(40):
        hard = rng.normal(0, 3)  # a prompt effect shared by every model: it hides the model effect from KW
        for m in range(4):
            rows.append({"model": f"m{m}", "question_set": "s", "question_id": f"q{q}", "domain": f"d{q % 4}",
                         **{k: hard + (0.4 * m if k == "BF" else 0) + rng.normal(0, 0.5) for k in METRIC_NAMES}})
    t = pd.DataFrame(rows)
    perm = {"B": 400, "seed": 3, "units": {"model": "within_prompts", "domain": "prompts"}}
    k = discriminability.kruskal_table(t, METRIC_NAMES, permutation=perm).set_index(["grouping", "target"])
    bf = k.loc[("model", "BF")]
    assert bf.p_friedman < 1e-6 and bf.p > 1e-3  # blocking removes the prompts' variance
    assert bf.n_blocks == 40 and np.isnan(k.loc[("domain", "BF"), "p_friedman"])
    for g in ("model", "domain"):
        fam = k.loc[g]
        assert np.allclose(fam.p_perm_holm, multipletests(fam.p_perm, method="holm")[1])
        assert np.allclose(fam.p_perm_mcse, np.sqrt(fam.p_perm * (1 - fam.p_perm) / 400))


@pytest.mark.fast
def test_monte_carlo_error_bound_fixes_the_smallest_b_and_the_config_refuses_less():
    from thinkprobe.config import ConfigError, load_schema, validate_config

    from .workflow_helpers import REPO

    assert permutation.min_permutations(0.005) == 10_000 and permutation.min_permutations(0.01) == 2_500
    assert 0.5 / np.sqrt(permutation.min_permutations(0.007)) <= 0.007
    schema = load_schema(REPO / "config" / "schema.yaml")
    cfg = {"inputs": [{"path": "x", "question_set": "s"}]}
    ok = validate_config(cfg, schema)
    assert 0.5 / np.sqrt(ok["stats"]["permutations"]) <= ok["stats"]["permutation_mcse_max"]
    with pytest.raises(ConfigError, match="stats.permutations = 1000.*permutation_mcse_max = 0.005"):
        validate_config({**cfg, "stats": {"permutations": 1000}}, schema, "study.yaml")
    validate_config({**cfg, "stats": {"permutations": 1000, "permutation_mcse_max": 0.016}}, schema)
    validate_config({**cfg, "stats": {"permutations": 0}}, schema)  # nulls off


@pytest.mark.fast
def test_cluster_bootstrap_keeps_prompts_whole_and_is_seeded():
    prompts = np.repeat([f"q{i}" for i in range(10)], 3)
    a = bootstrap.cluster_resamples(prompts, 50, seed=7)
    b = bootstrap.cluster_resamples(prompts, 50, seed=7)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    for idx in a:
        assert len(idx) == 30
        drawn = pd.Series(prompts[idx]).value_counts()
        assert (drawn % 3 == 0).all()  # a prompt comes with all three of its traces, or not at all


@pytest.mark.fast
def test_bootstrap_epsilon2_is_scipys():
    rng = np.random.default_rng(2)
    v = rng.integers(0, 6, 60).astype(float)
    g = rng.integers(0, 3, 60)
    assert bootstrap.epsilon2(v, g) == pytest.approx(discriminability.kruskal_wallis(v, g)["epsilon2"], rel=1e-12)


@pytest.mark.fast
def test_a_percentile_interval_covers_the_truth_at_its_level():
    """Coverage of the cluster bootstrap's interval for a mean with prompt effects: near 95%."""
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(120):
        prompt = np.repeat(np.arange(40), 5)
        x = rng.normal(0, 1, 40)[prompt] + rng.normal(0, 1, 200)
        res = bootstrap.cluster_resamples(prompt, 300, seed=int(rng.integers(1 << 30)))
        _, lo, hi = bootstrap.bootstrap(lambda i: np.array([x[i].mean()]), 200, res, 0.95)
        hits += lo[0] <= 0 <= hi[0]
    assert 0.85 <= hits / 120 <= 1.0
