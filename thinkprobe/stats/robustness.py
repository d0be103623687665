"""Aggregation robustness: equal-weight vs PCA-weighted 5D-CP (paper section 7, "Equal-weight aggregation").

The 5D-CP averages a dimension's metric z-scores with equal weights (eq. 1). The PCA-weighted variant
(our reading of the paper's one-sentence description) weights them by the first principal component of
the dimension's z-scores over all traces: ``w`` = the leading eigenvector of their covariance matrix
(= correlation matrix, the columns being z-scores), its sign chosen so that ``sum(w) > 0``, scaled so that
``sum(|w|) = 1``; the trace score is ``z @ w``. Models are ranked by their mean score under each scheme and
Spearman's rho compares the two rankings per dimension (the paper: rho >= 0.893 for four dimensions, 0.357
for Structure). A metric constant over the traces has z = 0 and gets weight 0. With one point per model
(5 or 7), rho's p is exact (every ordering of the models, :mod:`.exact`), not scipy's t approximation,
which gave p ~ 1e-24 for rho = 1 with 5 models (exact: 2 / 120 = 0.017).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..profile import dimension_map, zscores

ROBUSTNESS_COLUMNS = ["dimension", "rho", "p", "p_method", "n_models", "explained_variance", "weights"]


def pca_weights(z: np.ndarray) -> tuple[np.ndarray, float]:
    """First-PC weights (sign: positive sum; scale: sum |w| = 1) and the share of variance PC1 explains.

    >>> w, ev = pca_weights(np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]) - [2.0, 4.0])
    >>> np.round(w, 3).tolist(), round(ev, 3)
    ([0.333, 0.667], 1.0)
    """
    z = np.asarray(z, dtype=float)
    if z.shape[1] == 1:
        return np.ones(1), 1.0
    cov = np.cov(z, rowvar=False, ddof=0)
    vals, vecs = np.linalg.eigh(cov)
    v = vecs[:, -1]
    if v.sum() < 0:
        v = -v
    total = float(vals.sum())
    ev = float(vals[-1] / total) if total > 0 else float("nan")
    scale = np.abs(v).sum()
    return (v / scale if scale > 0 else np.full(len(v), 1.0 / len(v))), ev


def aggregation_robustness(metrics: pd.DataFrame, by: str = "model", dimensions=None) -> pd.DataFrame:
    """Spearman rho between equal-weight and PCA-weighted model rankings, per dimension.

    ``dimensions``: the dimension map (``analysis.profile.dimensions``; None: the default).
    """
    from .exact import spearman

    rows = []
    for dim, members in dimension_map(dimensions).items():
        cols = [m for m in members if m in metrics.columns]
        if not cols or metrics.empty:
            continue
        z, _ = zscores(metrics, cols)
        zm = z.to_numpy(dtype=float)
        w, ev = pca_weights(zm)
        frame = pd.DataFrame({by: metrics[by].to_numpy(), "equal": zm.mean(axis=1), "pca": zm @ w})
        means = frame.groupby(by)[["equal", "pca"]].mean()
        res = spearman(means["equal"], means["pca"])
        rows.append({"dimension": dim, "rho": res["rho"], "p": res["p"], "p_method": res["method"],
                     "n_models": len(means), "explained_variance": ev,
                     "weights": json.dumps({c: round(float(x), 6) for c, x in zip(cols, w)})})
    return pd.DataFrame(rows, columns=ROBUSTNESS_COLUMNS)
