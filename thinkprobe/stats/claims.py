"""Checks of this run against the paper, in kinds of rows that are never mixed.

- **Replications**: one row per testable sentence of the claim register (``thinkprobe/data/claims.yaml``,
  :mod:`.register`): every quantitative or directional statement of the paper's abstract, results sections
  and appendices, quoted whole, with criteria written from the sentence's own words and fixed before the data
  (the snapshot records the register's commit and sha256). Each criterion is recomputed on the per-trace
  tables with a BCa interval over prompts (:func:`.register.bca_interval`): it *replicates* when the whole
  interval meets it, *does not replicate* when the whole interval misses it, and is *inconclusive* when the
  interval straddles it; the sentence's verdict is its criteria's together. Only these rows are counted in
  the headline (:func:`counts`).
- **Identities** (:data:`IDENTITIES`, and register sentences whose every criterion holds by construction):
  statements that hold by construction of our reading (the paper reports some of them as findings). They are
  checks of the code: each is proved on random graphs or tables by a property test (``test``) and verified on
  this run's tables; a failure is a bug, never a finding, and they are not counted.
- **Untestable**: register sentences the corpus cannot test, each with why (models it does not hold, one run
  per prompt, no human annotations).
- **Not comparable** (:data:`NOT_COMPARABLE`): what this run measures and the paper did not test (chance
  levels of epsilon^2, a second encoder, agreement with LLM step labels); reported, not counted.

:func:`claims_table` computes every row (rule ``stats_claims``, table ``claims.parquet``) from the per-trace
tables (``metrics``, ``cycles``, ``ablation_traces``) and the study's statistics tables;
:mod:`.results_text` renders it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..profile import dimension_map
from ..vocabulary import LENGTH_METRICS
from .register import FAILS, INCONCLUSIVE, MISSING, REPLICATES  # noqa: F401 (re-exported: the verdicts)

KINDS = ("replication", "identity", "untestable", "not_comparable")
CLAIM_COLUMNS = ["kind", "key", "question", "where", "criterion", "paper", "here", "estimate", "ci_low", "ci_high",
                 "verdict", "detail", "table", "quote", "test", "register", "criteria"]
TESTS = "tests/test_claims_identities.py"


@dataclass(frozen=True)
class IdentitySpec:
    key: str
    statement: str             # what holds, and why, by construction
    where: str
    quote: tuple[str, ...]     # where the paper states it (often as a finding)
    test: str                  # the property test that proves it
    table: str


@dataclass(frozen=True)
class NotComparable:
    key: str
    finding: str
    why: str                   # why the paper has no answer to compare with
    quote: tuple[str, ...]
    table: str


IDENTITIES: dict[str, IdentitySpec] = {i.key: i for i in (
    IdentitySpec(
        "length_exclusion_local", "Excluding AT, ATU and TPI can change only the dimensions that hold them: "
        "z-scores are per metric, so every other dimension's scores are unchanged.", "App. G",
        ("Four of five dimensions — Breadth, Depth, Structure, and Metacognitive — are completely unaffected "
         "(\\Delta\\varepsilon^{2}=0.000), because none of their constituent metrics involve token counts.",),
        f"{TESTS}::test_length_exclusion_changes_only_the_dimensions_that_hold_length_metrics", "length_excluded"),
    IdentitySpec(
        "subgraph_cycles_bounded", "seq+synt is a subgraph of the full graph, so every cycle of it is a cycle of "
        "the full graph: its prevalence and counts cannot exceed the full graph's (the paper's 97.5% against "
        "95.6% and mean 67.8 against 49.2 cannot both be right).", "App. F",
        ("the seq+synt subgraph recovers 97.5% cycle prevalence and a mean of 67.8 cycles per trace, matching "
         "the full-graph rate (95.6%, mean 49.2)",),
        f"{TESTS}::test_a_subgraph_has_no_more_cycles_than_the_graph", "cycles_summary"),
    IdentitySpec(
        "elab_back_acyclic", "The elab+back subgraph has no cycle: ELAB edges join consecutive TUs of one segment "
        "(a segment ends at every BRCH), and a backward arc joins two different segments, so no forward ELAB "
        "path can close it.", "App. F",
        ("The elab+back subgraph produces zero cycles in all traces",),
        f"{TESTS}::test_elab_back_subgraph_is_acyclic", "cycles_summary"),
    IdentitySpec(
        "l1_no_typed_edges", "With layer 1 only there are no typed edges, so BF, BR, CBC and RvD are 0 at l1.",
        "section 5.4",
        ("With structural boundaries only, all typed-edge metrics are zero by construction",),
        f"{TESTS}::test_layer_one_has_no_typed_edges", "ablation_traces"),
    IdentitySpec(
        "bf_on_at_l3", "BF is above 0 at l3 for every graph of 3 or more TUs whose consecutive similarities are "
        "not all equal: layer 3 puts a BRCH edge on every transition below the trace's own 25th percentile.",
        "section 5.4",
        ("Adding the semantic trajectory layer (L3) activates the branching family",),
        f"{TESTS}::test_layer_three_always_branches", "ablation_traces"),
    IdentitySpec(
        "no_backward_arcs_before_l4", "Layer 3 emits no backward arc (our reading, chosen to reproduce Table 6), "
        "so RvD, BR and CBC are 0 at l3 and can first be non-zero at l4.", "section 5.4",
        ("The cross-segment layer (L4) uniquely activates Revision Depth (0 \\to 3.87)",),
        f"{TESTS}::test_no_backward_arc_before_layer_four", "ablation_traces"),
)}

NOT_COMPARABLE: dict[str, NotComparable] = {n.key: n for n in (
    NotComparable(
        "model_over_domain_chance_corrected", "dimensions with model epsilon^2 > domain epsilon^2 after "
        "subtracting each one's chance level (its permutation null mean)",
        "the paper compares uncorrected epsilon^2 only, which favours the grouping with more levels",
        ("To determine whether observed profile differences reflect genuine model behaviour or are simply "
         "driven by question content, we repeat the Kruskal–Wallis analysis with _domain_ as the grouping "
         "variable.",), "model_vs_domain"),
    NotComparable(
        "effects_above_chance", "targets whose epsilon^2 stands above its permutation null",
        "the paper reports no null distribution of epsilon^2", (), "kruskal"),
    NotComparable(
        "second_encoder", "model rankings under a second sentence encoder",
        "the paper did not run it (section 7's open item)",
        ("we have not re-run the pipeline under an alternative encoder",), "encoder_sensitivity"),
    NotComparable(
        "segmentation_agreement", "agreement of our TUs with the corpus's LLM step labels",
        "the paper's study compares with two human annotators, not with LLM labels",
        ("two expert annotators (EA1, EA2) manually segmented a stratified sample of 50 reasoning traces",),
        "agreement"),
)}


def plain(text: str) -> str:
    """A quoted sentence with the paper's LaTeX spelled out (``\\varepsilon^{2}`` -> ``epsilon^2``)."""
    for a, b in (("\\varepsilon^{2}", "epsilon^2"), ("\\Delta", "Delta "), ("\\rho", "rho"), ("\\geq", " >= "),
                 ("\\to", "->"), ("\\%", "%")):
        text = text.replace(a, b)
    return re.sub(r" {2,}", " ", text)


def _f(x: Any, nd: int = 3) -> str:
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{float(x):.{nd}f}"


# ------------------------------------------------------------------------------------------- the statistics

def _row(kind: str, key: str, **kw: Any) -> dict[str, Any]:
    row = {c: "" for c in CLAIM_COLUMNS}
    row.update(kind=kind, key=key, estimate=np.nan, ci_low=np.nan, ci_high=np.nan)
    row.update(kw)
    return row



def identity_rows(t: dict[str, pd.DataFrame], ablation_traces: pd.DataFrame | None,
                  dimensions=None) -> list[dict[str, Any]]:
    """The :data:`IDENTITIES` verified on this run's tables (``holds`` / ``VIOLATED``)."""
    rows = []

    def add(key: str, holds: bool, here: str) -> None:
        i = IDENTITIES[key]
        rows.append(_row("identity", key, question=i.statement, where=i.where, here=here,
                         verdict="holds" if holds else "VIOLATED", table=i.table, quote=" | ".join(i.quote),
                         test=i.test, paper="stated as a finding"))

    if "length_excluded" in t:
        le = t["length_excluded"]
        holding = {d for d, ms in dimension_map(dimensions).items() if set(ms) & set(LENGTH_METRICS)}
        changed = sorted({d for d, delta in zip(le.dimension, le.delta) if np.isfinite(delta) and abs(delta) > 1e-12})
        add("length_exclusion_local", set(changed) <= holding,
            f"changed: {', '.join(changed) or 'none'} (holding a length metric: {', '.join(sorted(holding)) or 'none'})")
    if "cycles_summary" in t:
        cs = t["cycles_summary"]
        allc = cs[cs.model == "(all)"].set_index("subgraph")
        if {"full", "seq+synt"} <= set(allc.index):
            f, s = allc.loc["full"], allc.loc["seq+synt"]
            add("subgraph_cycles_bounded", bool(s.prevalence <= f.prevalence and s["mean"] <= f["mean"]),
                f"prevalence {100 * s.prevalence:.1f}% <= {100 * f.prevalence:.1f}%, mean {s['mean']:.1f} <= "
                f"{f['mean']:.1f}")
        if "elab+back" in allc.index:
            p = float(allc.loc["elab+back", "prevalence"])
            add("elab_back_acyclic", p == 0, f"{100 * p:.1f}% of {int(allc.loc['elab+back', 'n_traces'])} traces")
    if ablation_traces is not None and len(ablation_traces):
        a = ablation_traces
        l1, l3 = a[a.layers == "l1"], a[a.layers == "l3"]
        typed = ["BF", "BR", "CBC", "RvD"]
        if len(l1):
            nz = int((l1[typed].abs().to_numpy() > 0).any(axis=1).sum())
            add("l1_no_typed_edges", nz == 0, f"{len(l1) - nz} / {len(l1)} traces with BF = BR = CBC = RvD = 0")
        if len(l3):
            big = l3[l3.tus >= 3]
            on = int((big.BF > 0).sum())
            add("bf_on_at_l3", on == len(big), f"BF > 0 in {on} / {len(big)} traces of 3 or more TUs")
            back = int((l3[["RvD", "BR", "CBC"]].abs().to_numpy() > 0).any(axis=1).sum())
            add("no_backward_arcs_before_l4", back == 0, f"{len(l3) - back} / {len(l3)} traces with RvD = BR = CBC "
                "= 0 at l3")
    order = list(IDENTITIES)
    return sorted(rows, key=lambda r: order.index(r["key"]))


def joint_nulls(metrics: pd.DataFrame | None, kruskal: pd.DataFrame | None, permutation: dict | None,
                dimensions=None) -> dict[str, dict[str, float]]:
    """Per grouping of the kruskal table: the count of its targets above their null's 95th percentile against
    the joint null (:func:`.permutation.joint_exceedances`: one shuffling for all targets), recomputed from
    the per-trace metrics with the study's permutation settings (``permutation``: B, seed, units)."""
    if metrics is None or kruskal is None or not permutation or int(permutation.get("B", 0)) <= 0:
        return {}
    from ..profile import trace_profiles
    from .permutation import joint_exceedances

    prof, _ = trace_profiles(metrics, dimensions=dimensions)
    table = metrics.reset_index(drop=True).copy()
    for d in dimension_map(dimensions):
        if d in prof:
            table[d] = prof[d].to_numpy()
    out = {}
    for g, grp in kruskal.groupby("grouping", sort=False):
        if g not in table:
            continue
        targets = [x for x in grp.target if x in table]
        out[g] = joint_exceedances(table, targets, g, int(permutation["B"]), int(permutation["seed"]),
                                   (permutation.get("units") or {}).get(g, "traces"))
    return out


def not_comparable_rows(t: dict[str, pd.DataFrame], alpha: float,
                        joint: dict[str, dict[str, float]] | None = None) -> list[dict[str, Any]]:
    """The :data:`NOT_COMPARABLE` findings whose tables are present (``joint``: :func:`joint_nulls`)."""

    rows = []

    def add(key: str, here: str, detail: str = "", **extra: Any) -> None:
        n = NOT_COMPARABLE[key]
        rows.append(_row("not_comparable", key, question=n.finding, here=here, paper=n.why, detail=detail,
                         table=n.table, quote=" | ".join(n.quote), verdict="not comparable", **extra))

    if "model_vs_domain" in t and "corrected_model" in t["model_vs_domain"]:
        rd = t["model_vs_domain"]
        rd = rd[rd.kind == "dimension"]
        if len(rd) and rd.corrected_model.notna().any():
            wins = int((rd.corrected_model > rd.corrected_domain).sum())
            add("model_over_domain_chance_corrected", f"{wins} / {len(rd)}",
                "; ".join(f"{x.target} {_f(x.corrected_model)} vs {_f(x.corrected_domain)}" for x in rd.itertuples()))
    if "kruskal" in t and "p_perm_holm" in t["kruskal"]:
        parts = []
        for g, grp in t["kruskal"].groupby("grouping", sort=False):
            above = int((grp.epsilon2 > grp.epsilon2_null_p95).sum())
            holm_sig = int((grp.p_perm_holm < alpha).sum())
            j = (joint or {}).get(g)
            null = (f"joint null (one shuffling for all targets): mean {j['null_mean']:.1f}, 95th percentile "
                    f"{j['null_p95']:g}, p {j['p']:.3g}" if j else "joint null not computed")
            parts.append(f"{g}: {above} / {len(grp)} above the null's 95th percentile ({null}), {holm_sig} / "
                         f"{len(grp)} with Holm-adjusted p_perm < {alpha:g} within its families")
        add("effects_above_chance", "; ".join(parts), criteria=json.dumps(joint or {}))
    if "encoder_sensitivity" in t:
        s = t["encoder_sensitivity"]
        s = s[s.kind == "dimension"]
        if len(s):
            method = s["p_method"].iloc[0] if "p_method" in s else "asymptotic"
            add("second_encoder", ", ".join(f"{x.target} {_f(x.rho, 2)} (p {_f(x.p, 3)})" for x in s.itertuples()),
                f"Spearman rho of the model rankings, {int(s.n_models.max())} models, {method} p")
    if "agreement" in t:
        a = t["agreement"]
        ok = a[a.status == "ok"]
        if len(ok):
            m = ok.groupby("segmentation", sort=True)["f1"].mean()
            add("segmentation_agreement", ", ".join(f"{s} F1 {_f(v)}" for s, v in m.items()),
                f"boundary F1 within the tolerance, mean over {int(ok.groupby('segmentation').size().max())} traces")
    return rows


def claims_table(tables: dict[str, pd.DataFrame], metrics: pd.DataFrame | None = None,
                 cycles: pd.DataFrame | None = None, ablation_traces: pd.DataFrame | None = None, *,
                 b: int, seed: int, level: float, alpha: float, dimensions=None,
                 permutation: dict | None = None, root=None) -> pd.DataFrame:
    """Every row (:data:`CLAIM_COLUMNS`): the register's sentences (replications, identities, untestable),
    then the identities verified on the tables, then not comparable.

    ``b``, ``seed``, ``level``: the bootstrap (config ``stats.bootstrap``, ``bootstrap_seed``,
    ``interval_level``); ``alpha``: the family-wise level of the Holm counts (``stats.alpha``); ``root``: the
    folder holding the package whose register is read (None: this package's); ``permutation`` (config
    ``stats.permutations``, ``permutation_seed``, ``permutation_units``): the joint null of the counts above
    chance (:func:`joint_nulls`; None: not computed).
    """
    from .register import Data, register_rows

    ids = identity_rows(tables, ablation_traces, dimensions)
    held = {r["key"]: r["verdict"] for r in ids}
    data = Data(tables, metrics, cycles, ablation_traces, dimensions)
    tests = {k: i.test for k, i in IDENTITIES.items()}
    reg = [_row(r.pop("kind"), r.pop("key"), **{**r, "table": "metrics, cycles, ablation_traces, kruskal"})
           for r in register_rows(data, held, tests, b, seed, level, root)]
    joint = joint_nulls(metrics, tables.get("kruskal"), permutation, dimensions)
    rows = reg + ids + not_comparable_rows(tables, alpha, joint)
    out = pd.DataFrame(rows, columns=CLAIM_COLUMNS)
    for c in ("estimate", "ci_low", "ci_high"):
        out[c] = out[c].astype(float)
    return out


def counts(claims: pd.DataFrame) -> dict[str, int]:
    """How many replications replicate, do not, are inconclusive (and the identities and not comparable)."""
    rep = claims[claims.kind == "replication"]
    return {"replications": len(rep), REPLICATES: int((rep.verdict == REPLICATES).sum()),
            FAILS: int((rep.verdict == FAILS).sum()), INCONCLUSIVE: int((rep.verdict == INCONCLUSIVE).sum()),
            MISSING: int((rep.verdict == MISSING).sum()),
            "identities": int((claims.kind == "identity").sum()),
            "untestable": int((claims.kind == "untestable").sum()),
            "identities_violated": int(((claims.kind == "identity") & (claims.verdict != "holds")).sum()),
            "not_comparable": int((claims.kind == "not_comparable").sum())}
