"""Trajectory states, dynamics and mechanisms on hand-made trajectories (values worked out by hand)."""

from __future__ import annotations

import itertools
import math

import pytest

from thinkprobe.trajectories import MECHANISMS, dynamics, mechanism, trace_summary, trajectory_record_to_states
from thinkprobe.trajectories.mechanisms import FAILURE_MECHANISMS, SUCCESS_MECHANISMS
from thinkprobe.trajectories.distributions import (
    dominant_set,
    effective_support,
    endpoint_prediction,
    entropy_profile,
    state_from_labels,
    total_variation,
)

pytestmark = pytest.mark.fast


def test_state_from_labels_counts_null_as_a_category():
    state = state_from_labels(["7", "7", "7", None, "9", "7", None, "7"])
    # 8 labels: "7" x5 = 0.625, None x2 = 0.25, "9" x1 = 0.125
    assert state == {"7": 0.625, None: 0.25, "9": 0.125}
    with pytest.raises(ValueError, match="no labels"):
        state_from_labels([])


def test_hand_made_trajectory_all_metrics():
    # p_0 = (a .5, b .5); p_1 = (a .25, b .75); p_2 = (a 1); p_3 = (a .75, b .25); p_4 = (a 1)
    states = [{"a": 0.5, "b": 0.5}, {"a": 0.25, "b": 0.75}, {"a": 1.0}, {"a": 0.75, "b": 0.25}, {"a": 1.0}]
    d = dynamics(states, tau=0.8, positions=[0, 16, 32, 48, 60])
    # dominant sets: {a,b}, {b}, {a}, {a}, {a} -> changes at t=1, t=2: 2 switches
    assert d["dominant_sets"] == [["a", "b"], ["b"], ["a"], ["a"], ["a"]]
    assert d["switches"] == 2
    # recurrence: at t=2, a enters (not in D_1={b}) and was in D_0 -> 1; b at t=1 was in D_0 too but
    # D_0 is D_{t-1} for t=1, so b did not leave: no return. Total 1.
    assert d["recurrence"] == 1
    # TV steps: |.5-.25| = .25; |.25-1| = .75; |1-.75| = .25; |.75-1| = .25 -> path length 1.5
    assert d["tv_steps"] == pytest.approx([0.25, 0.75, 0.25, 0.25])
    assert d["path_length"] == pytest.approx(1.5)
    # concentration: shares 1/6, 1/2, 1/6, 1/6 over steps of 16, 16, 16 and 12 tokens (stride 16): the last,
    # shorter step is a partial bin, weighted 16/12 -> 1/36 + 1/4 + 1/36 + (1/36)(16/12) = 37/108
    assert d["motion_concentration"] == pytest.approx(37 / 108)
    # center, in tokens: (1/6)(16/60) + (1/2)(32/60) + (1/6)(48/60) + (1/6)(60/60) = 220/360 = 11/18
    assert d["motion_center"] == pytest.approx(11 / 18)
    # without positions every step has width 1: the plain Herfindahl index 1/3 and center 14/24
    plain = dynamics(states, tau=0.8)
    assert plain["motion_concentration"] == pytest.approx(1 / 3)
    assert plain["motion_center"] == pytest.approx(14 / 24)
    # directness: TV(p_0, p_4) = .5 (a: .5 -> 1) over path length 1.5 = 1/3
    assert d["r_direct"] == pytest.approx(1 / 3)
    # commitment: a >= .8 at t=4 only (t=3 has .75) -> index 4, position 60 tokens
    assert (d["t_commit_index"], d["t_commit"], d["committed_answer"]) == (4, 60, "a")
    # S_eff = exp(H): H_0 = ln 2 -> 2; H_1 = -(.25 ln .25 + .75 ln .75) = 0.562335 -> 1.754765;
    # H_2 = 0 -> 1; H_3 = H_1 -> 1.754765; H_4 = 0 -> 1. Mean = (2 + 2*1.754765 + 2) / 5 = 7.50953 / 5 = 1.501906
    h1 = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert h1 == pytest.approx(0.562335, abs=1e-6)
    assert d["s_eff"] == pytest.approx((2 + 2 * math.exp(h1) + 2) / 5)
    assert d["s_eff"] == pytest.approx(1.501906, abs=1e-6)
    assert d["s_eff_max"] == pytest.approx(2.0)
    assert d["n_dominant_answers"] == 2


def test_inverse_simpson_support():
    # (.5, .25, .25): 1 / (.25 + .0625 + .0625) = 1 / .375 = 8/3
    assert effective_support({"a": 0.5, "b": 0.25, "c": 0.25}, "inverse_simpson") == pytest.approx(8 / 3)
    # exp(H): H = .5 ln 2 + 2 * .25 ln 4 = 1.5 ln 2 -> 2^1.5
    assert effective_support({"a": 0.5, "b": 0.25, "c": 0.25}) == pytest.approx(2 ** 1.5)
    assert dynamics([{"a": 0.5, "b": 0.5}], support="inverse_simpson")["s_eff"] == pytest.approx(2.0)


def test_zero_motion_leaves_directness_and_concentration_undefined():
    d = dynamics([{"a": 0.6, None: 0.4}] * 3)
    assert d["path_length"] == 0
    assert d["r_direct"] is None and d["motion_concentration"] is None and d["motion_center"] is None
    # a never reaches .8: no commitment
    assert d["t_commit"] is None and d["committed_answer"] is None
    assert d["switches"] == 0 and d["recurrence"] == 0


def test_single_checkpoint_trajectory():
    d = dynamics([{"5": 1.0}])
    # path length is undefined for a single checkpoint (no step; the paper), so means leave it out
    assert d["n_checkpoints"] == 1 and d["switches"] == 0 and d["path_length"] is None
    assert dynamics([{"5": 1.0}, {"5": 1.0}])["path_length"] == 0
    assert d["t_commit"] == 0 and d["r_direct"] is None


def test_null_label_cannot_commit_but_can_dominate():
    states = [{None: 0.9, "3": 0.1}, {None: 0.85, "3": 0.15}]
    d = dynamics(states)
    assert d["t_commit"] is None
    assert d["dominant_sets"] == [[None], [None]]


def test_commitment_is_the_start_of_the_final_run():
    # a >= .8 at t = 0, 1, drops at t = 2, back >= .8 at t = 3, 4 -> the run to the end starts at 3
    states = [{"a": 0.9, "b": 0.1}, {"a": 0.8, "b": 0.2}, {"a": 0.5, "b": 0.5}, {"a": 0.8, "b": 0.2},
              {"a": 1.0}]
    assert dynamics(states)["t_commit"] == 3
    assert dynamics(states, tau=0.5)["t_commit"] == 0


def test_endpoint_non_injectivity_example_is_distinguished():
    # The paper's App. C: two binary trajectories share the endpoint a, but T2 switches from b to a.
    t1 = [{"a": 0.9, "b": 0.1}, {"a": 0.9, "b": 0.1}]
    t2 = [{"a": 0.1, "b": 0.9}, {"a": 0.9, "b": 0.1}]
    assert endpoint_prediction(t1) == endpoint_prediction(t2) == "a"
    d1, d2 = dynamics(t1), dynamics(t2)
    assert (d1["switches"], d2["switches"]) == (0, 1)
    # TV: 0 for T1; |.9 - .1| = .8 for T2
    assert (d1["path_length"], d2["path_length"]) == (0, pytest.approx(0.8))
    assert (d1["t_commit"], d2["t_commit"]) == (0, 1)
    # equal entropy profiles too (H is permutation invariant): only the trajectory tells them apart
    assert entropy_profile(t1) == pytest.approx(entropy_profile(t2))


def test_entropy_non_injectivity_example_is_distinguished():
    # Two constant trajectories with the same entropy profile, mass on different hypotheses.
    t1 = [{"a": 0.7, "b": 0.3}] * 3
    t2 = [{"a": 0.3, "b": 0.7}] * 3
    assert entropy_profile(t1) == pytest.approx(entropy_profile(t2))
    d1, d2 = dynamics(t1), dynamics(t2)
    assert d1["dominant_sets"] == [["a"]] * 3 and d2["dominant_sets"] == [["b"]] * 3
    assert d1["s_eff"] == pytest.approx(d2["s_eff"])
    # gold dominance (gold a) differs at every checkpoint, and so does the mechanism
    g1 = ["a" in dominant_set(p) for p in t1]
    g2 = ["a" in dominant_set(p) for p in t2]
    assert mechanism(g1, True) == "stable_success"
    assert mechanism(g2, False) == "stable_failure"


def test_total_variation_examples():
    assert total_variation({"a": 1.0}, {"b": 1.0}) == 1.0
    assert total_variation({"a": 0.5, None: 0.5}, {"a": 0.5, "b": 0.5}) == 0.5
    assert total_variation({"a": 0.3}, {"a": 0.3}) == 0.0


# ---------------------------------------------------------------- mechanisms


def _reference_mechanism(g: tuple[bool, ...], correct: bool) -> str:
    """An independent restatement of the definitions through the run-length encoding of g."""
    runs = [k for k, _ in itertools.groupby(g)]
    if correct:
        if runs[-1] is False:
            return "fragile_success"
        return {(True,): "stable_success", (False, True): "rescue"}.get(tuple(runs), "detour_success")
    if runs[-1] is True:
        return "fragile_failure"
    return {(False,): "stable_failure", (True, False): "escape"}.get(tuple(runs), "failed_rescue")


def test_mechanisms_exhaustive_up_to_length_six():
    seen = {name: 0 for name in MECHANISMS}
    for length in range(1, 7):
        for g in itertools.product([False, True], repeat=length):
            for correct in (True, False):
                name = mechanism(g, correct)
                assert name in MECHANISMS
                assert name == _reference_mechanism(g, correct), (g, correct)
                assert name in (SUCCESS_MECHANISMS if correct else FAILURE_MECHANISMS)
                seen[name] += 1
    # 2 * (2 + 4 + ... + 64) = 252 (sequence, outcome) cases, each counted once
    assert sum(seen.values()) == 252
    assert all(count > 0 for count in seen.values()), seen
    # hand counts for correct traces of length 6 (64 sequences): stable 1; rescue F^i T^(6-i), i=1..5: 5;
    # fragile: ends in F: 32; detour: the other 64 - 1 - 5 - 32 = 26
    length6 = [mechanism(g, True) for g in itertools.product([False, True], repeat=6)]
    assert [length6.count(n) for n in ("stable_success", "rescue", "fragile_success", "detour_success")] == \
        [1, 5, 32, 26]


def test_mechanism_outcome_split():
    correct_names = {mechanism(g, True) for n in range(1, 5) for g in itertools.product([0, 1], repeat=n)}
    wrong_names = {mechanism(g, False) for n in range(1, 5) for g in itertools.product([0, 1], repeat=n)}
    assert correct_names == {"stable_success", "rescue", "detour_success", "fragile_success"}
    assert wrong_names == {"stable_failure", "escape", "failed_rescue", "fragile_failure"}
    with pytest.raises(ValueError, match="empty"):
        mechanism([], True)


# ---------------------------------------------------------------- records (the data contract)


def _record(checkpoints, gold="18", endpoint="18"):
    return {"model": "m", "question_set": "gsm8k", "question_id": "q1", "run": 0, "task": "gsm8k",
            "gold": gold, "endpoint_label": endpoint,
            "checkpoints": [{"checkpoint_index": i, "prefix_tokens": tok, "labels": labels}
                            for i, (tok, labels) in enumerate(checkpoints)]}


def test_record_to_states_and_summary():
    rec = _record([(0, ["20", "20", "18", None]), (16, ["18", "18", "20", "18"]), (20, ["18"] * 4)])
    states = trajectory_record_to_states(rec)
    assert states == [{"20": 0.5, "18": 0.25, None: 0.25}, {"18": 0.75, "20": 0.25}, {"18": 1.0}]
    row = trace_summary(rec)
    # gold dominance F T T, correct -> rescue; commitment at the last checkpoint (.75 < .8 at t=1): 20 tokens
    assert row["gold_dominant"] == [False, True, True]
    assert row["mechanism"] == "rescue" and row["correct"] is True
    assert row["t_commit"] == 20 and row["t_commit_frac"] == 1.0
    # TV: t=1: |.5-.25| (20) + |.25-.75| (18) + .25 (null) = 1.0 / 2 = .5; t=2: .25 -> L = .75
    assert row["path_length"] == pytest.approx(0.75)
    # TV(p_0, p_2) = (.5 + .75 + .25) / 2 = .75 -> R_direct = 1
    assert row["r_direct"] == pytest.approx(1.0)
    assert row["cot_tokens"] == 20 and row["n_samples"] == 4 and row["endpoint_prediction"] == "18"


def test_record_without_gold_has_no_mechanism_and_skipped_checkpoints_are_counted():
    rec = _record([(0, ["1", "2"]), (16, []), (32, ["2", "2"])], gold=None, endpoint="2")
    row = trace_summary(rec)
    assert row["mechanism"] is None and row["correct"] is None and row["gold_dominant"] is None
    assert row["n_checkpoints_skipped"] == 1 and row["n_checkpoints"] == 2
    assert row["endpoint_prediction"] == "2"


def test_record_without_labels_is_a_named_error():
    with pytest.raises(ValueError, match="m/gsm8k/q1/0"):
        trajectory_record_to_states(_record([(0, [])]))


def test_summary_canonicalises_a_raw_gold():
    # a raw MATH gold \dfrac12 and continuation labels in canonical form \frac{1}{2}
    rec = _record([(0, ["\\frac{1}{2}", "3"]), (16, ["\\frac{1}{2}"] * 2)], gold="\\dfrac12", endpoint="0.5")
    rec["task"] = "math"
    row = trace_summary(rec)
    assert row["gold"] == "\\frac{1}{2}" and row["correct"] is True
    assert row["gold_dominant"] == [True, True] and row["mechanism"] == "stable_success"


def test_invalid_states_are_named_errors():
    with pytest.raises(ValueError, match="state 1 is not a probability distribution"):
        dynamics([{"a": 1.0}, {"a": 0.5, "b": 0.4}])
    with pytest.raises(ValueError, match="empty trajectory"):
        dynamics([])
    with pytest.raises(ValueError, match="2 positions for 1 states"):
        dynamics([{"a": 1.0}], positions=[0, 16])
