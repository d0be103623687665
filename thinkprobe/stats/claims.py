"""What replicates and what does not: explicit checks of this run against the paper's numbers.

Each :class:`Check` is one claim of the paper, written as a yes/no question with a direction (for example
"does excluding the length metrics lower Efficiency's model epsilon^2?"), the paper's answer with its
number (:mod:`.paper`), this run's answer with its number, and the verdict: the claim replicates when both
answers agree. Every check can fail on some data. A statement that holds by construction (for example
"only the dimensions holding AT, ATU or TPI can change when those are excluded", since z-scores are per
metric) is an :class:`Identity`: it is verified (a failure is a bug, not a finding) and never counted as a
replication.

The checks read the tables of ``results/stats`` (a ``dict`` name -> DataFrame, :func:`.summary.load_tables`);
a check whose table is absent is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from ..vocabulary import LENGTH_METRICS
from ..profile import dimension_map
from . import paper


@dataclass(frozen=True)
class Check:
    claim: str        # the yes/no question
    paper: str        # the paper's answer and number
    paper_yes: bool
    here: str         # this run's answer and number
    here_yes: bool
    table: str        # the results/stats table it is computed from

    @property
    def replicates(self) -> bool:
        return self.paper_yes == self.here_yes


@dataclass(frozen=True)
class Identity:
    statement: str    # what holds by construction, and why
    holds: bool       # verified on this run's tables
    detail: str       # the numbers it was verified on
    table: str


def _yes(b: bool) -> str:
    return "yes" if b else "no"


def _f(x: float, nd: int = 3) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{nd}f}"


def _kruskal_checks(t: dict[str, pd.DataFrame]) -> list[Check]:
    if "kruskal" not in t:
        return []
    k = t["kruskal"]
    km = k[(k.kind == "metric") & (k.grouping == "model")]
    if km.empty:
        return []
    n_bonf = int((km.p_bonferroni < 0.001).sum())
    top = km.sort_values("epsilon2", ascending=False).iloc[0]
    out = [Check("Does every metric discriminate the models (p < 0.001 after Bonferroni)?",
                 f"yes: {paper.METRICS_SIGNIFICANT} / {paper.METRICS_TOTAL}", True,
                 f"{_yes(n_bonf == len(km))}: {n_bonf} / {len(km)}", n_bonf == len(km), "kruskal"),
           Check(f"Is AT the metric with the largest model effect, and a large one (epsilon^2 >= {paper.LARGE_EFFECT})?",
                 f"yes: AT {paper.TOP_MODEL_EFFECTS['AT']}", True,
                 f"{_yes(top.target == 'AT' and top.epsilon2 >= paper.LARGE_EFFECT)}: largest is {top.target} "
                 f"{_f(top.epsilon2)}", bool(top.target == "AT" and top.epsilon2 >= paper.LARGE_EFFECT), "kruskal")]
    return out


def _dominance_checks(t: dict[str, pd.DataFrame]) -> list[Check]:
    if "model_vs_domain" not in t:
        return []
    r = t["model_vs_domain"]
    rd = r[r.kind == "dimension"]
    if rd.empty or rd.epsilon2_domain.isna().all():
        return []
    need = paper.DIMS_MODEL_OVER_DOMAIN
    unc = int(rd.model_dominates_uncorrected.sum()) if "model_dominates_uncorrected" in rd else int(
        (rd.epsilon2_model > rd.epsilon2_domain).sum())
    out = [Check(f"Does model epsilon^2 exceed domain epsilon^2 on at least {need} of 5 dimensions (uncorrected, "
                 "as the paper)?", f"yes: {paper.DIMS_MODEL_OVER_DOMAIN} / 5", True,
                 f"{_yes(unc >= need)}: {unc} / {len(rd)}", unc >= need, "model_vs_domain")]
    if "corrected_model" in rd:
        cor = int((rd.corrected_model > rd.corrected_domain).sum())
        out.append(Check(f"... and after subtracting each epsilon^2's chance level (permutation null mean)?",
                         "not tested (uncorrected 4 / 5)", True, f"{_yes(cor >= need)}: {cor} / {len(rd)}",
                         cor >= need, "model_vs_domain"))
    return out


def _length_checks(t: dict[str, pd.DataFrame]) -> list[Check]:
    if "length_excluded" not in t:
        return []
    le = t["length_excluded"]
    lm = le[le.grouping == "model"].set_index("dimension")
    out = []
    if "Efficiency" in lm.index:
        a, b = lm.loc["Efficiency", "epsilon2_full"], lm.loc["Efficiency", "epsilon2_excluded"]
        out.append(Check("Does excluding the length metrics lower Efficiency's model epsilon^2?",
                         f"yes: {paper.EFFICIENCY_FULL} -> {paper.EFFICIENCY_EXCLUDED}", True,
                         f"{_yes(b < a)}: {_f(a)} -> {_f(b)}", bool(b < a), "length_excluded"))
    ld = le[le.grouping == "domain"].set_index("dimension")
    common = [d for d in lm.index if d in ld.index]
    if common:
        need = paper.DIMS_MODEL_OVER_DOMAIN
        col = "epsilon2_excluded_corrected" if "epsilon2_excluded_corrected" in le else "epsilon2_excluded"
        how = "chance-corrected" if col != "epsilon2_excluded" else "uncorrected"
        wins = sum(bool(lm.loc[d, col] > ld.loc[d, col]) for d in common)
        out.append(Check(f"Without the length metrics, does model epsilon^2 still exceed domain epsilon^2 on at "
                         f"least {need} of 5 dimensions (App. G's main point; {how})?",
                         f"yes: {need} / 5 (uncorrected)", True, f"{_yes(wins >= need)}: {wins} / {len(common)}",
                         wins >= need, "length_excluded"))
    return out


def _cycle_checks(t: dict[str, pd.DataFrame]) -> list[Check]:
    if "cycles_summary" not in t:
        return []
    cs = t["cycles_summary"]
    allc = cs[cs.model == "(all)"].set_index("subgraph")
    out = []
    if "full" in allc.index:
        prev = float(allc.loc["full", "prevalence"])
        out.append(Check("Do most traces (> 50%) hold a directed cycle?",
                         f"yes: {100 * paper.CYCLE_PREVALENCE['full']:.1f}%", True,
                         f"{_yes(prev > 0.5)}: {100 * prev:.1f}%", prev > 0.5, "cycles_summary"))
        ml = float(allc.loc["full", "median_length"])
        out.append(Check("Are cycles long, median length >= 7 nodes (not 2-node back-edges)?",
                         f"yes: median {paper.CYCLE_MEDIAN_LENGTH}", True,
                         f"{_yes(ml >= 7)}: median {ml:g}" if np.isfinite(ml) else "no: no cycle",
                         bool(np.isfinite(ml) and ml >= 7), "cycles_summary"))
    if "elab+back" in allc.index:
        prev = float(allc.loc["elab+back", "prevalence"])
        out.append(Check("Is the elab+back subgraph free of cycles?", "yes: 0%", True,
                         f"{_yes(prev == 0)}: {100 * prev:.1f}%", prev == 0, "cycles_summary"))
    return out


def _ablation_checks(t: dict[str, pd.DataFrame]) -> list[Check]:
    if "ablation" not in t:
        return []
    a = t["ablation"].set_index("stage")
    if not {"l1", "l3", "l4", "full"} <= set(a.index):
        return []

    def row(m: str) -> str:
        return " / ".join(_f(a.loc[s, m], 2) for s in ("l1", "l3", "l4", "full"))

    out = []
    first = lambda m: next((s for s in ("l1", "l3", "l4", "full") if a.loc[s, m] > 0), "never")  # noqa: E731
    out.append(Check("Does BF switch on at layer 3 (l3)?", "yes: 0.22 at +L3", True,
                     f"{_yes(first('BF') == 'l3')}: {row('BF')}", first("BF") == "l3", "ablation"))
    out.append(Check("Does RvD switch on at layer 4 (l4)?", "yes: 0 -> 3.87 at +L4", True,
                     f"{_yes(first('RvD') == 'l4')}: {row('RvD')}", first("RvD") == "l4", "ablation"))
    out.append(Check("Does CBC rise from l4 to full (its largest gain in the full pipeline)?",
                     "yes: 0.05 -> 0.22", True, f"{_yes(a.loc['full', 'CBC'] > a.loc['l4', 'CBC'])}: {row('CBC')}",
                     bool(a.loc["full", "CBC"] > a.loc["l4", "CBC"]), "ablation"))
    gd_max = a["GD"].astype(float).idxmax()
    out.append(Check("Does GD reach its maximum in the full pipeline?", "yes: 0.30 in full", True,
                     f"{_yes(gd_max == 'full')}: {row('GD')} (max at {gd_max})", gd_max == "full", "ablation"))
    return out


def _robustness_checks(t: dict[str, pd.DataFrame]) -> list[Check]:
    if "aggregation_robustness" not in t:
        return []
    r = t["aggregation_robustness"].set_index("dimension")["rho"].astype(float)
    if r.empty:
        return []
    high = int((r >= paper.ROBUSTNESS_MIN_RHO).sum())
    out = [Check(f"Do equal and PCA weights rank the models alike (rho >= {paper.ROBUSTNESS_MIN_RHO}) on at least "
                 "four dimensions?", "yes: four, Structure 0.357", True,
                 f"{_yes(high >= 4)}: {high} / {len(r)}", high >= 4, "aggregation_robustness")]
    if r.notna().any():
        low = r.idxmin()
        out.append(Check("Is Structure the dimension least robust to PCA weighting?", "yes: 0.357", True,
                         f"{_yes(low == 'Structure')}: lowest is {low} {_f(r[low], 2)}", low == "Structure",
                         "aggregation_robustness"))
    return out


CHECKS: tuple[Callable[[dict[str, pd.DataFrame]], list[Check]], ...] = (
    _kruskal_checks, _dominance_checks, _length_checks, _cycle_checks, _ablation_checks, _robustness_checks)


def checks(tables: dict[str, pd.DataFrame]) -> list[Check]:
    """Every check whose table is present, in the order of the paper's sections."""
    return [c for f in CHECKS for c in f(tables)]


def identities(tables: dict[str, pd.DataFrame], dimensions=None) -> list[Identity]:
    """Statements true by construction, verified on this run (a failure is a bug in thinkprobe)."""
    out = []
    if "length_excluded" in tables:
        le = tables["length_excluded"]
        holding = {d for d, ms in dimension_map(dimensions).items() if set(ms) & set(LENGTH_METRICS)}
        changed = sorted({d for d, delta in zip(le.dimension, le.delta) if np.isfinite(delta) and abs(delta) > 1e-12})
        out.append(Identity("Excluding AT, ATU and TPI can change only the dimensions that hold them (z-scores are "
                            f"per metric): here {', '.join(sorted(holding)) or 'none'}. The paper's 'only Efficiency "
                            "changes' is this identity, not a finding.",
                            set(changed) <= holding, f"changed: {', '.join(changed) or 'none'}", "length_excluded"))
    if "cycles_summary" in tables:
        cs = tables["cycles_summary"]
        allc = cs[cs.model == "(all)"].set_index("subgraph")
        if {"full", "seq+synt"} <= set(allc.index):
            f, s = allc.loc["full"], allc.loc["seq+synt"]
            ok = bool(s.prevalence <= f.prevalence and s["mean"] <= f["mean"])  # a cap bounds both alike
            out.append(Identity("seq+synt is a subgraph of the full graph, so every cycle of it is a cycle of the full "
                                "graph: its prevalence and counts cannot exceed the full graph's. The paper's App. F "
                                "reports more (97.5% vs 95.6% of traces, mean 67.8 vs 49.2), which no correct count "
                                "gives.", ok, f"prevalence {100 * s.prevalence:.1f}% <= {100 * f.prevalence:.1f}%, "
                                f"mean {s['mean']:.1f} <= {f['mean']:.1f}", "cycles_summary"))
    if "ablation" in tables:
        a = tables["ablation"].set_index("stage")
        if "l1" in a.index:
            typed = [m for m in ("BF", "BR", "CBC", "RvD") if m in a.columns]
            vals = {m: float(a.loc["l1", m]) for m in typed}
            out.append(Identity("With layer 1 only there are no typed edges, so BF, BR, CBC and RvD are 0 at l1.",
                                all(v == 0 for v in vals.values()),
                                ", ".join(f"{m} {v:g}" for m, v in vals.items()), "ablation"))
    return out
