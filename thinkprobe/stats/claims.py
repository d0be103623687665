"""Checks of this run against the paper, in three kinds of rows that are never mixed.

- **Replications** (:data:`REPLICATIONS`): a question the paper answers from its data, with a criterion fixed
  from the paper's own words before looking at ours; each cites the sentence it comes from (``quote``,
  verbatim from the paper's text, found there by a test) and says how the threshold follows from it (the
  paper calls its 95.6% of traces with a cycle "near-universal": near-universal is read as >= 90%). This run
  answers with an estimate and a bootstrap interval over prompts (:mod:`.bootstrap`): a check *replicates*
  when the whole interval meets the criterion, *does not replicate* when the whole interval misses it, and is
  *inconclusive* when the interval straddles it. Only replications are counted in the headline.
- **Identities** (:data:`IDENTITIES`): statements that hold by construction of our reading (the paper reports
  some of them as findings). They are checks of the code: each is proved on random graphs or tables by a
  property test (``test``) and verified on this run's tables; a failure is a bug, never a finding, and they
  are not counted.
- **Not comparable** (:data:`NOT_COMPARABLE`): what this run measures and the paper did not test (chance
  levels of epsilon^2, a second encoder, agreement with LLM step labels); reported, not counted.

One finding is one row: "excluding the length metrics can only change Efficiency" is an identity, so App. G's
"model > domain without the length metrics" adds nothing to section 5.3's "model > domain" beyond Efficiency's
own value, and is shown inside that row rather than counted again; its chance-corrected form is not
comparable (the paper compares uncorrected epsilon^2 only).

:func:`claims_table` computes every row (rule ``stats_claims``, table ``claims.parquet``) from the per-trace
tables (``metrics``, ``cycles``, ``ablation_traces``) and the study's statistics tables;
:mod:`.summary` renders it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..profile import dimension_map
from ..vocabulary import LENGTH_METRICS
from . import paper

KINDS = ("replication", "identity", "not_comparable")
REPLICATES, FAILS, INCONCLUSIVE, MISSING = "replicates", "does not replicate", "inconclusive", "not computed"
CLAIM_COLUMNS = ["kind", "key", "question", "where", "criterion", "paper", "here", "estimate", "ci_low", "ci_high",
                 "verdict", "detail", "table", "quote", "test"]
TESTS = "tests/test_claims_identities.py"


@dataclass(frozen=True)
class Replication:
    key: str
    question: str
    where: str                 # the paper's section
    quote: tuple[str, ...]     # the sentences the criterion comes from, verbatim (the paper's LaTeX kept)
    criterion: str             # the threshold, and how it follows from the sentences
    paper: str                 # the paper's answer, with its number
    table: str                 # the per-trace or statistics table(s) this run answers from


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


REPLICATIONS: dict[str, Replication] = {r.key: r for r in (
    Replication(
        "models_discriminated", "Does every metric discriminate the models (p < 0.001 after Bonferroni)?",
        "section 5.2",
        ("Every metric reaches statistical significance (p<0.001, uncorrected; all 19 survive Bonferroni "
         "correction for 19 comparisons, p<0.000053 threshold)",),
        "every metric's model p < 0.001 after Bonferroni over the 19 metrics (the paper's threshold); the "
        "blocked test (Friedman within prompts) decides when every model answers the prompts, "
        "Kruskal-Wallis otherwise",
        f"yes: {paper.METRICS_SIGNIFICANT} / {paper.METRICS_TOTAL}", "kruskal"),
    Replication(
        "at_effect_large", "Is AT's model effect large (epsilon^2 >= 0.14)?", "section 5.2, Figure 3",
        ("Dashed lines mark small (\\varepsilon^{2}=0.06) and large (\\varepsilon^{2}=0.14) effect thresholds.",
         "from \\varepsilon^{2}=0.75 (Avg. Tokens)"),
        f"AT's model epsilon^2 >= {paper.LARGE_EFFECT}, Figure 3's line of a large effect (the paper's AT: "
        f"{paper.TOP_MODEL_EFFECTS['AT']}, its largest)",
        f"yes: {paper.TOP_MODEL_EFFECTS['AT']}", "metrics"),
    Replication(
        "model_over_domain", "Does model epsilon^2 exceed domain epsilon^2 on at least 4 of the 5 dimensions?",
        "abstract, section 5.3, App. G",
        ("between-model variance exceeds between-domain variance by up to fourfold across four of five "
         "cognitive dimensions",),
        f"at least {paper.DIMS_MODEL_OVER_DOMAIN} of 5 dimensions whose interval of epsilon^2(model) - "
        "epsilon^2(domain) lies above 0 (uncorrected epsilon^2, as the paper)",
        f"yes: {paper.DIMS_MODEL_OVER_DOMAIN} / 5 (Structure: domain 0.156 > model 0.121)", "metrics"),
    Replication(
        "efficiency_drops", "Does excluding the length metrics lower Efficiency's model epsilon^2?", "App. G",
        ("Efficiency decreases from \\varepsilon^{2}=0.385 to 0.332 (-14\\%)",),
        "epsilon^2(excluded) - epsilon^2(full) < 0 for Efficiency by model",
        f"yes: {paper.EFFICIENCY_FULL} -> {paper.EFFICIENCY_EXCLUDED}", "metrics"),
    Replication(
        "cycles_near_universal", "Are directed cycles near-universal (>= 90% of traces)?", "App. F",
        ("The near-universal presence of cycles (95.6%)",),
        "share of traces with a directed cycle >= 90%: the paper calls its 95.6% near-universal",
        f"yes: {100 * paper.CYCLE_PREVALENCE['full']:.1f}%", "cycles"),
    Replication(
        "cycles_long", "Are cycles medium-length rather than short (median length >= 7 nodes)?", "App. F",
        ("Short cycles (length 2–6) are most frequent but medium-length cycles (7–20 nodes) are nearly as common",
         "have a median length of 14 nodes"),
        "median cycle length >= 7: App. F's own bands, short = 2-6 nodes and medium = 7-20 nodes",
        f"yes: median {paper.CYCLE_MEDIAN_LENGTH}", "cycles"),
    Replication(
        "cbc_gain_in_full", "Is CBC's largest gain in the full pipeline (l4 -> full larger than l3 -> l4)?",
        "section 5.4, Table 6",
        ("The full pipeline produces the largest gain in Cross-Branch Connectivity (0.05 \\to 0.22)",),
        "(CBC full - CBC l4) - (CBC l4 - CBC l3) > 0, paired over the ablation's traces",
        "yes: 0 -> 0.05 -> 0.22", "ablation_traces"),
    Replication(
        "gd_max_in_full", "Does GD reach its maximum in the full pipeline?", "section 5.4, Table 6",
        ("Graph Density reaches its maximum (0.30).",),
        "GD full - max(GD l3, GD l4) > 0, paired over the ablation's traces",
        "yes: 0.17 at l3, 0.30 in full", "ablation_traces"),
    Replication(
        "rankings_robust", "Do equal and PCA weights rank the models alike (rho >= 0.893) on Breadth, Depth, "
        "Metacognition and Efficiency?", "section 7",
        ("For Breadth, Depth, Metacognitive, and Efficiency, model rankings are invariant to PCA-weighted "
         "aggregation (rank \\rho\\geq 0.893).",),
        f"rho >= {paper.ROBUSTNESS_MIN_RHO} on each of the four (the paper's own bound)",
        f"yes: rho >= {paper.ROBUSTNESS_MIN_RHO}", "metrics"),
    Replication(
        "structure_shifts", "Does Structure's model ranking shift under PCA weighting (rho < 0.893)?", "section 7",
        ("its rankings shift under PCA weighting (rank \\rho=0.357)",),
        f"Structure's rho < {paper.ROBUSTNESS_MIN_RHO}, the bound the paper's other four dimensions meet",
        f"yes: {paper.ROBUSTNESS_STRUCTURE}", "metrics"),
)}

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


def interval_verdict(lo: float, hi: float, threshold: float, above: bool, strict: bool = False) -> str:
    """``replicates`` when all of ``[lo, hi]`` meets ``value >= threshold`` (``>`` when ``strict``; ``<`` /
    ``<=`` when not ``above``), ``does not replicate`` when none of it does, else ``inconclusive``.

    >>> interval_verdict(0.2, 0.3, 0.14, above=True), interval_verdict(0.1, 0.2, 0.14, above=True)
    ('replicates', 'inconclusive')
    >>> interval_verdict(-0.02, -0.01, 0.0, above=True, strict=True)
    'does not replicate'
    """
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return MISSING
    if above:
        meets_all = lo > threshold if strict else lo >= threshold
        meets_none = hi <= threshold if strict else hi < threshold
    else:
        meets_all = hi < threshold if strict else hi <= threshold
        meets_none = lo >= threshold if strict else lo > threshold
    return REPLICATES if meets_all else FAILS if meets_none else INCONCLUSIVE


def count_verdict(n_yes: int, n_no: int, n_total: int, need: int) -> str:
    """At least ``need`` of ``n_total`` items must meet a criterion; ``n_yes`` do beyond doubt, ``n_no`` miss it
    beyond doubt. Replicates when ``n_yes >= need``, fails when even every undecided item could not reach
    ``need``, else inconclusive.

    >>> count_verdict(4, 0, 5, 4), count_verdict(0, 2, 5, 4), count_verdict(2, 1, 5, 4)
    ('replicates', 'does not replicate', 'inconclusive')
    """
    if n_yes >= need:
        return REPLICATES
    if n_total - n_no < need:
        return FAILS
    return INCONCLUSIVE


# ------------------------------------------------------------------------------------------- the statistics

def prompt_keys(table: pd.DataFrame) -> pd.Series:
    """One prompt key per row (question set and question id), the bootstrap's cluster."""
    qid = table["question_id"].astype(str) if "question_id" in table else table["trace_id"].astype(str)
    return (table["question_set"].astype(str) + "\x1f" + qid) if "question_set" in table else qid


class MetricStatistics:
    """The replications computed from the per-trace metrics table: AT's model epsilon^2, each dimension's
    model - domain difference (full and length-excluded profiles), Efficiency's change, and each
    dimension's equal-vs-PCA rank correlation, all recomputed on a set of row indices (z-scores included)."""

    def __init__(self, metrics: pd.DataFrame, dimensions=None):
        from ..vocabulary import METRIC_NAMES

        self.metric_names = list(METRIC_NAMES)
        self.x = metrics[self.metric_names].to_numpy(dtype=float)
        self.dims = dimension_map(dimensions)
        self.col = {m: i for i, m in enumerate(self.metric_names)}
        self.model = pd.factorize(metrics["model"].astype(str), sort=True)[0]
        has_domain = "domain" in metrics and (metrics["domain"].astype(str) != "").any()
        self.domain = pd.factorize(metrics["domain"].astype(str), sort=True)[0] if has_domain else None
        self.excluded = set(LENGTH_METRICS)

    def profile(self, idx: np.ndarray, exclude: set[str] = frozenset()) -> dict[str, np.ndarray]:
        from .bootstrap import zscore_columns

        used = [m for m in self.metric_names if m not in exclude]
        z = zscore_columns(self.x[np.ix_(idx, [self.col[m] for m in used])])
        pos = {m: i for i, m in enumerate(used)}
        out = {}
        for d, members in self.dims.items():
            kept = [pos[m] for m in members if m in pos]
            if kept:
                out[d] = z[:, kept].mean(axis=1)
        return out

    def at_epsilon2(self, idx: np.ndarray) -> np.ndarray:
        from .bootstrap import epsilon2

        return np.array([epsilon2(self.x[idx, self.col["AT"]], self.model[idx])])

    def model_minus_domain(self, idx: np.ndarray, exclude: set[str] = frozenset()) -> np.ndarray:
        from .bootstrap import epsilon2

        prof = self.profile(idx, exclude)
        return np.array([epsilon2(prof[d], self.model[idx]) - epsilon2(prof[d], self.domain[idx])
                         if d in prof and self.domain is not None else np.nan for d in self.dims])

    def efficiency_change(self, idx: np.ndarray) -> np.ndarray:
        from .bootstrap import epsilon2

        full, red = self.profile(idx), self.profile(idx, self.excluded)
        if "Efficiency" not in full or "Efficiency" not in red:
            return np.array([np.nan])
        return np.array([epsilon2(red["Efficiency"], self.model[idx]) - epsilon2(full["Efficiency"], self.model[idx])])

    def ranking_rho(self, idx: np.ndarray) -> np.ndarray:
        """Per dimension: Spearman rho between the models' mean equal-weight and PC1-weighted scores
        (:func:`.robustness.aggregation_robustness`, recomputed on ``idx``)."""
        from scipy.stats import rankdata

        from .bootstrap import zscore_columns
        from .robustness import pca_weights

        codes = self.model[idx]
        groups, codes = np.unique(codes, return_inverse=True)
        sizes = np.bincount(codes)
        out = []
        for d, members in self.dims.items():
            cols = [self.col[m] for m in members if m in self.col]
            z = zscore_columns(self.x[np.ix_(idx, cols)])
            w, _ = pca_weights(z)
            eq = np.bincount(codes, weights=z.mean(axis=1)) / sizes
            pc = np.bincount(codes, weights=z @ w) / sizes
            if len(groups) < 3 or np.ptp(eq) == 0 or np.ptp(pc) == 0:
                out.append(np.nan)
                continue
            ra, rb = rankdata(eq), rankdata(pc)
            out.append(float(np.corrcoef(ra, rb)[0, 1]))
        return np.array(out)


def _cycle_arrays(cycles: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    full = cycles[cycles["subgraph"] == "full"].reset_index(drop=True)
    width = max((len(c) for c in full["length_counts"] if c is not None), default=0)
    hist = np.zeros((len(full), width), dtype=np.int64)
    for i, c in enumerate(full["length_counts"]):
        if c is not None and len(c):
            hist[i, :len(c)] = np.asarray(list(c), dtype=np.int64)
    return full, hist


def _ablation_wide(ablation_traces: pd.DataFrame, metrics: pd.DataFrame | None) -> pd.DataFrame:
    """One row per trace analysed under every layer setting: ``CBC_l3 ... GD_full`` and its prompt key."""
    a = ablation_traces
    wide = a.pivot_table(index="trace_id", columns="layers", values=["CBC", "GD"], aggfunc="first")
    wide.columns = [f"{m}_{s}" for m, s in wide.columns]
    wide = wide.dropna().reset_index()
    if metrics is not None and {"trace_id", "question_id"} <= set(metrics.columns):
        keys = prompt_keys(metrics)
        keys.index = metrics["trace_id"].astype(str)
        wide["prompt"] = wide["trace_id"].astype(str).map(keys).fillna(wide["trace_id"].astype(str))
    else:
        qid = a.drop_duplicates("trace_id").set_index("trace_id")["question_id"].astype(str)
        wide["prompt"] = wide["trace_id"].map(qid)
    return wide


def _row(kind: str, key: str, **kw: Any) -> dict[str, Any]:
    row = {c: "" for c in CLAIM_COLUMNS}
    row.update(kind=kind, key=key, estimate=np.nan, ci_low=np.nan, ci_high=np.nan)
    row.update(kw)
    return row


def _rep(key: str, here: str, verdict: str, estimate=np.nan, lo=np.nan, hi=np.nan, detail: str = "",
         table: str | None = None) -> dict[str, Any]:
    r = REPLICATIONS[key]
    return _row("replication", key, question=r.question, where=r.where, criterion=r.criterion, paper=r.paper,
                here=here, estimate=float(estimate), ci_low=float(lo), ci_high=float(hi), verdict=verdict,
                detail=detail, table=table or r.table, quote=" | ".join(r.quote))


def _ci(lo: float, hi: float, nd: int = 3) -> str:
    return f"[{_f(lo, nd)}, {_f(hi, nd)}]"


def replication_rows(t: dict[str, pd.DataFrame], metrics: pd.DataFrame | None, cycles: pd.DataFrame | None,
                     ablation_traces: pd.DataFrame | None, dimensions, b: int, seed: int,
                     level: float) -> list[dict[str, Any]]:
    """The :data:`REPLICATIONS` whose inputs are present, with estimates, intervals and verdicts."""
    from .bootstrap import bootstrap, cluster_resamples
    from .discriminability import bonferroni

    rows: list[dict[str, Any]] = []
    pct = f"{100 * level:g}%"
    if "kruskal" in t:
        k = t["kruskal"]
        km = k[(k.kind == "metric") & (k.grouping == "model")]
        if len(km):
            n = len(km)
            kw = int((bonferroni(km.p, n) < 0.001).sum())
            blocked = "p_friedman" in km and km.n_blocks.min() >= 2 and km.p_friedman.notna().all()
            fr = int((bonferroni(km.p_friedman, n) < 0.001).sum()) if blocked else None
            decided = fr if blocked else kw
            here = (f"{'yes' if decided == n else 'no'}: Friedman within prompts {fr} / {n}, Kruskal-Wallis {kw} / {n}"
                    if blocked else f"{'yes' if kw == n else 'no'}: Kruskal-Wallis {kw} / {n} (no complete blocks)")
            rows.append(_rep("models_discriminated", here, REPLICATES if decided == n else FAILS, decided,
                             detail=f"{int(km.n_blocks.max())} complete prompts" if blocked else ""))
    if metrics is not None and len(metrics):
        ms = MetricStatistics(metrics, dimensions)
        res = cluster_resamples(prompt_keys(metrics), b, seed)
        n = len(metrics)
        est, lo, hi = bootstrap(ms.at_epsilon2, n, res, level)
        v = interval_verdict(lo[0], hi[0], paper.LARGE_EFFECT, above=True)
        rows.append(_rep("at_effect_large", f"{_f(est[0])} {pct} {_ci(lo[0], hi[0])}", v, est[0], lo[0], hi[0]))
        if ms.domain is not None:
            dims = list(ms.dims)
            est, lo, hi = bootstrap(ms.model_minus_domain, n, res, level)
            est_x = ms.model_minus_domain(np.arange(n), ms.excluded)
            yes, no = int((lo > 0).sum()), int((hi < 0).sum())
            wins = int((est > 0).sum())
            v = count_verdict(yes, no, len(dims), paper.DIMS_MODEL_OVER_DOMAIN)
            detail = "; ".join(f"{d} {_f(e)} {_ci(a, c)}" for d, e, a, c in zip(dims, est, lo, hi))
            here = (f"{wins} / {len(dims)} (intervals above 0: {yes}, below 0: {no}); without the length metrics "
                    f"{int((est_x > 0).sum())} / {len(dims)}")
            rows.append(_rep("model_over_domain", here, v, wins, detail=f"model - domain epsilon^2, {pct} intervals: "
                             + detail))
        est, lo, hi = bootstrap(ms.efficiency_change, n, res, level)
        v = interval_verdict(lo[0], hi[0], 0.0, above=False, strict=True)
        rows.append(_rep("efficiency_drops", f"change {_f(est[0])} {pct} {_ci(lo[0], hi[0])}", v, est[0], lo[0],
                         hi[0]))
        dims = list(ms.dims)
        est, lo, hi = bootstrap(ms.ranking_rho, n, res, level)
        by = {d: (e, a, c) for d, e, a, c in zip(dims, est, lo, hi)}
        four = [d for d in ("Breadth", "Depth", "Metacognition", "Efficiency") if d in by]
        if four:
            yes = sum(by[d][1] >= paper.ROBUSTNESS_MIN_RHO for d in four)
            no = sum(by[d][2] < paper.ROBUSTNESS_MIN_RHO for d in four)
            v = count_verdict(yes, no, len(four), len(four)) if all(np.isfinite(by[d][1]) for d in four) else MISSING
            rows.append(_rep("rankings_robust", "; ".join(f"{d} {_f(by[d][0], 2)} {_ci(by[d][1], by[d][2], 2)}"
                                                          for d in four), v, yes,
                             detail=f"{len(np.unique(ms.model))} models; {pct} intervals"))
        if "Structure" in by:
            e, a, c = by["Structure"]
            v = interval_verdict(a, c, paper.ROBUSTNESS_MIN_RHO, above=False, strict=True)
            rows.append(_rep("structure_shifts", f"{_f(e, 2)} {pct} {_ci(a, c, 2)}", v, e, a, c))
    if cycles is not None and len(cycles) and (cycles["subgraph"] == "full").any():
        from .cycles import _median_from_counts

        full, hist = _cycle_arrays(cycles)
        has = full["has_cycle"].to_numpy(dtype=float)
        res = cluster_resamples(prompt_keys(full), b, seed)
        est, lo, hi = bootstrap(lambda i: np.array([has[i].mean()]), len(full), res, level)
        v = interval_verdict(lo[0], hi[0], 0.90, above=True)
        rows.append(_rep("cycles_near_universal", f"{100 * est[0]:.1f}% {pct} [{100 * lo[0]:.1f}%, {100 * hi[0]:.1f}%]",
                         v, est[0], lo[0], hi[0], detail=f"{len(full)} traces"))
        est, lo, hi = bootstrap(lambda i: np.array([_median_from_counts(hist[i].sum(axis=0))]), len(full), res, level)
        capped = int(full["capped"].sum())
        v = interval_verdict(lo[0], hi[0], 7.0, above=True)
        rows.append(_rep("cycles_long", f"median {est[0]:g} {pct} [{lo[0]:g}, {hi[0]:g}]", v, est[0], lo[0], hi[0],
                         detail=f"{int(hist.sum()):,} cycles" + (f"; {capped} traces capped (their cycles are those "
                                                                 "found)" if capped else "")))
    if ablation_traces is not None and len(ablation_traces):
        w = _ablation_wide(ablation_traces, metrics)
        need = {f"{m}_{s}" for m in ("CBC", "GD") for s in ("l3", "l4", "full")}
        if len(w) and need <= set(w.columns):
            res = cluster_resamples(w["prompt"], b, seed)
            cbc = w[["CBC_l3", "CBC_l4", "CBC_full"]].to_numpy(dtype=float)
            gd = w[["GD_l3", "GD_l4", "GD_full"]].to_numpy(dtype=float)

            def gain(i: np.ndarray) -> np.ndarray:
                m = cbc[i].mean(axis=0)
                return np.array([(m[2] - m[1]) - (m[1] - m[0])])

            def gd_max(i: np.ndarray) -> np.ndarray:
                m = gd[i].mean(axis=0)
                return np.array([m[2] - max(m[0], m[1])])

            mc, mg = cbc.mean(axis=0), gd.mean(axis=0)
            est, lo, hi = bootstrap(gain, len(w), res, level)
            v = interval_verdict(lo[0], hi[0], 0.0, above=True, strict=True)
            rise, rlo, rhi = bootstrap(lambda i: np.array([cbc[i, 2].mean() - cbc[i, 1].mean()]), len(w), res, level)
            rows.append(_rep("cbc_gain_in_full", f"CBC {' / '.join(_f(x) for x in mc)}; gain difference "
                                                 f"{_f(est[0])} {pct} {_ci(lo[0], hi[0])}", v, est[0], lo[0], hi[0],
                             detail=f"{len(w)} traces, l3 / l4 / full; CBC full - l4 alone {_f(rise[0])} "
                                    f"{_ci(rlo[0], rhi[0])}"))
            est, lo, hi = bootstrap(gd_max, len(w), res, level)
            v = interval_verdict(lo[0], hi[0], 0.0, above=True, strict=True)
            rows.append(_rep("gd_max_in_full", f"GD {' / '.join(_f(x) for x in mg)}; full - max(l3, l4) "
                                               f"{_f(est[0])} {pct} {_ci(lo[0], hi[0])}", v, est[0], lo[0], hi[0],
                             detail=f"{len(w)} traces, l3 / l4 / full"))
    order = list(REPLICATIONS)
    return sorted(rows, key=lambda r: order.index(r["key"]))


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


def not_comparable_rows(t: dict[str, pd.DataFrame], alpha: float) -> list[dict[str, Any]]:
    """The :data:`NOT_COMPARABLE` findings whose tables are present."""
    from .multiplicity import expected_exceedances

    rows = []

    def add(key: str, here: str, detail: str = "") -> None:
        n = NOT_COMPARABLE[key]
        rows.append(_row("not_comparable", key, question=n.finding, here=here, paper=n.why, detail=detail,
                         table=n.table, quote=" | ".join(n.quote), verdict="not comparable"))

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
            parts.append(f"{g}: {above} / {len(grp)} above the null's 95th percentile "
                         f"({expected_exceedances(len(grp)):.1f} expected by chance), {holm_sig} / {len(grp)} with "
                         f"Holm-adjusted p_perm < {alpha:g}")
        add("effects_above_chance", "; ".join(parts))
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
                 b: int, seed: int, level: float, alpha: float, dimensions=None) -> pd.DataFrame:
    """Every row (:data:`CLAIM_COLUMNS`): replications, then identities, then not comparable.

    ``b``, ``seed``, ``level``: the bootstrap (config ``stats.bootstrap``, ``bootstrap_seed``,
    ``interval_level``); ``alpha``: the family-wise level of the Holm counts (``stats.alpha``).
    """
    rows = (replication_rows(tables, metrics, cycles, ablation_traces, dimensions, b, seed, level)
            + identity_rows(tables, ablation_traces, dimensions) + not_comparable_rows(tables, alpha))
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
            "identities_violated": int(((claims.kind == "identity") & (claims.verdict != "holds")).sum()),
            "not_comparable": int((claims.kind == "not_comparable").sum())}
