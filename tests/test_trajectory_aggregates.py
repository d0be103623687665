"""Trajectory aggregates on a small synthetic table, checked against direct pandas/scipy computations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from thinkprobe.trajectories.aggregates import (
    PROFILE_METRICS,
    condition_table,
    disagreement,
    disagreement_by_pair,
    group_profiles,
    matched_comparisons,
    t_interval,
    trace_table,
    variance_decomposition,
)
from thinkprobe.trajectories.mechanisms import MECHANISMS

pytestmark = pytest.mark.fast

MODELS = ["base-1b", "inst-1b", "base-7b", "inst-7b"]
TASKS = ["gsm8k", "arc"]


@pytest.fixture(scope="module")
def traces() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for mi, model in enumerate(MODELS):
        for task in TASKS:
            for temperature in (0.6, 0.2, 1.0):
                for q in range(6):
                    row = {"model": model, "task": task, "question_set": task, "question_id": f"q{q}",
                           "run": 0, "temperature": temperature,
                           "correct": bool(rng.random() < 0.3 + 0.15 * mi),
                           "cot_tokens": float(rng.integers(50, 400)),
                           "mechanism": MECHANISMS[int(rng.integers(0, 8))]}
                    for m in PROFILE_METRICS:
                        row[m] = float(rng.normal(mi + (task == "arc"), 1.0 + temperature))
                    if q == 0:
                        row["r_direct"] = None
                        row["t_commit"] = None
                    rows.append(row)
    return pd.DataFrame(rows)


def test_condition_table_matches_pandas(traces):
    table = condition_table(traces).set_index(["model", "task"])
    frame = traces.assign(r_direct=pd.to_numeric(traces["r_direct"]))
    direct = frame.groupby(["model", "task"])
    assert table["n_traces"].to_dict() == direct.size().to_dict()
    np.testing.assert_allclose(table["accuracy"], direct["correct"].mean().loc[table.index])
    np.testing.assert_allclose(table["r_direct"], direct["r_direct"].mean().loc[table.index])
    # undefined values are skipped: 18 traces, 3 with q0 -> 15 defined
    assert set(table["n_r_direct"]) == {15} and set(table["n_s_eff"]) == {18}
    key = ("inst-7b", "arc")
    part = traces[(traces["model"] == key[0]) & (traces["task"] == key[1])]
    shares = part["mechanism"].value_counts(normalize=True)
    for name in MECHANISMS:
        assert table.loc[key, f"share_{name}"] == pytest.approx(shares.get(name, 0.0))
    assert table[[f"share_{n}" for n in MECHANISMS]].sum(axis=1).to_numpy() == pytest.approx(1.0)


def test_variance_decomposition_matches_one_way_anova(traces):
    table = variance_decomposition(traces).set_index("metric")
    for m in ("s_eff", "r_direct"):
        row = table.loc[m]
        assert row["within"] + row["between"] == pytest.approx(row["total"])
        x = pd.to_numeric(traces[m])
        ok = x.notna()
        groups = [g.to_numpy() for _, g in x[ok].groupby([traces["model"][ok], traces["task"][ok]])]
        n, k = int(ok.sum()), len(groups)
        assert row["n"] == n and row["total"] == pytest.approx(np.var(x[ok].to_numpy()))
        # one-way ANOVA: F = (SS_between / (k-1)) / (SS_within / (n-k)); SS = n * our (population) shares
        f_ours = (row["between"] * n / (k - 1)) / (row["within"] * n / (n - k))
        assert f_ours == pytest.approx(stats.f_oneway(*groups).statistic)


def test_group_profiles_select_the_right_pairs(traces):
    cond = condition_table(traces[traces["temperature"] == 0.6])
    profiles, members = group_profiles(cond, fraction=0.25)
    frame = cond.copy()
    z_acc = frame.groupby("task")["accuracy"].transform(lambda s: (s - s.mean()) / s.std(ddof=1))
    z_len = frame.groupby("task")["cot_tokens"].transform(lambda s: (s - s.mean()) / s.std(ddof=1))
    # 8 pairs, 25% -> 2 pairs
    top = set(map(tuple, frame.loc[z_acc.sort_values(ascending=False).index[:2], ["model", "task"]].to_numpy()))
    short = set(map(tuple, frame.loc[z_len.sort_values().index[:2], ["model", "task"]].to_numpy()))
    got_top = set(map(tuple, members[members["group"] == "high_accuracy"][["model", "task"]].to_numpy()))
    got_short = set(map(tuple, members[members["group"] == "shortest_cot"][["model", "task"]].to_numpy()))
    assert got_top == top and got_short == short
    prof = profiles.set_index("group")
    idx = z_acc.sort_values(ascending=False).index[:2]
    z_seff = frame.groupby("task")["s_eff"].transform(lambda s: (s - s.mean()) / s.std(ddof=1))
    assert prof.loc["high_accuracy", "s_eff"] == pytest.approx(z_seff.loc[idx].mean())
    assert prof.loc["high_accuracy", "accuracy"] == pytest.approx(frame.loc[idx, "accuracy"].mean())
    assert prof.loc["all", "n_pairs"] == 8 and prof.loc["all", "s_eff"] == pytest.approx(0.0, abs=1e-12)


def test_t_interval_matches_scipy():
    values = [0.3, -0.1, 0.8, 0.45, 0.2, 0.05]
    mean, low, high, n = t_interval(values)
    lo, hi = stats.t.interval(0.95, df=5, loc=np.mean(values), scale=stats.sem(values))
    assert (mean, n) == (pytest.approx(np.mean(values)), 6)
    assert (low, high) == (pytest.approx(lo), pytest.approx(hi))
    assert math.isnan(t_interval([1.0])[1])


def test_matched_comparisons_standardize_by_default_decoding(traces):
    comps = [
        {"name": "instruction_tuning", "pairs": [
            {"reference": {"model": "base-1b", "temperature": 0.6}, "treatment": {"model": "inst-1b", "temperature": 0.6}},
            {"reference": {"model": "base-7b", "temperature": 0.6}, "treatment": {"model": "inst-7b", "temperature": 0.6}},
        ]},
        {"name": "temperature", "tasks": ["gsm8k"], "pairs": [
            {"reference": {"model": m, "temperature": 0.2}, "treatment": {"model": m, "temperature": 1.0}}
            for m in MODELS]},
    ]
    summary, units = matched_comparisons(traces, comps, default={"temperature": 0.6})
    default = traces[traces["temperature"] == 0.6]
    sd = {t: default[default["task"] == t]["s_eff"].std(ddof=1) for t in TASKS}

    def mean_of(model, temperature, task, metric="s_eff"):
        sel = traces[(traces["model"] == model) & (traces["temperature"] == temperature) & (traces["task"] == task)]
        return pd.to_numeric(sel[metric]).mean()

    inst = [np.mean([(mean_of(b.replace("base", "inst"), 0.6, t) - mean_of(b, 0.6, t)) / sd[t] for t in TASKS])
            for b in ("base-1b", "base-7b")]
    got = units[(units["comparison"] == "instruction_tuning") & (units["metric"] == "s_eff")]["change"].to_numpy()
    np.testing.assert_allclose(got, inst)
    temp = [(mean_of(m, 1.0, "gsm8k") - mean_of(m, 0.2, "gsm8k")) / sd["gsm8k"] for m in MODELS]
    row = summary[(summary["comparison"] == "temperature") & (summary["metric"] == "s_eff")].iloc[0]
    lo, hi = stats.t.interval(0.95, df=3, loc=np.mean(temp), scale=stats.sem(temp))
    assert row["n"] == 4
    assert (row["mean"], row["ci_low"], row["ci_high"]) == (pytest.approx(np.mean(temp)), pytest.approx(lo),
                                                            pytest.approx(hi))
    # the synthetic spread grows with temperature (sd 1 + T): the standardized s_eff change is not all zero
    assert "accuracy" in set(summary["metric"])


def _rec(model, labels_per_cp, gold="1", endpoint="1", tokens=None):
    tokens = tokens or [16 * i for i in range(len(labels_per_cp))]
    return {"model": model, "task": "gsm8k", "question_set": "gsm8k", "question_id": "q", "run": 0,
            "gold": gold, "endpoint_label": endpoint,
            "checkpoints": [{"checkpoint_index": i, "prefix_tokens": t, "labels": lab}
                            for i, (t, lab) in enumerate(zip(tokens, labels_per_cp))]}


def test_disagreement_on_hand_made_traces():
    # model a: dominant 1, 1, 1 (stable_success); model b: dominant 2, 2, 1 (rescue); same entropy (all
    # states are 3-of-4 vs 1-of-4, or point masses at the end)
    a = _rec("a", [["1", "1", "1", "2"], ["1", "1", "1", "2"], ["1"] * 4])
    b = _rec("b", [["2", "2", "2", "1"], ["2", "2", "2", "1"], ["1"] * 4])
    c = _rec("c", [["2"] * 4, ["2"] * 4, ["2"] * 4], endpoint="2")
    table = disagreement([a, b, c], grid=3).set_index(["model_a", "model_b"])
    # grid q = 0, .5, 1 of K = 32 tokens -> checkpoints 0, 1 (16 <= 16), 2
    ab = table.loc[("a", "b")]
    assert ab["dominant_disagreement"] == pytest.approx(2 / 3)
    assert ab["gold_dominance_disagreement"] == pytest.approx(2 / 3)
    assert ab["entropy_gap"] == pytest.approx(0.0)
    assert ab["mechanism_disagreement"] == 1.0  # both correct: stable_success vs rescue
    # a correct, c wrong: outcomes differ, so mechanisms are not compared
    assert table.loc[("a", "c"), "mechanism_disagreement"] is None or np.isnan(table.loc[("a", "c"), "mechanism_disagreement"])
    by_pair = disagreement_by_pair(table.reset_index()).set_index(["model_a", "model_b"])
    assert by_pair.loc[("a", "c"), "n_matched_outcomes"] == 0
    assert by_pair.loc[("a", "b"), "n_items"] == 1


def test_trace_table_excludes_bad_records_and_goes_on():
    good = _rec("a", [["1", "2"], ["1", "1"]])
    bad = _rec("b", [[], []])
    table, excluded = trace_table([good, bad])
    assert list(table["model"]) == ["a"]
    assert list(excluded["model"]) == ["b"] and "no checkpoint has sampled labels" in excluded["reason"].iloc[0]
    assert excluded["stage"].iloc[0] == "trajectory_summary"


def test_figures_are_written(traces, tmp_path):
    from thinkprobe.trajectories import figures

    states = [{"1": 0.25, "2": 0.5, None: 0.25}, {"1": 0.5, "2": 0.5}, {"1": 1.0}]
    paths = [figures.trajectory_plot(states, [0, 16, 20], str(tmp_path / "traj.png"), gold="1", provenance="p"),
             figures.mechanism_shares(traces, str(tmp_path / "mech.png"))]
    profiles, _ = group_profiles(condition_table(traces))
    paths.append(figures.group_profiles_plot(profiles, list(PROFILE_METRICS), str(tmp_path / "groups.png")))
    comps = [{"name": "temperature", "pairs": [{"reference": {"model": m, "temperature": 0.2},
                                               "treatment": {"model": m, "temperature": 1.0}} for m in MODELS]}]
    summary, _ = matched_comparisons(traces, comps, default={"temperature": 0.6})
    paths.append(figures.forest_plot(summary, str(tmp_path / "forest.png")))
    for path in paths:
        with open(path, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_trace_table_keeps_the_sampler_exclusion_reason():
    rec = {**_rec("c", [["1"]]), "status": "excluded", "reason": "prefix longer than the context"}
    _, excluded = trace_table([rec])
    assert "prefix longer than the context" in excluded["reason"].iloc[0]
