"""Multiple testing: Holm's step-down adjustment, and what a count of exceedances means under the null.

The study tests 19 metrics and 5 dimensions per grouping. A *family* is one grouping and one kind of target
(19 metrics, or 5 dimensions), the family the paper's Bonferroni correction runs over (section 5.2: "all 19
survive Bonferroni correction for 19 comparisons"). Within a family, permutation p-values are adjusted with
Holm's method (Holm 1979): it controls the family-wise error rate at the same level as Bonferroni under any
dependence between the tests, and is never less powerful. Bonferroni stays in the tables where it reproduces
the paper's own criterion.

A count "k of n targets above the null's 95th percentile" is read against its expectation under the null:
each target exceeds its own 95th percentile with probability 0.05 when it carries no effect, so n targets
give 0.05 n exceedances on average (by linearity of expectation, whatever the dependence between targets).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np


def holm(p: Iterable[float]) -> np.ndarray:
    """Holm-adjusted p-values, in the input order; NaN entries stay NaN and do not count as tests.

    ``p_(i)`` (the i-th smallest of m) is adjusted to ``max_{j <= i} min(1, (m - j + 1) p_(j))``; a test is
    rejected at family-wise level alpha when its adjusted p is <= alpha (the same decisions as the step-down
    procedure).

    >>> holm([0.01, 0.04, 0.03]).round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> holm([0.02, float("nan")]).tolist()
    [0.02, nan]
    """
    arr = np.asarray(list(p), dtype=float)
    out = np.full(arr.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(arr))
    m = len(ok)
    if m == 0:
        return out
    order = ok[np.argsort(arr[ok], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * arr[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


def expected_exceedances(n: int, level: float = 0.95) -> float:
    """Expected number of ``n`` null targets above their null's ``level`` quantile: ``n (1 - level)``.

    >>> round(expected_exceedances(24), 2)
    1.2
    """
    return float(n) * (1.0 - float(level))
