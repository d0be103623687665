"""Run-to-run stability and profile geometry (paper Appendix I, Figures 16 and 17).

**Coefficient of variation.** For one model, question and metric, the runs' values ``x_1..x_r`` (r >= 2)
give ``CV = sd(x) / |mean(x)|`` with the sample standard deviation (ddof = 1; our reading, the paper does
not say). A model x metric cell is the mean CV over its questions. A question whose mean is 0 has no CV
(all runs score 0 there, or they cancel out) and is left out of the mean; the cell records how many
questions entered it. With a single run per model and question there is no CV at all: the table is empty.

**Cosine similarity** between two models' mean 5D-CP vectors ``u, v``: ``u . v / (|u| |v|)`` (0 when one
of them is the zero vector), the paper's Figure 17.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

CV_COLUMNS = ["model", "metric", "cv", "n_questions", "n_runs"]
COSINE_COLUMNS = ["model_a", "model_b", "cosine"]


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Sample sd over |mean| (NaN with fewer than 2 values or a zero mean).

    >>> round(coefficient_of_variation([2.0, 4.0]), 4)
    0.4714
    """
    x = np.asarray(list(values), dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < 2 or x.mean() == 0:
        return float("nan")
    return float(x.std(ddof=1) / abs(x.mean()))


def run_cv(metrics: pd.DataFrame, columns: Sequence[str], by: Sequence[str] = ("model", "question_set",
                                                                                 "question_id")) -> pd.DataFrame:
    """Mean run-to-run CV per model and metric: ``model, metric, cv, n_questions, n_runs``."""
    by = [b for b in by if b in metrics.columns]
    cols = [c for c in columns if c in metrics.columns]
    if metrics.empty or "run" not in metrics.columns:
        return pd.DataFrame(columns=CV_COLUMNS)
    rows = []
    for key, grp in metrics.groupby(by, sort=True):
        if grp["run"].nunique() < 2:
            continue
        model = key[0] if isinstance(key, tuple) else key
        for c in cols:
            rows.append({"model": model, "metric": c, "cv": coefficient_of_variation(grp[c]), "runs": len(grp)})
    if not rows:
        return pd.DataFrame(columns=CV_COLUMNS)
    per_q = pd.DataFrame(rows)
    out = (per_q.groupby(["model", "metric"], sort=False)
           .agg(cv=("cv", "mean"), n_questions=("cv", "count"), n_runs=("runs", "max")).reset_index())
    order = {m: i for i, m in enumerate(cols)}
    out = out.sort_values(["model", "metric"], key=lambda s: s.map(order) if s.name == "metric" else s)
    return out[CV_COLUMNS].reset_index(drop=True)


def cosine(u: Sequence[float], v: Sequence[float]) -> float:
    """Cosine of two vectors (0 when either is zero).

    >>> round(cosine([1, 0], [1, 1]) ** 2, 6)
    0.5
    """
    a, b = np.asarray(u, dtype=float), np.asarray(v, dtype=float)
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na > 0 and nb > 0 else 0.0


def cosine_table(model_profiles: pd.DataFrame, dims: Sequence[str], by: str = "model") -> pd.DataFrame:
    """Cosine of every ordered pair of models' 5D-CP vectors: ``model_a, model_b, cosine``."""
    dims = [d for d in dims if d in model_profiles.columns]
    vectors = {str(r[by]): r[dims].to_numpy(dtype=float) for _, r in model_profiles.iterrows()}
    rows = [{"model_a": a, "model_b": b, "cosine": cosine(vectors[a], vectors[b])} for a in vectors for b in vectors]
    return pd.DataFrame(rows, columns=COSINE_COLUMNS)
