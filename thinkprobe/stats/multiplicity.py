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


PAGE_COLUMNS = ["source", "grouping", "target", "test", "p", "bound", "p_holm"]


def ranking_identity(weights_json: str) -> bool:
    """A dimension of the aggregation-robustness table whose equal-vs-PCA rho is 1 by construction: two
    metrics or fewer (PC1 of two standardised variables weights them equally)."""
    import json

    return len(json.loads(weights_json)) <= 2


def page_pvalues(tables: dict) -> "pd.DataFrame":
    """Every p-value the results page shows (:mod:`.results_text`), one row each, with Holm's adjustment over all
    of them together (one family: the page) in ``p_holm``.

    Sources: the kruskal table's permutation p (every grouping and target) and Friedman p (model), the
    aggregation robustness' exact Spearman p (dimensions where rho = 1 by construction are identities and show
    no p), the second encoder's, and the length-partialled effects' permutation p. ``bound``: the p is at the
    permutation floor 1 / (B + 1), so it is printed ``<= p`` (and its Holm value is a bound too).
    """
    import pandas as pd

    rows = []
    k = tables.get("kruskal")
    if k is not None and len(k):
        b = int(k.B.iloc[0]) if "B" in k else 0
        floor = 1.0 / (b + 1) if b else 0.0
        for x in k.itertuples():
            if "p_perm" in k and np.isfinite(x.p_perm):
                rows.append(("kruskal", x.grouping, x.target, "permutation", float(x.p_perm),
                             bool(b and x.p_perm <= floor * (1 + 1e-9))))
            if "p_friedman" in k and np.isfinite(x.p_friedman):
                rows.append(("kruskal", x.grouping, x.target, "Friedman", float(x.p_friedman), False))
    r = tables.get("aggregation_robustness")
    if r is not None and len(r):
        for x in r.itertuples():
            if np.isfinite(x.p) and not ranking_identity(x.weights):
                rows.append(("aggregation_robustness", "model", x.dimension, "exact Spearman", float(x.p), False))
    s = tables.get("encoder_sensitivity")
    if s is not None and len(s):
        for x in s[s.kind == "dimension"].itertuples():
            if np.isfinite(x.p):
                rows.append(("encoder_sensitivity", "model", x.target, "exact Spearman", float(x.p), False))
    lp = tables.get("length_partial")
    if lp is not None and len(lp) and k is not None and "B" in k:
        floor = 1.0 / (int(k.B.iloc[0]) + 1)
        for x in lp.itertuples():
            if np.isfinite(x.p_perm_partial):
                rows.append(("length_partial", x.grouping, x.target, "permutation", float(x.p_perm_partial),
                             bool(x.p_perm_partial <= floor * (1 + 1e-9))))
    out = pd.DataFrame(rows, columns=PAGE_COLUMNS[:-1])
    out["p_holm"] = holm(out["p"].to_numpy(dtype=float)) if len(out) else []
    return out


def page_lookup(page: "pd.DataFrame") -> dict:
    """``{(source, grouping, target, test): (p, bound, p_holm)}`` of :func:`page_pvalues`."""
    return {(x.source, x.grouping, x.target, x.test): (x.p, x.bound, x.p_holm) for x in page.itertuples()}
