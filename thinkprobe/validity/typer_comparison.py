"""The study under two typers side by side (``validity.compare_typers``; docs/validity.md, "Both typers in one
study"): per model, each 5D dimension's score and each metric's mean under the study's typer and under the
other; how the model ranking on each dimension changes; which metrics change most.

The metric definitions and the 5D-CP (paper section 3.5, eq. 1) stay the paper's: only the node types CRT
and MET differ between the two graphs of a unit (:mod:`thinkprobe.learned_typer`), and every metric and
dimension is computed from each typer's own tables as the study computes them (each profile table
z-scores its own metrics table, so a dimension score is relative to the study under that typer).

One table, one row per (section, item, model):

- ``section = dimension``, ``item`` a dimension, ``model`` a model: ``score_a`` / ``score_b`` the model's mean
  dimension score under typer ``a`` (the study's) and ``b`` (the other), ``change = score_b - score_a``;
- ``section = dimension``, ``model = ""``: the ranking of the models on that dimension under each typer
  compared: ``spearman`` (rho), ``kendall`` (tau-b) and ``n_models`` (NaN with fewer than two models, or when
  one ranking is constant);
- ``section = metric``, ``model`` a model: the metric's mean over the model's units under each typer;
- ``section = metric``, ``model = ""``: over the units analysed under both typers, ``mean_abs_change`` (the
  mean |metric_b - metric_a| per unit), ``mean_abs_change_sd`` (the same in units of the metric's standard
  deviation under typer a: comparable across metrics; NaN for a constant metric), ``changed`` (the share
  of units whose value differs) and ``rank_change`` (1 = the metric that changes most, by
  ``mean_abs_change_sd``; ties share the best rank; NaN for a constant metric).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..vocabulary import DIMENSIONS, METRIC_NAMES

COLUMNS = ("section", "item", "model", "typer_a", "typer_b", "score_a", "score_b", "change", "spearman",
           "kendall", "n_models", "mean_abs_change", "mean_abs_change_sd", "changed", "rank_change")


def _rankings(a: pd.Series, b: pd.Series) -> tuple[float, float, int]:
    """Spearman's rho and Kendall's tau-b between two scorings of the same models (NaN where undefined)."""
    from scipy.stats import kendalltau, spearmanr

    both = pd.concat([a, b], axis=1).dropna()
    n = len(both)
    if n < 2 or both.iloc[:, 0].nunique() < 2 or both.iloc[:, 1].nunique() < 2:
        return float("nan"), float("nan"), n
    return (float(spearmanr(both.iloc[:, 0], both.iloc[:, 1]).statistic),
            float(kendalltau(both.iloc[:, 0], both.iloc[:, 1]).statistic), n)


def _row(**values) -> dict:
    return {c: values.get(c, np.nan) for c in COLUMNS}


def compare(profiles_a: pd.DataFrame, profiles_b: pd.DataFrame, metrics_a: pd.DataFrame, metrics_b: pd.DataFrame,
            typers: Sequence[str]) -> pd.DataFrame:
    """The comparison table (module docstring) of the profile and metrics tables under typers ``a`` and ``b``.

    >>> pa = pd.DataFrame({"level": ["model"] * 2, "model": ["m1", "m2"], "Depth": [0.1, 0.4]})
    >>> pb = pd.DataFrame({"level": ["model"] * 2, "model": ["m1", "m2"], "Depth": [0.5, 0.2]})
    >>> ma = pd.DataFrame({"trace_id": ["t1", "t2"], "model": ["m1", "m2"], "CHR": [0.0, 1.0]})
    >>> mb = pd.DataFrame({"trace_id": ["t1", "t2"], "model": ["m1", "m2"], "CHR": [0.5, 1.0]})
    >>> t = compare(pa, pb, ma, mb, ("paper", "learned"))
    >>> t[(t.section == "dimension") & (t.model == "")][["item", "spearman", "n_models"]].round(6).values.tolist()
    [['Depth', -1.0, 2.0]]
    >>> t[(t.section == "metric") & (t.model == "")][["item", "mean_abs_change", "changed"]].values.tolist()
    [['CHR', 0.25, 0.5]]
    """
    a_name, b_name = typers
    common = dict(typer_a=a_name, typer_b=b_name)
    rows: list[dict] = []
    models_a = profiles_a[profiles_a["level"] == "model"].set_index("model")
    models_b = profiles_b[profiles_b["level"] == "model"].set_index("model")
    for dim in [d for d in DIMENSIONS if d in models_a.columns and d in models_b.columns]:
        sa, sb = models_a[dim].astype(float), models_b[dim].astype(float)
        for model in sorted(set(sa.index) | set(sb.index)):
            va, vb = sa.get(model, np.nan), sb.get(model, np.nan)
            rows.append(_row(section="dimension", item=dim, model=model, score_a=va, score_b=vb, change=vb - va,
                             **common))
        rho, tau, n = _rankings(sa, sb)
        rows.append(_row(section="dimension", item=dim, model="", spearman=rho, kendall=tau, n_models=n, **common))
    metrics = [m for m in METRIC_NAMES if m in metrics_a.columns and m in metrics_b.columns]
    paired = metrics_a.merge(metrics_b, on=["trace_id", "model"], suffixes=("_a", "_b"))
    study = []
    for metric in metrics:
        mean_a = metrics_a.groupby("model")[metric].mean()
        mean_b = metrics_b.groupby("model")[metric].mean()
        for model in sorted(set(mean_a.index) | set(mean_b.index)):
            va, vb = float(mean_a.get(model, np.nan)), float(mean_b.get(model, np.nan))
            rows.append(_row(section="metric", item=metric, model=model, score_a=va, score_b=vb, change=vb - va,
                             **common))
        xa, xb = paired[f"{metric}_a"].astype(float), paired[f"{metric}_b"].astype(float)
        diff = (xb - xa).abs()
        sd = float(xa.std(ddof=1)) if len(xa) > 1 else float("nan")
        mac = float(diff.mean()) if len(diff) else float("nan")
        changed = float((~np.isclose(xa, xb, rtol=0, atol=1e-12, equal_nan=True)).mean()) if len(diff) else float("nan")
        study.append(_row(section="metric", item=metric, model="", mean_abs_change=mac,
                          mean_abs_change_sd=mac / sd if sd and np.isfinite(sd) and sd > 0 else float("nan"),
                          changed=changed, **common))
    ranks = pd.Series([r["mean_abs_change_sd"] for r in study], dtype=float).rank(method="min", ascending=False)
    for r, rank in zip(study, ranks):
        r["rank_change"] = rank
    table = pd.DataFrame(rows + study, columns=list(COLUMNS))
    return table.astype({"n_models": "float64", "rank_change": "float64"})


def figure(table: pd.DataFrame, out_path: str, provenance: str = "") -> None:
    """Each model's score on each dimension under typer a (x) and typer b (y), one panel per dimension, with
    the ranking's Spearman rho and the number of models in the panel's title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..report_figures import _footer

    dims = [d for d in DIMENSIONS if d in set(table.loc[table["section"] == "dimension", "item"])]
    fig, axes = plt.subplots(1, max(len(dims), 1), figsize=(3.2 * max(len(dims), 1), 3.4), squeeze=False)
    names = table[["typer_a", "typer_b"]].iloc[0].tolist() if len(table) else ["a", "b"]
    for ax, dim in zip(axes[0], dims):
        rows = table[(table["section"] == "dimension") & (table["item"] == dim)]
        per_model = rows[rows["model"] != ""]
        study = rows[rows["model"] == ""].iloc[0]
        ax.scatter(per_model["score_a"], per_model["score_b"], s=18)
        for _, r in per_model.iterrows():
            ax.annotate(str(r["model"]), (r["score_a"], r["score_b"]), fontsize=6, xytext=(2, 2),
                        textcoords="offset points")
        vals = pd.concat([per_model["score_a"], per_model["score_b"]]).dropna()
        if len(vals):
            lo, hi = float(vals.min()), float(vals.max())
            ax.plot([lo, hi], [lo, hi], color="#999999", lw=0.8, ls="--")
        ax.set_title(f"{dim}\nSpearman {study['spearman']:.2f}, n = {int(study['n_models'])}", fontsize=8)
        ax.set_xlabel(f"typer {names[0]}", fontsize=7)
        ax.set_ylabel(f"typer {names[1]}", fontsize=7)
        ax.tick_params(labelsize=6)
    fig.suptitle("5D profile per model under the two typers (dashed: equal scores)", fontsize=9)
    fig.tight_layout()
    _footer(fig, provenance)
    fig.savefig(out_path, dpi=120, bbox_inches="tight")
    plt.close(fig)
