"""Permutation nulls of epsilon^2 (thinkprobe/stats/permutation.py): exact H, calibration, power, clustering."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kruskal

from thinkprobe.stats import discriminability, permutation

pytestmark = pytest.mark.fast


def test_batched_h_equals_scipy_under_every_shuffling():
    rng = np.random.default_rng(3)
    v = rng.integers(0, 12, 90).astype(float)  # many ties: the tie correction matters
    g = rng.integers(0, 4, 90)
    ranks, c = permutation._ranks(v)
    labels = permutation.shuffled_labels(g, 25, seed=1)
    h = permutation.kruskal_h_batch(ranks, labels, 4, c)
    for row, hb in zip(labels, h):
        assert hb == pytest.approx(kruskal(*[v[row == i] for i in range(4)]).statistic, rel=1e-10)


def test_no_effect_corrected_epsilon2_is_centred_at_zero():
    rng = np.random.default_rng(7)
    n, k = 100, 5
    groups = np.repeat(np.arange(k), n // k)
    raw, corrected = [], []
    for _ in range(150):
        r = permutation.epsilon2_null(rng.normal(size=n), groups, b=200, seed=11)
        raw.append(r["epsilon2"])
        corrected.append(r["epsilon2_corrected"])
    raw, corrected = np.array(raw), np.array(corrected)
    # uncorrected epsilon^2 sits at chance level (k - 1) / (n - 1), far from 0 ...
    assert raw.mean() == pytest.approx((k - 1) / (n - 1), rel=0.25) and raw.mean() > 0.02
    # ... the corrected value is centred at 0: 0 lies in its 99% confidence interval
    half = 2.6 * corrected.std(ddof=1) / np.sqrt(len(corrected))
    assert abs(corrected.mean()) < half


def test_planted_effect_is_detected():
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(4), 30)
    values = rng.normal(size=120) + 0.9 * (groups == 0)
    r = permutation.epsilon2_null(values, groups, b=500, seed=2)
    assert r["p_perm"] <= 2 / 501
    assert r["epsilon2"] > r["epsilon2_null_p95"] and r["epsilon2_corrected"] > 0.1


def _clustered(rng, n_prompts=40, per=5, n_domains=4):
    prompt = np.repeat(np.arange(n_prompts), per)
    domain = (prompt % n_domains).astype(str)
    values = rng.normal(size=n_prompts)[prompt] + 0.3 * rng.normal(size=n_prompts * per)  # no domain effect
    return values, domain, prompt


def test_prompt_level_permutation_on_clustered_prompts():
    rng = np.random.default_rng(13)
    naive, prompt_level = [], []
    for _ in range(20):
        v, d, p = _clustered(rng)
        naive.append(permutation.epsilon2_null(v, d, b=300, seed=4, scheme="traces")["p_perm"])
        prompt_level.append(permutation.epsilon2_null(v, d, b=300, seed=4, scheme="prompts", prompts=p)["p_perm"])
    naive, prompt_level = np.array(naive), np.array(prompt_level)
    # same data, same statistic: the naive p is smaller every time, and "significant" most of the time
    assert (naive <= prompt_level).all() and (naive < prompt_level).mean() > 0.8
    assert (naive < 0.05).mean() > 0.5
    assert (prompt_level < 0.05).mean() <= 0.2  # no domain effect: prompt-level p is not fooled


def test_shufflings_respect_the_design():
    prompt = np.repeat(np.arange(30), 4)
    model = np.tile(np.arange(4), 30)
    within = permutation.shuffled_labels(model, 10, 1, "within_prompts", prompt)
    assert all((np.sort(row.reshape(30, 4), axis=1) == np.arange(4)).all() for row in within)
    assert (within != model).mean() > 0.5
    domain = prompt % 3
    whole = permutation.shuffled_labels(domain, 10, 1, "prompts", prompt)
    assert all((row.reshape(30, 4) == row.reshape(30, 4)[:, :1]).all() for row in whole)
    assert all((np.bincount(row) == np.bincount(domain)).all() for row in whole)
    assert (whole != domain).mean() > 0.3
    with pytest.raises(ValueError, match="prompt #0 has traces in two groups"):
        permutation.shuffled_labels(model, 2, 1, "prompts", prompt)
    with pytest.raises(ValueError, match="unknown permutation scheme 'x'"):
        permutation.shuffled_labels(model, 2, 1, "x", prompt)


def test_same_seed_same_null_and_seed_matters():
    rng = np.random.default_rng(0)
    v, g = rng.normal(size=60), np.repeat(list("abc"), 20)
    a = permutation.epsilon2_null(v, g, b=100, seed=1)
    assert permutation.epsilon2_null(v, g, b=100, seed=1) == a
    assert permutation.epsilon2_null(v, g, b=100, seed=2)["epsilon2_null_mean"] != a["epsilon2_null_mean"]


def test_model_vs_domain_compares_chance_corrected_values():
    # a real but small model effect (2 models) against a domain grouping with no effect and 20 levels:
    # uncorrected epsilon^2 favours domain (more levels), corrected favours model
    rng = np.random.default_rng(1)
    n_prompts = 100
    prompt = np.repeat(np.arange(n_prompts), 2)
    table = pd.DataFrame({"question_set": "q", "question_id": prompt.astype(str), "model": np.tile(["a", "b"], n_prompts),
                          "domain": (prompt % 20).astype(str)})
    table["AT"] = rng.normal(size=len(table)) + 0.25 * (table.model == "a")
    perm = {"B": 400, "seed": 3, "units": {"model": "within_prompts", "domain": "prompts"}}
    k = discriminability.kruskal_table(table, ["AT"], kind="metric", permutation=perm)
    assert set(permutation.NULL_COLUMNS) <= set(k.columns)
    kk = k.set_index("grouping")
    assert kk.loc["domain", "epsilon2_null_mean"] > kk.loc["model", "epsilon2_null_mean"]
    r = discriminability.model_over_domain(k).iloc[0]
    assert not r.model_dominates_uncorrected and r.model_dominates
    assert r.corrected_model == pytest.approx(kk.loc["model", "epsilon2_corrected"])
    # without permutations the table has no null columns and dominance is the uncorrected one
    plain = discriminability.kruskal_table(table, ["AT"], kind="metric")
    assert "p_perm" not in plain.columns
    assert not discriminability.model_over_domain(plain).iloc[0].model_dominates


def test_a_prompt_in_two_domains_is_named():
    with pytest.raises(ValueError, match="prompt 's/q1' has traces in two groups"):
        permutation.epsilon2_null([1.0, 2, 3, 4], ["a", "a", "a", "b"], b=10, scheme="prompts",
                                  prompts=["s\x1fq0", "s\x1fq0", "s\x1fq1", "s\x1fq1"])


def test_constant_and_degenerate_targets():
    assert permutation.epsilon2_null([1.0] * 10, list("ab") * 5, b=20)["p_perm"] == 1.0
    assert np.isnan(permutation.epsilon2_null([1.0, 2.0, 3.0], ["a"] * 3, b=20)["epsilon2"])
    with pytest.raises(ValueError, match="needs a question_id column"):
        permutation.null_columns(pd.DataFrame({"v": [1.0, 2.0], "domain": ["a", "b"]}), "v", "domain", 10, 1, "prompts")
