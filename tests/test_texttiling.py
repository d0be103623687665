"""Layer 2: block similarities, minima with prominence (checked against scipy) and the adaptive threshold."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import find_peaks, peak_prominences

from thinkprobe import texttiling


@pytest.mark.parametrize("seed", range(20))
def test_peaks_and_prominences_match_scipy(seed):
    rng = np.random.default_rng(seed)
    y = np.round(rng.normal(size=40), 1)  # rounding makes plateaus, the hard case
    ours = texttiling.local_maxima(y)
    theirs, _ = find_peaks(y)
    assert ours == list(theirs)
    if ours:
        np.testing.assert_allclose(texttiling.prominences(y, ours), peak_prominences(y, theirs)[0])


def test_gap_similarities_are_block_cosines():
    emb = np.eye(4)[[0, 0, 0, 1, 1, 1]].astype(np.float32)
    c = texttiling.gap_similarities(emb, window=3)
    # gap k=3 separates the two topics completely; k=1: left {0}, right {0,0,1} -> cos = 2/(1*sqrt(5))
    assert c[2] == pytest.approx(0.0)
    assert c[0] == pytest.approx(2 / np.sqrt(5))
    assert len(c) == 5


def _topics(sizes, dim=8, seed=0, noise=0.05):
    rng = np.random.default_rng(seed)
    rows = []
    for t, n in enumerate(sizes):
        base = np.eye(dim)[t]
        for _ in range(n):
            v = base + noise * rng.normal(size=dim)
            rows.append(v / np.linalg.norm(v))
    return np.asarray(rows, dtype=np.float32)


def test_boundaries_fall_between_topics():
    emb = _topics([6, 6, 6])
    tau = texttiling.trace_threshold([emb], 30)
    assert texttiling.boundaries(emb, window=3, min_prominence=0.15, tau=tau) == [6, 12]


def test_threshold_and_prominence_gate_boundaries():
    emb = _topics([6, 6, 6])
    assert texttiling.boundaries(emb, 3, 0.15, tau=-1.0) == []  # nothing falls below tau
    assert texttiling.boundaries(emb, 3, 5.0, tau=1.0) == []  # nothing is that prominent
    one_topic = _topics([12], noise=0.01)
    tau = texttiling.trace_threshold([one_topic], 30)
    assert texttiling.boundaries(one_topic, 3, 0.15, tau) == []


def test_trace_threshold_is_the_percentile_of_consecutive_cosines():
    a = _topics([4], seed=1)
    b = _topics([5], seed=2)
    sims = np.concatenate([texttiling.consecutive_similarities(a), texttiling.consecutive_similarities(b)])
    assert texttiling.trace_threshold([a, b], 30) == pytest.approx(np.percentile(sims, 30))
    assert texttiling.trace_threshold([], 30) == float("-inf")
