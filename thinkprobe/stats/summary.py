"""The study's headline figures, side by side with the ThinkProbe paper's, from the ``results/stats`` tables.

    python -m thinkprobe.stats.summary results/stats      # prints a Markdown table

Each line is computed from the Parquet tables the ``stats`` rules write (nothing is re-estimated here).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ..vocabulary import DIMENSIONS

PAPER = {
    "metrics_p001": "19 / 19 (all survive Bonferroni)",
    "dims_model_gt_domain": "4 / 5 (Structure: domain 0.156 > model 0.121)",
    "max_ratio_dims": "up to ~4x (top metric: AT 0.75 vs HD 0.19 by domain)",
    "largest_metric": "AT 0.75 (then ATU 0.58, BR 0.43)",
    "cycle_prevalence": "95.6% (seq+synt 97.5%, elab+back 0%)",
    "cycle_median": "median 32, mean 49.1 per trace; median length 14",
    "length_excluded": "only Efficiency changes (0.385 -> 0.332, -14%)",
    "robustness": "rho >= 0.893 for four dimensions, 0.357 for Structure",
    "sensitivity": "not run (open item)",
}


def _fmt(x: float, nd: int = 3) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{nd}f}"


def headline(stats_dir: str | Path) -> list[tuple[str, str, str]]:
    """``(finding, ours, paper)`` rows from the tables in ``stats_dir``."""
    d = Path(stats_dir)
    rows = []
    k = pd.read_parquet(d / "kruskal.parquet")
    km = k[(k.kind == "metric") & (k.grouping == "model")]
    n_sig = int((km["p"] < 0.001).sum())
    n_bonf = int((km["p_bonferroni"] < 0.001).sum())
    rows.append(("metrics discriminating models at p < 0.001",
                 f"{n_sig} / {len(km)} ({n_bonf} after Bonferroni); epsilon^2 {_fmt(km.epsilon2.min())}.."
                 f"{_fmt(km.epsilon2.max())}", PAPER["metrics_p001"]))
    top = km.sort_values("epsilon2", ascending=False).head(3)
    rows.append(("largest model effects (epsilon^2)",
                 ", ".join(f"{t} {_fmt(e, 2)}" for t, e in zip(top.target, top.epsilon2)), PAPER["largest_metric"]))
    r = pd.read_parquet(d / "model_vs_domain.parquet")
    rd = r[r.kind == "dimension"].set_index("target")
    wins = [t for t in DIMENSIONS if t in rd.index and bool(rd.loc[t, "model_dominates"])]
    ratios = rd["ratio"].replace(np.inf, np.nan)
    rows.append(("dimensions with model epsilon^2 > domain epsilon^2",
                 f"{len(wins)} / {len(rd)}; " + ", ".join(f"{t} {_fmt(rd.loc[t, 'epsilon2_model'], 2)}/"
                                                          f"{_fmt(rd.loc[t, 'epsilon2_domain'], 2)}" for t in rd.index),
                 PAPER["dims_model_gt_domain"]))
    rm = r[r.kind == "metric"]
    top_domain = k[(k.kind == "metric") & (k.grouping == "domain")].sort_values("epsilon2", ascending=False).head(1)
    rows.append(("model-over-domain ratio",
                 f"dimensions up to {_fmt(ratios.max(), 1)}x; top metric by model {top.target.iloc[0]} "
                 f"{_fmt(top.epsilon2.iloc[0], 2)} vs top by domain "
                 + (f"{top_domain.target.iloc[0]} {_fmt(top_domain.epsilon2.iloc[0], 2)}" if len(top_domain) else "n/a")
                 + f"; {int(rm.model_dominates.sum())} / {len(rm)} metrics model > domain", PAPER["max_ratio_dims"]))
    cs = pd.read_parquet(d / "cycles_summary.parquet")
    allc = cs[cs.model == "(all)"].set_index("subgraph")
    if len(allc):
        rows.append(("traces with a directed cycle",
                     ", ".join(f"{s} {100 * allc.loc[s, 'prevalence']:.1f}%" for s in allc.index),
                     PAPER["cycle_prevalence"]))
        f = allc.loc["full"]
        rows.append(("cycles per trace (full graph)",
                     f"median {f['median']:g}, mean {f['mean']:.1f}, Q1-Q3 {f['q1']:g}-{f['q3']:g}, max {f['max']:g} "
                     f"({int(f['n_capped'])} capped); median length {f['median_length']:g}", PAPER["cycle_median"]))
    le = pd.read_parquet(d / "length_excluded.parquet")
    lm = le[le.grouping == "model"].set_index("dimension")
    changed = [t for t in lm.index if abs(lm.loc[t, "delta"]) > 1e-12]
    rows.append(("length-excluded profile (model epsilon^2)",
                 "changes: " + (", ".join(f"{t} {_fmt(lm.loc[t, 'epsilon2_full'])} -> "
                                          f"{_fmt(lm.loc[t, 'epsilon2_excluded'])}" for t in changed) or "none"),
                 PAPER["length_excluded"]))
    rob = d / "aggregation_robustness.parquet"
    if rob.exists():
        t = pd.read_parquet(rob)
        rows.append(("equal vs PCA-weighted model ranking (rho)",
                     ", ".join(f"{a} {_fmt(b, 2)}" for a, b in zip(t.dimension, t.rho)), PAPER["robustness"]))
    sens = d / "encoder_sensitivity.parquet"
    if sens.exists():
        t = pd.read_parquet(sens)
        t = t[t.kind == "dimension"]
        rows.append(("model ranking under a second encoder (rho)",
                     ", ".join(f"{a} {_fmt(b, 2)}" for a, b in zip(t.target, t.rho)), PAPER["sensitivity"]))
    return rows


def markdown(rows: list[tuple[str, str, str]]) -> str:
    lines = ["| finding | this run | paper (4,200 traces, 7 models) |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(headline(sys.argv[1] if len(sys.argv) > 1 else "results/stats")))
