"""Time each statistics analysis on a finished run's tables and graphs; prints one table.

    .venv/bin/python bench/stats_bench.py [RESULTS_DIR]      # default: results (e.g. after the corpus study)

The Kruskal-Wallis rows time the tests without and with the permutation nulls of epsilon^2 (B = 1,000
shufflings per grouping, 19 metrics + 5 dimensions, 2 groupings: the study's default); their difference is
the nulls' cost. Also times the cycle census on a pathological graph (a complete digraph on 40 nodes, about 1e46 simple
cycles) under the default cap, the bound that keeps one graph from stalling the cycles job.
"""

from __future__ import annotations

import glob
import sys
import time
from pathlib import Path

import pandas as pd

from thinkprobe.vocabulary import DIMENSIONS, METRIC_NAMES
from thinkprobe.stats import confound, correlation, cycles, discriminability, posthoc, robustness, stability
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

    timed("kruskal (19 metrics + 5 dims x 2 groupings)", lambda: (
        discriminability.kruskal_table(metrics, METRIC_NAMES),
        discriminability.kruskal_table(traces, list(DIMENSIONS), kind="dimension")), rows)
    perm = {"B": 1000, "seed": 42, "units": {"model": "within_prompts", "domain": "prompts"}}
    timed("kruskal + permutation nulls (B = 1,000; model within prompts, domain by prompt)", lambda: (
        discriminability.kruskal_table(metrics, METRIC_NAMES, permutation=perm),
        discriminability.kruskal_table(traces, list(DIMENSIONS), kind="dimension", permutation=perm)), rows)
    timed("dunn (19 metrics + 5 dims)", lambda: (posthoc.dunn_table(metrics, METRIC_NAMES),
                                                posthoc.dunn_table(traces, list(DIMENSIONS))), rows)
    timed("spearman + ward", lambda: correlation.spearman_table(metrics, METRIC_NAMES), rows)
    timed("run-to-run cv", lambda: stability.run_cv(metrics, METRIC_NAMES), rows)
    timed("length confound + excluded profile", lambda: (confound.length_correlations(metrics),
                                                         confound.length_excluded_effects(metrics)), rows)
    timed("pca aggregation", lambda: robustness.aggregation_robustness(metrics), rows)
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
