"""Cluster bootstrap over prompts: the intervals behind the checks against the paper (:mod:`.claims`).

Why prompts. The traces of one prompt are not independent (they answer the same question, and in the
crossed design every model answers every prompt), so resampling traces one by one would understate the
spread of any statistic. A resample draws as many prompts as the study has, with replacement, and keeps
all the traces of each drawn prompt (Davison & Hinkley 1997, section 3.8); a statistic is recomputed on
every resample, from the per-trace tables (z-scores and the 5D-CP included, so the interval carries the
whole computation), and the interval is the percentile interval of the ``B`` values at the configured level
(``stats.bootstrap``, ``stats.bootstrap_seed``, ``stats.interval_level``). Seeded: the same tables give the
same intervals, bit for bit.

A check is then *inconclusive* when its interval straddles its criterion: the data cannot say on which
side the value lies.
"""

from __future__ import annotations

import warnings
from typing import Callable, Sequence

import numpy as np
import pandas as pd


def cluster_resamples(clusters: Sequence[object], b: int, seed: int) -> list[np.ndarray]:
    """``b`` resamples of row indices: each draws the clusters (prompts) with replacement and keeps all
    their rows, in cluster order.

    >>> [r.tolist() for r in cluster_resamples(["a", "a", "b"], 2, seed=0)]
    [[2, 2], [2, 0, 1]]
    """
    codes, _ = pd.factorize(pd.Series(list(clusters), dtype=object).astype(str), sort=True)
    m = int(codes.max()) + 1 if len(codes) else 0
    if m == 0:
        return [np.zeros(0, dtype=np.int64) for _ in range(b)]
    members = [np.flatnonzero(codes == c) for c in range(m)]
    draws = np.random.default_rng(seed).integers(0, m, size=(b, m))
    sizes = {len(x) for x in members}
    if len(sizes) == 1:  # balanced clusters (the crossed design): one fancy index for all resamples
        table = np.stack(members)
        return list(table[draws].reshape(b, -1))
    return [np.concatenate([members[c] for c in row]) for row in draws]


def percentile_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    """The central ``level`` percentile interval of the finite ``values`` (NaN, NaN when there are none)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(v, [a, 1.0 - a])
    return float(lo), float(hi)


def bootstrap(statistic: Callable[[np.ndarray], np.ndarray], n_rows: int, resamples: list[np.ndarray],
              level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Estimate, lower and upper bounds of a (vector-valued) ``statistic(indices)``.

    ``statistic`` maps an array of row indices to a 1-d array of values; it is evaluated on all rows (the
    estimate) and on every resample.
    """
    est = np.atleast_1d(np.asarray(statistic(np.arange(n_rows)), dtype=float))
    boot = np.array([np.atleast_1d(np.asarray(statistic(idx), dtype=float)) for idx in resamples])
    if boot.size == 0:
        nan = np.full(est.shape, np.nan)
        return est, nan, nan
    bounds = np.array([percentile_interval(boot[:, j], level) for j in range(boot.shape[1])])
    return est, bounds[:, 0], bounds[:, 1]


def epsilon2(values: np.ndarray, codes: np.ndarray) -> float:
    """Kruskal-Wallis epsilon^2 = H / (n - 1) of ``values`` grouped by integer ``codes`` (NaN values left out).

    The same H as ``scipy.stats.kruskal`` (tie-corrected); NaN with fewer than two groups, 0 for a constant.

    >>> round(epsilon2(np.array([1., 2, 3, 4, 5, 6]), np.array([0, 0, 0, 1, 1, 1])), 4)
    0.7714
    """
    from scipy.stats import rankdata

    ok = np.isfinite(values)
    v, g = values[ok], codes[ok]
    n = len(v)
    if n < 3:
        return float("nan")
    used, g = np.unique(g, return_inverse=True)
    if len(used) < 2:
        return float("nan")
    if np.ptp(v) == 0:
        return 0.0
    r = rankdata(v)
    sums = np.bincount(g, weights=r)
    sizes = np.bincount(g)
    _, t = np.unique(v, return_counts=True)
    c = 1.0 - float((t.astype(float) ** 3 - t).sum()) / (n ** 3 - n)
    h = (12.0 / (n * (n + 1)) * float((sums * sums / sizes).sum()) - 3.0 * (n + 1)) / c
    return h / (n - 1)


def zscore_columns(x: np.ndarray) -> np.ndarray:
    """Column z-scores with the population sd, as :func:`thinkprobe.profile.zscores` computes them (NaN values
    left out of mean and sd and kept NaN; a constant column scores 0 everywhere)."""
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: NaN mean and sd, as pandas
        mean = np.nanmean(x, axis=0)
        sd = np.nanstd(x, axis=0)
    safe = np.where(sd > 0, sd, 1.0)
    z = (x - mean) / safe
    z[:, sd <= 0] = 0.0
    return z
