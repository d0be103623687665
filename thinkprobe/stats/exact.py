"""Spearman's rho with a p-value that is right for small n: exact (every permutation) below ``EXACT_BELOW``.

Why. scipy's ``spearmanr`` p comes from a t approximation that is meaningless for a handful of points: five
models ranked identically give rho = 1 and p ~ 1e-24, while only 2 of the 5! = 120 equally likely
orderings reach |rho| = 1 under independence, so the exact two-sided p is 2 / 120 = 0.017. The model-ranking
comparisons of section 7 (equal vs PCA weights, a second encoder) have one point per model (5 or 7), so
their p must be exact.

Exact p: with the ranks of ``x`` fixed, every permutation of the ranks of ``y`` is equally likely under
independence; p = the share of the n! permutations whose |rho| is at least the observed |rho| (two-sided;
ties keep their average ranks, so the null is the permutation distribution of those ranks). For n >= 
``EXACT_BELOW`` the t approximation is used and the ``method`` says so.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import permutations
from typing import Sequence

import numpy as np

EXACT_BELOW = 10  # n! = 362,880 orderings at n = 9: enumerated in well under a second


@lru_cache(maxsize=16)
def _orderings(n: int) -> np.ndarray:
    return np.array(list(permutations(range(n))), dtype=np.int16)


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation of vector ``a`` with each row of ``b``."""
    ac = a - a.mean()
    bc = b - b.mean(axis=1, keepdims=True)
    den = np.sqrt((ac * ac).sum()) * np.sqrt((bc * bc).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (bc @ ac) / den


def spearman(x: Sequence[float], y: Sequence[float], exact_below: int = EXACT_BELOW) -> dict[str, object]:
    """Spearman's rho of ``x`` and ``y`` with its two-sided p: exact permutation p when n < ``exact_below``.

    Returns ``rho``, ``p``, ``n`` and ``method`` (``"exact"`` or ``"asymptotic"``). Pairs with a missing value
    are dropped; with fewer than 3 pairs, or a constant variable, rho and p are NaN.

    >>> r = spearman([1, 2, 3, 4, 5], [2, 4, 6, 8, 10])
    >>> round(r["rho"], 6), round(r["p"], 4), r["method"]
    (1.0, 0.0167, 'exact')
    """
    from scipy.stats import rankdata, spearmanr

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    n = len(a)
    nan = {"rho": float("nan"), "p": float("nan"), "n": n, "method": "exact" if n < exact_below else "asymptotic"}
    if n < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return nan
    if n >= exact_below:
        res = spearmanr(a, b)
        return {"rho": float(res.statistic), "p": float(res.pvalue), "n": n, "method": "asymptotic"}
    ra, rb = rankdata(a), rankdata(b)
    rho = float(spearmanr(a, b).statistic)  # the same value as every other rho of the tables
    null = _pearson_rows(ra, rb[_orderings(n)])
    tol = 1e-9  # the observed arrangement, recomputed, must count as "as extreme"
    p = float(np.mean(np.abs(null) >= abs(rho) - tol))
    return {"rho": rho, "p": p, "n": n, "method": "exact"}
