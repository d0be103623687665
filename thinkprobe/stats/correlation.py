"""Spearman correlation of the 19 metrics with Ward hierarchical clustering (paper Appendix I, Figure 14).

``scipy.stats.spearmanr`` gives rho and p for every pair of metrics over all traces. The clustering order
comes from ``scipy.cluster.hierarchy.linkage(method="ward")`` on the condensed distance ``1 - rho``
between metrics (our reading: the paper names Ward clustering without its distance; ``1 - rho`` puts
positively correlated metrics together, as its figure's clusters do). A metric constant over the traces
has no rank correlation (NaN); it is given distance 1 (rho = 0) to every other metric for the clustering.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

SPEARMAN_COLUMNS = ["metric_a", "metric_b", "rho", "p", "n", "ward_position_a", "ward_position_b"]


def spearman_matrix(table: pd.DataFrame, columns: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Square ``rho`` and ``p`` matrices over ``columns`` (rows with a missing value are dropped)."""
    from scipy.stats import spearmanr

    cols = [c for c in columns if c in table.columns]
    data = table[cols].apply(pd.to_numeric, errors="coerce").dropna()
    rho = pd.DataFrame(np.nan, index=cols, columns=cols)
    p = pd.DataFrame(np.nan, index=cols, columns=cols)
    varying = [c for c in cols if len(data) > 2 and data[c].nunique() > 1]
    if len(varying) >= 2:
        res = spearmanr(data[varying].to_numpy(dtype=float))
        r, pv = np.atleast_2d(res.statistic), np.atleast_2d(res.pvalue)
        rho.loc[varying, varying] = r
        p.loc[varying, varying] = pv
    for c in varying:
        rho.loc[c, c], p.loc[c, c] = 1.0, 0.0
    return rho, p


def ward_order(rho: pd.DataFrame) -> list[str]:
    """Leaf order of Ward clustering on ``1 - rho`` (names of ``rho``'s columns)."""
    from scipy.cluster.hierarchy import leaves_list

    names = list(rho.columns)
    if len(names) < 3:
        return names
    return [names[i] for i in leaves_list(ward_linkage(rho))]


def ward_linkage(rho: pd.DataFrame) -> np.ndarray:
    """The Ward linkage matrix behind :func:`ward_order` (for the dendrogram)."""
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform

    dist = 1.0 - rho.to_numpy(dtype=float).copy()
    dist[~np.isfinite(dist)] = 1.0
    dist = (dist + dist.T) / 2
    np.fill_diagonal(dist, 0.0)
    return linkage(squareform(np.clip(dist, 0.0, 2.0), checks=False), method="ward")


def spearman_table(table: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Long table: one row per ordered pair of metrics with rho, p, n and each one's Ward position."""
    rho, p = spearman_matrix(table, columns)
    order = ward_order(rho)
    pos = {m: i for i, m in enumerate(order)}
    n = int(table[list(rho.columns)].apply(pd.to_numeric, errors="coerce").dropna().shape[0])
    rows = [{"metric_a": a, "metric_b": b, "rho": float(rho.loc[a, b]), "p": float(p.loc[a, b]), "n": n,
             "ward_position_a": pos[a], "ward_position_b": pos[b]} for a in rho.index for b in rho.columns]
    return pd.DataFrame(rows, columns=SPEARMAN_COLUMNS)


def matrix_from_table(long: pd.DataFrame, value: str = "rho", ordered: bool = True) -> pd.DataFrame:
    """The square matrix of a :func:`spearman_table`, rows and columns in Ward order when ``ordered``."""
    mat = long.pivot(index="metric_a", columns="metric_b", values=value)
    if ordered and len(long):
        order = long.drop_duplicates("metric_a").sort_values("ward_position_a")["metric_a"].tolist()
    else:
        order = list(dict.fromkeys(long["metric_a"]))
    return mat.loc[order, order]
