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


PARTIAL_COLUMNS = ["target", "kind", "dimension_map", "rho_length", "grouping", "epsilon2", "epsilon2_partial",
                   "epsilon2_null_p95_partial", "p_perm_partial", "survives", "identity"]
# the dimension map under which Appendix G's (and Figure 18's) arithmetic holds (thinkprobe.profile)
PAPER_FIGURE_MAP = "app_g"


def partial_out(values: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The rank of ``values`` with the rank of ``length`` partialled out: residuals of the least-squares line
    of rank(values) on rank(length) (Spearman's partial correlation works on these residuals). A value's
    residual is 0 when it is a monotone function of length (up to the fit's rounding, removed at 1e-9).

    >>> partial_out(np.array([1., 2, 3, 4]), np.array([10., 20, 30, 40])).round(12).tolist()
    [0.0, 0.0, 0.0, 0.0]
    """
    from scipy.stats import rankdata

    ry, rx = rankdata(values), rankdata(length)
    if np.ptp(rx) == 0:
        return ry - ry.mean()
    slope, intercept = np.polyfit(rx, ry, 1)
    # rounded: ranks are multiples of 1/2, so rounding error of the fit (~1e-13) must not rank as a signal
    return np.round(ry - (slope * rx + intercept), 9)


def length_partialled_effects(metrics: pd.DataFrame, groupings: Sequence[str] = ("model", "domain"),
                              length: str = "AT", dimensions=PAPER_FIGURE_MAP,
                              permutation: dict | None = None) -> pd.DataFrame:
    """For every metric and every dimension (``dimensions``: by default Appendix G's map, the one the
    paper's own figure needs): Spearman rho with trace length, and epsilon^2 by each grouping before and after
    partialling length out (:func:`partial_out`), with the partialled value's permutation null (95th
    percentile, p) when ``permutation`` has B > 0. ``survives``: the partialled effect still stands above its
    null's 95th percentile. The length metric itself (``identity``) is 0 after partialling by construction and
    gets no p-value.
    """
    from scipy.stats import spearmanr

    from .permutation import null_columns

    prof, _ = trace_profiles(metrics, dimensions=dimensions)
    dims = list(dimension_map(dimensions))
    x = pd.to_numeric(metrics[length], errors="coerce").to_numpy(dtype=float)
    table = metrics.reset_index(drop=True).copy()
    targets = [(m, "metric") for m in METRIC_NAMES if m in metrics] + [(d, "dimension") for d in dims if d in prof]
    for t, kind in targets:
        if kind == "dimension":
            table[t] = prof[t].to_numpy()
        table[f"{t}__partial"] = partial_out(table[t].to_numpy(dtype=float), x)
    b_perm = int((permutation or {}).get("B", 0))
    rows = []
    for grouping in groupings:
        if grouping not in table or (table[grouping].astype(str) == "").all():
            continue
        for t, kind in targets:
            v = table[t].to_numpy(dtype=float)
            ident = t == length
            rho = 1.0 if ident else float(spearmanr(v, x).statistic) if np.ptp(v) > 0 else float("nan")
            full = kruskal_wallis(table[t], table[grouping])
            part = kruskal_wallis(table[f"{t}__partial"], table[grouping]) if not ident else None
            row = {"target": t, "kind": kind, "dimension_map": dimensions if isinstance(dimensions, str) else "custom",
                   "rho_length": rho, "grouping": grouping, "epsilon2": full["epsilon2"] if full else float("nan"),
                   "epsilon2_partial": 0.0 if ident else (part["epsilon2"] if part else float("nan")),
                   "epsilon2_null_p95_partial": float("nan"), "p_perm_partial": float("nan"), "survives": False,
                   "identity": "the length itself: 0 after partialling by construction" if ident else ""}
            if b_perm > 0 and not ident:
                null = null_columns(table, f"{t}__partial", grouping, b_perm, int(permutation["seed"]),
                                    (permutation.get("units") or {}).get(grouping, "traces"))
                row.update(epsilon2_null_p95_partial=null["epsilon2_null_p95"], p_perm_partial=null["p_perm"],
                           survives=bool(row["epsilon2_partial"] > null["epsilon2_null_p95"]))
            rows.append(row)
    return pd.DataFrame(rows, columns=PARTIAL_COLUMNS)
