"""Length confound (paper Appendix G and Figure 18).

1. Spearman's rho (``scipy.stats.spearmanr``) of every metric with trace length over all traces; length is
   AT (the trace's tokens), the paper's measure, so AT itself is not listed.
2. The length-excluded profile: the 5D-CP recomputed without AT, ATU and TPI (the remaining 16 metrics
   re-standardised, :func:`thinkprobe.profile.trace_profiles` with ``exclude``), and the Kruskal-Wallis
   epsilon^2 of each dimension by model and by domain under both profiles. The paper finds only
   Efficiency changing (0.385 -> 0.332) and model > domain preserved.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..vocabulary import LENGTH_METRICS, METRIC_NAMES
from ..profile import dimension_map, trace_profiles
from .discriminability import kruskal_wallis

CONFOUND_COLUMNS = ["metric", "rho", "p", "n", "length"]
EXCLUDED_COLUMNS = ["dimension", "grouping", "epsilon2_full", "epsilon2_excluded", "delta", "relative_change",
                    "p_full", "p_excluded", "n"]
NULL_EXCLUDED_COLUMNS = ["epsilon2_null_mean_excluded", "epsilon2_excluded_corrected"]


def length_correlations(metrics: pd.DataFrame, length: str = "AT",
                        columns: Sequence[str] = METRIC_NAMES) -> pd.DataFrame:
    """Spearman rho and p of each metric with ``length`` (NaN for a constant metric)."""
    from scipy.stats import spearmanr

    rows = []
    x = pd.to_numeric(metrics[length], errors="coerce") if length in metrics else pd.Series(dtype=float)
    for m in columns:
        if m == length or m not in metrics.columns:
            continue
        y = pd.to_numeric(metrics[m], errors="coerce")
        ok = x.notna() & y.notna()
        if ok.sum() > 2 and x[ok].nunique() > 1 and y[ok].nunique() > 1:
            res = spearmanr(x[ok], y[ok])
            rho, p = float(res.statistic), float(res.pvalue)
        else:
            rho, p = float("nan"), float("nan")
        rows.append({"metric": m, "rho": rho, "p": p, "n": int(ok.sum()), "length": length})
    return pd.DataFrame(rows, columns=CONFOUND_COLUMNS)


def length_excluded_effects(metrics: pd.DataFrame, groupings: Sequence[str] = ("model", "domain"),
                            exclude: Sequence[str] = LENGTH_METRICS, dimensions=None,
                            permutation: dict | None = None) -> pd.DataFrame:
    """epsilon^2 per dimension and grouping under the full and the length-excluded 5D-CP.

    ``dimensions``: the dimension map (``analysis.profile.dimensions``; None: the default). ``permutation``
    (as in :func:`.discriminability.kruskal_table`, B > 0) adds the length-excluded epsilon^2's permutation
    null mean and its chance-corrected value, so App. G's model-vs-domain comparison can be made on values
    that do not favour the grouping with more levels (:mod:`.permutation`).
    """
    from .permutation import null_columns

    b_perm = int((permutation or {}).get("B", 0))
    full, _ = trace_profiles(metrics, dimensions=dimensions)
    reduced, _ = trace_profiles(metrics, tuple(exclude), dimensions=dimensions)
    rows = []
    for grouping in groupings:
        if grouping not in metrics.columns or (metrics[grouping].astype(str) == "").all():
            continue
        for dim in dimension_map(dimensions):
            a = kruskal_wallis(full[dim], full[grouping]) if dim in full else None
            b = kruskal_wallis(reduced[dim], reduced[grouping]) if dim in reduced else None
            e_full = a["epsilon2"] if a else float("nan")
            e_red = b["epsilon2"] if b else float("nan")
            rel = (e_red - e_full) / e_full if e_full and np.isfinite(e_full) else float("nan")
            row = {"dimension": dim, "grouping": grouping, "epsilon2_full": e_full, "epsilon2_excluded": e_red,
                   "delta": e_red - e_full, "relative_change": rel, "p_full": a["p"] if a else float("nan"),
                   "p_excluded": b["p"] if b else float("nan"), "n": a["n"] if a else 0}
            if b_perm > 0 and dim in reduced:
                null = null_columns(reduced, dim, grouping, b_perm, int(permutation["seed"]),
                                    (permutation.get("units") or {}).get(grouping, "traces"))
                row.update(epsilon2_null_mean_excluded=null["epsilon2_null_mean"],
                           epsilon2_excluded_corrected=null["epsilon2_corrected"])
            rows.append(row)
    return pd.DataFrame(rows, columns=EXCLUDED_COLUMNS + (NULL_EXCLUDED_COLUMNS if b_perm > 0 else []))
