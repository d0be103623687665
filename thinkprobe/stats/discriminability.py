"""Metric discriminability: Kruskal-Wallis H, p and epsilon^2 per target and grouping (paper sections 5.2-5.3).

For a target (one of the 19 metrics or one of the five 5D-CP dimensions) and a grouping column (``model``
or ``domain``), the Kruskal-Wallis test (``scipy.stats.kruskal``, tie-corrected) gives H and p over the
``k`` groups holding ``n`` traces in all. The effect size is

    epsilon^2 = H (n + 1) / (n^2 - 1)      (= H / (n - 1))

the rank-based analogue of eta^2 (Tomczak & Tomczak 2014), with the paper's thresholds 0.06 (small/medium)
and 0.14 (large). Bonferroni correction multiplies p by the number of targets tested in the same family,
a family being one grouping and one kind of target (19 metrics, or 5 dimensions), capped at 1: the
paper's "all 19 survive Bonferroni correction for 19 comparisons".

Beside the paper's test, each row has (ours):

- the blocked test of the crossed design, Friedman's test within prompts (:mod:`.blocked`; ``p_friedman``,
  ``kendall_w``, ``n_blocks``: NaN for a grouping that no prompt spans, such as domain), Holm-adjusted within
  the family (``p_friedman_holm``);
- with ``permutation``, the permutation null of epsilon^2 (:mod:`.permutation`), its p's Monte Carlo standard
  error (``p_perm_mcse``) and ``p_perm_holm``, the permutation p Holm-adjusted within the family
  (:mod:`.multiplicity`; a family is one grouping and one kind, as for Bonferroni).

Our readings where the paper is silent: traces with a missing value or an empty group label are left out
of that target's test; a target constant over all traces (scipy refuses it) gets H = 0, p = 1,
epsilon^2 = 0, which is what "no difference between groups" means; with fewer than two groups H, p and
epsilon^2 are NaN.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd

KRUSKAL_COLUMNS = ["target", "kind", "grouping", "H", "p", "n", "k", "epsilon2", "p_bonferroni"]
BLOCKED_COLUMNS = ["friedman_chi2", "p_friedman", "kendall_w", "n_blocks", "p_friedman_holm"]


def epsilon_squared(h: float, n: int) -> float:
    """Kruskal-Wallis effect size epsilon^2 = H (n + 1) / (n^2 - 1).

    >>> round(epsilon_squared(12.0, 31), 4)
    0.4
    """
    if n < 2 or not np.isfinite(h):
        return float("nan")
    return float(h) * (n + 1) / (n * n - 1)


def kruskal_wallis(values: Sequence[float], groups: Sequence[object]) -> dict[str, float]:
    """H, p, n, k and epsilon^2 of the Kruskal-Wallis test of ``values`` across ``groups``.

    >>> r = kruskal_wallis([1, 2, 3, 4, 5, 6], ["a", "a", "a", "b", "b", "b"])
    >>> round(r["H"], 4), r["n"], r["k"]
    (3.8571, 6, 2)
    """
    from scipy.stats import kruskal

    frame = pd.DataFrame({"v": pd.to_numeric(pd.Series(list(values)), errors="coerce"),
                          "g": pd.Series(list(groups), dtype=object)})
    frame = frame[frame["v"].notna() & frame["g"].notna() & (frame["g"].astype(str) != "")]
    samples = [grp["v"].to_numpy(dtype=float) for _, grp in frame.groupby("g", sort=True)]
    n, k = int(len(frame)), len(samples)
    if k < 2:
        return {"H": float("nan"), "p": float("nan"), "n": n, "k": k, "epsilon2": float("nan")}
    if np.ptp(frame["v"].to_numpy(dtype=float)) == 0:
        return {"H": 0.0, "p": 1.0, "n": n, "k": k, "epsilon2": 0.0}
    h, p = kruskal(*samples)
    return {"H": float(h), "p": float(p), "n": n, "k": k, "epsilon2": epsilon_squared(float(h), n)}


def bonferroni(p: Iterable[float], m: int | None = None) -> np.ndarray:
    """Bonferroni-adjusted p-values: ``min(1, p * m)``, ``m`` = number of tests (default: the non-NaN ones)."""
    arr = np.asarray(list(p), dtype=float)
    m = int(np.isfinite(arr).sum()) if m is None else m
    return np.minimum(1.0, arr * m)


def kruskal_table(table: pd.DataFrame, targets: Sequence[str], groupings: Sequence[str] = ("model", "domain"),
                  kind: str = "metric", permutation: dict | None = None) -> pd.DataFrame:
    """One row per target and grouping: ``target, kind, grouping, H, p, n, k, epsilon2, p_bonferroni``, then
    the blocked test's :data:`BLOCKED_COLUMNS`.

    Groupings absent from ``table`` (or with every label empty) are skipped. Bonferroni and Holm run over the
    targets of one grouping (the caller passes one kind of target). ``permutation`` (``{"B": 1000, "seed": 42, "units": {"model":
    "within_prompts", "domain": "prompts"}}``, config ``stats.permutations``, ``permutation_seed`` and
    ``permutation_units``) adds each epsilon^2's permutation null (:mod:`.permutation`):
    ``permutation, B, epsilon2_null_mean, epsilon2_null_p95, p_perm, epsilon2_corrected, p_perm_mcse,
    p_perm_holm``.
    """
    from .blocked import friedman
    from .multiplicity import holm
    from .permutation import NULL_COLUMNS, null_columns, prompt_ids

    b = int((permutation or {}).get("B", 0))
    prompts = prompt_ids(table)
    rows = []
    for grouping in groupings:
        if grouping not in table.columns:
            continue
        labels = table[grouping].astype(str)
        if (labels == "").all():
            continue
        for target in targets:
            if target not in table.columns:
                continue
            row = {"target": target, "kind": kind, "grouping": grouping,
                   **kruskal_wallis(table[target], table[grouping])}
            if prompts is not None:
                row.update(friedman(table[target], table[grouping], prompts))
            if b > 0:
                scheme = (permutation.get("units") or {}).get(grouping, "traces")
                row.update(null_columns(table, target, grouping, b, int(permutation["seed"]), scheme))
            rows.append(row)
    nulls = NULL_COLUMNS + ["p_perm_holm"] if b > 0 else []
    out = pd.DataFrame(rows, columns=KRUSKAL_COLUMNS + BLOCKED_COLUMNS + nulls)
    for grouping, idx in out.groupby("grouping").groups.items():
        out.loc[idx, "p_bonferroni"] = bonferroni(out.loc[idx, "p"])
        out.loc[idx, "p_friedman_holm"] = holm(out.loc[idx, "p_friedman"])
        if b > 0:
            out.loc[idx, "p_perm_holm"] = holm(out.loc[idx, "p_perm"])
    for col in ("p_bonferroni", "friedman_chi2", "p_friedman", "kendall_w", "p_friedman_holm", *nulls[2:]):
        out[col] = out[col].astype(float)
    out["n_blocks"] = out["n_blocks"].fillna(0).astype(int)
    return out


def model_over_domain(kruskal: pd.DataFrame) -> pd.DataFrame:
    """Per target: epsilon^2 by model, by domain, and their ratio (model / domain; inf when domain is 0).

    The paper compares uncorrected epsilon^2 (``epsilon2_model``, ``epsilon2_domain``, ``ratio``,
    ``model_dominates_uncorrected``: kept for comparison). Uncorrected values favour the grouping with more
    levels (chance alone gives about (k - 1) / (n - 1)), so when ``kruskal`` carries permutation nulls
    ``model_dominates`` compares the chance-corrected values ``corrected_model`` and ``corrected_domain``
    (epsilon^2 minus its null mean, :mod:`.permutation`); without them it is the uncorrected comparison.
    """
    wide = kruskal.pivot_table(index=["target", "kind"], columns="grouping", values="epsilon2", sort=False)
    out = pd.DataFrame({"target": [t for t, _ in wide.index], "kind": [k for _, k in wide.index]})
    model = wide["model"].to_numpy(dtype=float) if "model" in wide else np.full(len(wide), np.nan)
    domain = wide["domain"].to_numpy(dtype=float) if "domain" in wide else np.full(len(wide), np.nan)
    out["epsilon2_model"] = model
    out["epsilon2_domain"] = domain
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = np.where(domain > 0, model / np.where(domain > 0, domain, 1.0),
                                np.where(model > 0, np.inf, np.nan))
    out["model_dominates_uncorrected"] = out["epsilon2_model"] > out["epsilon2_domain"]
    if "epsilon2_corrected" in kruskal.columns:
        corr = kruskal.pivot_table(index=["target", "kind"], columns="grouping", values="epsilon2_corrected",
                                   sort=False, dropna=False).reindex(wide.index)
        for g in ("model", "domain"):
            out[f"corrected_{g}"] = corr[g].to_numpy(dtype=float) if g in corr else np.nan
        out["model_dominates"] = out["corrected_model"] > out["corrected_domain"]
    else:
        out["model_dominates"] = out["model_dominates_uncorrected"]
    return out
