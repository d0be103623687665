"""Layer 2: block similarities, minima with prominence (checked against scipy), the adaptive threshold, length cuts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import find_peaks, peak_prominences

from thinkprobe import texttiling

pytestmark = pytest.mark.fast


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
    # 17 gaps: ~0 at k=6 and 12, ~1/sqrt(5) at k=5, 7, 11, 13, higher elsewhere; P30 (rank 4.8) ~ 0.45
    tau = texttiling.trace_threshold(texttiling.gap_similarities(emb, 3), 30)
    assert 0.3 < tau < 0.6
    assert texttiling.boundaries(emb, window=3, min_prominence=0.15, tau=tau) == [6, 12]


def test_threshold_and_prominence_gate_boundaries():
    emb = _topics([6, 6, 6])
    assert texttiling.boundaries(emb, 3, 0.15, tau=-1.0) == []  # nothing falls below tau
    assert texttiling.boundaries(emb, 3, 5.0, tau=1.0) == []  # nothing is that prominent
    one_topic = _topics([12], noise=0.01)
    tau = texttiling.trace_threshold(texttiling.gap_similarities(one_topic, 3), 30)
    assert texttiling.boundaries(one_topic, 3, 0.15, tau) == []


def test_trace_threshold_is_the_percentile_of_the_block_similarities():
    """tau compares like with like: the P30 of the same block similarities the valleys are read from."""
    emb = _topics([4, 5], seed=1)
    c = texttiling.gap_similarities(emb, 3)
    assert texttiling.trace_threshold(c, 30) == pytest.approx(np.percentile(c, 30))
    assert texttiling.trace_threshold(np.zeros(0), 30) == float("-inf")
    # block means are smoother than single sentences: their P30 is above that of consecutive cosines
    noisy = _topics([12], noise=0.6, seed=3)
    single = np.einsum("ij,ij->i", noisy[:-1], noisy[1:])
    assert texttiling.trace_threshold(texttiling.gap_similarities(noisy, 3), 30) > np.percentile(single, 30)


@pytest.mark.parametrize("n, max_len, cuts", [(10, 4, [3, 6]), (4, 4, []), (48, 24, [24]), (49, 24, [16, 32]),
                                              (1, 1, [])])
def test_even_cuts(n, max_len, cuts):
    assert texttiling.even_cuts(n, max_len) == cuts
    parts = np.diff([0, *cuts, n])
    assert parts.max() <= max_len and parts.max() - parts.min() <= 1
