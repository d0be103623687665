"""Time each statistics analysis on a finished run's tables and graphs; prints one table.

    .venv/bin/python bench/stats_bench.py [RESULTS_DIR]      # default: results (e.g. after the corpus study)

The Kruskal-Wallis rows time the tests (with Friedman's blocked test) without and with the permutation nulls
of epsilon^2 (B shufflings per grouping, 19 metrics + 5 dimensions, 2 groupings), at B = 1,000 and at the
configured default (stats.permutations, chosen by stats.permutation_mcse_max); their difference is the nulls'
cost. The checks against the paper (claims) are timed with the default bootstrap when the results hold the
per-trace ablation table. Also times the cycle census on a pathological graph (a complete digraph on 40 nodes,
about 1e46 simple cycles) under the default cap, the bound that keeps one graph from stalling the cycles job.
"""

from __future__ import annotations

import glob
import sys
import time
from pathlib import Path

import pandas as pd

from thinkprobe.vocabulary import DIMENSIONS, METRIC_NAMES
from thinkprobe.stats import confound, correlation, cycles, discriminability, posthoc, robustness, stability
from thinkprobe.stats.claims import claims_table
from thinkprobe.study.snapshot import study_config
from thinkprobe.stages.stats import rule_params
from thinkprobe.stats.results_text import SNAPSHOT_TABLES
from thinkprobe.stages.unitfiles import read_unit


def timed(label, fn, rows):
    t0 = time.perf_counter()
    out = fn()
    rows.append((label, time.perf_counter() - t0))
    return out


def main(results: str = "results") -> None:
    res = Path(results)
    metrics = pd.read_parquet(res / "tables" / "metrics.parquet")
    profiles = pd.read_parquet(res / "tables" / "profiles.parquet")
    traces = profiles[profiles.level == "trace"]
    rows: list[tuple[str, float]] = []
    import scikit_posthocs  # noqa: F401  imported before timing, so no row includes an import
    import scipy.stats  # noqa: F401

    timed("kruskal + friedman (19 metrics + 5 dims x 2 groupings)", lambda: (
        discriminability.kruskal_table(metrics, METRIC_NAMES),
        discriminability.kruskal_table(traces, list(DIMENSIONS), kind="dimension")), rows)
    params = rule_params(study_config())
    for b in (1000, params["permutation"]["B"]):
        perm = {**params["permutation"], "B": b}
        timed(f"kruskal + permutation nulls (B = {b:,}; model within prompts, domain by prompt)", lambda: (
            discriminability.kruskal_table(metrics, METRIC_NAMES, permutation=perm),
            discriminability.kruskal_table(traces, list(DIMENSIONS), kind="dimension", permutation=perm)), rows)
    timed("dunn (19 metrics + 5 dims)", lambda: (posthoc.dunn_table(metrics, METRIC_NAMES),
                                                posthoc.dunn_table(traces, list(DIMENSIONS))), rows)
    timed("spearman + ward", lambda: correlation.spearman_table(metrics, METRIC_NAMES), rows)
    timed("run-to-run cv", lambda: stability.run_cv(metrics, METRIC_NAMES), rows)
    timed("length confound + excluded profile", lambda: (confound.length_correlations(metrics),
                                                         confound.length_excluded_effects(metrics)), rows)
    timed("pca aggregation", lambda: robustness.aggregation_robustness(metrics), rows)
    stats = res / "stats"
    if (stats / "ablation_traces.parquet").exists() and (stats / "cycles.parquet").exists():
        tables = {n: pd.read_parquet(stats / f"{n}.parquet") for n in SNAPSHOT_TABLES
                  if n != "claims" and (stats / f"{n}.parquet").exists()}
        boot = params["bootstrap"]
        timed(f"claims: checks against the paper (bootstrap B = {boot['B']:,} over prompts)", lambda: claims_table(
            tables, metrics, pd.read_parquet(stats / "cycles.parquet"), pd.read_parquet(stats / "ablation_traces.parquet"),
            b=boot["B"], seed=boot["seed"], level=boot["level"], alpha=params["alpha"], dimensions=params["dimensions"]),
            rows)
    paths = sorted(glob.glob(str(res / "graphs" / "**" / "*.json"), recursive=True))
    docs = [read_unit(p) for p in paths]
    graphs = [d["graph"] for d in docs if d.get("status") == "ok" and d.get("graph")]
    counted = timed(f"cycles, 3 subgraphs, {len(graphs)} graphs (cap 10,000)",
                    lambda: [cycles.graph_cycle_rows(g, {}, 10_000) for g in graphs], rows)
    capped = sum(r["capped"] for rs in counted for r in rs)
    k40 = [(u, v, "SEQ") for u in range(40) for v in range(40) if u != v]
    timed("cycles, complete digraph K40 (cap 10,000)", lambda: cycles.simple_cycles(40, k40, cap=10_000), rows)
    print(f"{len(metrics)} traces, {len(graphs)} graphs ({capped} subgraph census(es) capped)\n")
    print("| analysis | seconds |\n|---|---|")
    for label, sec in rows:
        print(f"| {label} | {sec:.2f} |")


if __name__ == "__main__":
    main(*sys.argv[1:])
