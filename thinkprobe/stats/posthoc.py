"""Dunn's post-hoc pairwise tests with Bonferroni correction (paper Appendix I, Figure 15).

For each target and each pair of groups (models), Dunn's z compares mean ranks over the pooled sample
(tie-corrected); scikit-posthocs' ``posthoc_dunn(..., p_adjust="bonferroni")`` computes it and
multiplies each p by the number of pairs of that target (capped at 1). The paper's figure is the
pairs x metrics table of these adjusted p-values.
"""

from __future__ import annotations

from itertools import combinations
from typing import Sequence

import numpy as np
import pandas as pd

DUNN_COLUMNS = ["target", "group_a", "group_b", "p_adj", "grouping"]


def dunn_pairs(values: Sequence[float], groups: Sequence[object]) -> pd.DataFrame:
    """Bonferroni-adjusted Dunn p-value of every pair of groups: ``group_a, group_b, p_adj`` (a < b)."""
    import scikit_posthocs as sp

    frame = pd.DataFrame({"v": pd.to_numeric(pd.Series(list(values)), errors="coerce"),
                          "g": pd.Series(list(groups), dtype=object).astype(str)})
    frame = frame[frame["v"].notna() & (frame["g"] != "")]
    labels = sorted(frame["g"].unique())
    pairs = list(combinations(labels, 2))
    if not pairs:
        return pd.DataFrame(columns=["group_a", "group_b", "p_adj"])
    if np.ptp(frame["v"].to_numpy(dtype=float)) == 0:
        return pd.DataFrame([{"group_a": a, "group_b": b, "p_adj": 1.0} for a, b in pairs])
    matrix = sp.posthoc_dunn(frame, val_col="v", group_col="g", p_adjust="bonferroni")
    return pd.DataFrame([{"group_a": a, "group_b": b, "p_adj": float(matrix.loc[a, b])} for a, b in pairs])


def dunn_table(table: pd.DataFrame, targets: Sequence[str], grouping: str = "model") -> pd.DataFrame:
    """Long table ``target, group_a, group_b, p_adj, grouping`` over ``targets`` (metrics or dimensions)."""
    parts = []
    for target in targets:
        if target not in table.columns or grouping not in table.columns:
            continue
        pairs = dunn_pairs(table[target], table[grouping])
        pairs.insert(0, "target", target)
        pairs["grouping"] = grouping
        parts.append(pairs)
    if not parts:
        return pd.DataFrame(columns=DUNN_COLUMNS)
    return pd.concat(parts, ignore_index=True)[DUNN_COLUMNS]


def significance_stars(p: float) -> str:
    """``***`` p < 0.001, ``**`` p < 0.01, ``*`` p < 0.05, else ``ns`` (the paper's Figure 15 overlay)."""
    if not np.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "ns"
