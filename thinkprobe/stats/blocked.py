"""A blocked rank test for the crossed design: Friedman's test of the models within prompts.

Why. In the study every model answers every prompt (paper section 4: 7 models x 200 questions x 3 runs),
so the traces of one prompt are related: a hard prompt lengthens every model's trace. Kruskal-Wallis (the
paper's test, sections 5.2-5.3) treats all traces as independent draws; the prompts' own variance then
sits in its within-group spread, and its p-values ignore the design. Friedman's test (Friedman 1937) ranks
the models *within* each prompt, so prompt-to-prompt differences cancel, and tests whether some model
ranks systematically higher. It is reported beside Kruskal-Wallis, not instead of it: the paper's numbers
are Kruskal-Wallis', and the blocked test says what the design supports.

Blocks are prompts (``question_set`` and ``question_id``); a prompt enters only if every group answered it
(a complete block); with several traces per cell (runs), the cell's value is their mean. Ranks within a
block are average ranks for ties, and the statistic carries the usual tie correction:

    Q = (12 / (b k (k + 1)) sum_j R_j^2 - 3 b (k + 1)) / (1 - sum(t^3 - t) / (b k (k^2 - 1)))

with ``b`` blocks, ``k`` groups and ``R_j`` the rank sum of group j (scipy's ``friedmanchisquare``); p is
chi^2 with k - 1 degrees of freedom (``b`` is 100 prompts in the corpus study, far beyond where the
approximation is good). Kendall's W = Q / (b (k - 1)) is its effect size (0: no agreement among prompts
on the models' order, 1: every prompt orders the models the same way).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

FRIEDMAN_KEYS = ("friedman_chi2", "p_friedman", "kendall_w", "n_blocks")


def complete_blocks(values: Sequence[float], groups: Sequence[object], blocks: Sequence[object]) -> pd.DataFrame:
    """The blocks x groups matrix of cell means over the blocks that every group answered (finite values)."""
    frame = pd.DataFrame({"v": pd.to_numeric(pd.Series(list(values)), errors="coerce"),
                          "g": pd.Series(list(groups), dtype=object).astype(str),
                          "b": pd.Series(list(blocks), dtype=object).astype(str)})
    frame = frame[frame["v"].notna() & (frame["g"] != "") & (frame["g"] != "nan")]
    if frame.empty:
        return pd.DataFrame()
    cells = frame.groupby(["b", "g"], sort=True)["v"].mean().unstack("g")
    return cells.dropna(axis=0, how="any")


def friedman(values: Sequence[float], groups: Sequence[object], blocks: Sequence[object]) -> dict[str, float]:
    """Friedman's chi^2, p, Kendall's W and the number of complete blocks (NaN: fewer than 2 blocks or groups).

    >>> r = friedman([1, 2, 3, 1, 2, 3, 1, 2, 3], list("abcabcabc"), [0, 0, 0, 1, 1, 1, 2, 2, 2])
    >>> round(r["friedman_chi2"], 3), round(r["kendall_w"], 3), r["n_blocks"]
    (6.0, 1.0, 3)
    """
    from scipy.stats import chi2, rankdata

    m = complete_blocks(values, groups, blocks)
    b, k = m.shape if m.size else (0, 0)
    nan = {"friedman_chi2": float("nan"), "p_friedman": float("nan"), "kendall_w": float("nan"), "n_blocks": int(b)}
    if b < 2 or k < 2:
        return nan
    x = m.to_numpy(dtype=float)
    ranks = rankdata(x, axis=1)
    r = ranks.sum(axis=0)
    ties = 0.0
    for row in x:
        _, t = np.unique(row, return_counts=True)
        ties += float((t.astype(float) ** 3 - t).sum())
    denom = 1.0 - ties / (b * k * (k * k - 1))
    if denom <= 0:  # every block constant: no ordering at all
        return {"friedman_chi2": 0.0, "p_friedman": 1.0, "kendall_w": 0.0, "n_blocks": int(b)}
    q = (12.0 / (b * k * (k + 1)) * float((r * r).sum()) - 3.0 * b * (k + 1)) / denom
    q = max(q, 0.0)
    return {"friedman_chi2": float(q), "p_friedman": float(chi2.sf(q, k - 1)), "kendall_w": float(q / (b * (k - 1))),
            "n_blocks": int(b)}
