"""The study's results as Markdown, generated from the ``results/stats`` tables, beside the paper's.

    thinkprobe summary results/stats                  # prints it (the stats_summary rule writes summary.md)
    thinkprobe summary docs/results/corpus-study      # the same for the committed snapshot
    thinkprobe summary --pages                        # regenerate every results block of the docs and README

Nothing is estimated here: every cell is read from one of the tables the ``stats`` rules write (the checks
against the paper from ``claims.parquet``, :mod:`.claims`), and every row names that table. The paper's
column comes from :mod:`.paper`. The snapshot that the documentation quotes is :mod:`.snapshot`'s; the
generated blocks of the Markdown pages are :mod:`.page_blocks`'.

Cycle counts from a census stopped at ``stats.cycle_cap`` are lower bounds; they are printed with ``>=``
whenever a trace of that subgraph hit the cap. p-values of permutation tests are Holm-adjusted within each
family (one grouping and one kind of target: the 19 metrics or the 5 dimensions), and every count of
targets above their null is printed beside the count expected by chance.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..vocabulary import DIMENSIONS
from . import paper
from .claims import FAILS, INCONCLUSIVE, MISSING, REPLICATES, counts, plain
from .multiplicity import expected_exceedances
from .register import REGISTER

# the statistics tables the summary reads (a snapshot holds them, with the per-trace tables of .snapshot)
SNAPSHOT_TABLES = ("kruskal", "model_vs_domain", "cycles_summary", "length_excluded", "length_partial",
                   "aggregation_robustness", "encoder_sensitivity", "ablation", "agreement", "claims")
RUN_FILE = "run.json"
# what a page says of a claims table written before the claim register (issue 35) existed
PREDATES = (f"The claims table of this snapshot predates the claim register (`{REGISTER}`): re-take the "
            "snapshot (`thinkprobe summary --retake`) to check every sentence of the paper it lists.")

Row = tuple[str, str, str, str]  # finding, this run, paper, table


def _f(x: Any, nd: int = 3) -> str:
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{float(x):.{nd}f}"


def _p(x: Any) -> str:
    """A p-value: 3 significant digits, ``< 1e-16`` below double precision."""
    if x is None or not np.isfinite(float(x)):
        return "n/a"
    x = float(x)
    return "< 1e-16" if x < 1e-16 else f"{x:.3g}"


def _pb(x: Any, bound: bool = False) -> str:
    """A p-value that may be a bound: ``<= x`` at the permutation floor 1 / (B + 1) (its Holm value too)."""
    return ("<= " if bound and x is not None and np.isfinite(float(x)) else "") + _p(x)


def _page(t: dict[str, pd.DataFrame]) -> dict:
    from .multiplicity import page_lookup, page_pvalues

    return page_lookup(page_pvalues(t))


def _holm_on_page(t: dict[str, pd.DataFrame], key: tuple) -> str:
    p, bound, ph = _page(t).get(key, (np.nan, False, np.nan))
    return _pb(ph, bound)


def page_alpha() -> float:
    """The level the page's Holm values are read at: the schema's default of ``stats.alpha`` (one home)."""
    from ..config import load_schema

    schema = load_schema(Path(__file__).resolve().parents[2] / "config" / "schema.yaml")
    return float(schema["properties"]["stats"]["properties"]["alpha"]["default"])


def joint_null(t: dict[str, pd.DataFrame]) -> dict[str, dict[str, float]]:
    """Per grouping, the joint null of the count of targets above their null's 95th percentile (one shuffling
    for all targets), as the claims table stores it (:func:`.claims.joint_nulls`); empty when absent."""
    c = t.get("claims")
    if c is None or "criteria" not in c:
        return {}
    row = c[(c.kind == "not_comparable") & (c.key == "effects_above_chance")]
    return json.loads(row.criteria.iloc[0] or "{}") if len(row) else {}


def chance_count(t: dict[str, pd.DataFrame], grouping: str, above: int, n: int) -> str:
    """``k / n targets above ...`` read against the joint null when the claims table has it."""
    j = joint_null(t).get(grouping)
    if j:
        return (f"{above} / {n} targets above it (joint null, one shuffling for all targets: {j['null_mean']:.1f} "
                f"on average, 95th percentile {j['null_p95']:g}, p {_p(j['p'])})")
    return f"{above} / {n} targets above it ({expected_exceedances(n):.1f} expected by chance, if independent)"


def load_tables(stats_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The :data:`SNAPSHOT_TABLES` present in ``stats_dir`` (``<name>.parquet``)."""
    d = Path(stats_dir)
    if not d.is_dir():
        raise FileNotFoundError(f"{d}: no such statistics folder")
    out = {name: pd.read_parquet(d / f"{name}.parquet") for name in SNAPSHOT_TABLES if (d / f"{name}.parquet").exists()}
    if "kruskal" not in out:
        raise FileNotFoundError(f"{d}: no kruskal.parquet (run `snakemake stats` first)")
    return out


def _kruskal_rows(t: dict[str, pd.DataFrame]) -> list[Row]:
    k = t["kruskal"]
    km = k[(k.kind == "metric") & (k.grouping == "model")]
    rows: list[Row] = []
    if km.empty:
        return rows
    n_sig, n_bonf = int((km.p < 0.001).sum()), int((km.p_bonferroni < 0.001).sum())
    blocked = ""
    if "p_friedman" in km and km.p_friedman.notna().any():
        n_fr = int((km.p_friedman < 0.001).sum())
        n_fr_b = int((np.minimum(1.0, km.p_friedman * len(km)) < 0.001).sum())
        blocked = (f"; blocked (Friedman within prompts, {int(km.n_blocks.max())} complete prompts): {n_fr} / "
                   f"{len(km)} ({n_fr_b} after Bonferroni)")
    rows.append(("metrics discriminating models at p < 0.001",
                 f"Kruskal-Wallis (trace-level, pseudo-replicated: it treats the traces of a prompt as independent) "
                 f"{n_sig} / {len(km)} ({n_bonf} after Bonferroni){blocked}; epsilon^2 "
                 f"{_f(km.epsilon2.min())}..{_f(km.epsilon2.max())}", paper.COLUMN["metrics_p001"], "kruskal"))
    top = km.sort_values("epsilon2", ascending=False).head(3)
    corr = "epsilon2_corrected" in top
    rows.append(("largest model effects (epsilon^2" + ("; chance-corrected)" if corr else ")"),
                 ", ".join(f"{r.target} {_f(r.epsilon2)}" + (f" ({_f(r.epsilon2_corrected)})" if corr else "")
                           for r in top.itertuples()), paper.COLUMN["largest_metric"], "kruskal"))
    if "epsilon2_null_mean" in k:
        parts = []
        for g, grp in k.groupby("grouping", sort=False):
            kk = int(grp.k.max())
            above = int((grp.epsilon2 > grp.epsilon2_null_p95).sum())
            parts.append(f"{g} ({kk} groups, {grp.permutation.iloc[0]}): null mean {_f(grp.epsilon2_null_mean.min())}.."
                         f"{_f(grp.epsilon2_null_mean.max())}, 95th pct up to {_f(grp.epsilon2_null_p95.max())}; "
                         + chance_count(t, g, above, len(grp)))
        b = int(k.B.iloc[0])
        mcse = f"; Monte Carlo SE of p_perm at most {_f(k.p_perm_mcse.max(), 4)}" if "p_perm_mcse" in k else ""
        rows.append((f"epsilon^2 expected by chance (permutation null, B = {b:,}{mcse})", "; ".join(parts),
                     paper.COLUMN["chance"], "kruskal"))
    return rows


def _dominance_rows(t: dict[str, pd.DataFrame]) -> list[Row]:
    if "model_vs_domain" not in t:
        return []
    r = t["model_vs_domain"]
    rd = r[r.kind == "dimension"].set_index("target")
    rm = r[r.kind == "metric"]
    if rd.empty:
        return []
    corr = "corrected_model" in rd
    cells = []
    for d in [d for d in DIMENSIONS if d in rd.index]:
        x = rd.loc[d]
        cells.append(f"{d} {_f(x.epsilon2_model)}/{_f(x.epsilon2_domain)}"
                     + (f" ({_f(x.corrected_model)}/{_f(x.corrected_domain)})" if corr else ""))
    unc = int(rd.model_dominates_uncorrected.sum()) if "model_dominates_uncorrected" in rd else int(
        rd.model_dominates.sum())
    ours = f"{unc} / {len(rd)} uncorrected" + (f", {int(rd.model_dominates.sum())} / {len(rd)} chance-corrected"
                                               if corr else "")
    rows = [("dimensions with model epsilon^2 > domain epsilon^2 (model/domain" + ("; chance-corrected)" if corr else ")"),
             ours + "; " + ", ".join(cells), paper.COLUMN["dims_model_gt_domain"], "model_vs_domain")]
    k = t["kruskal"]
    kd = k[(k.kind == "metric") & (k.grouping == "domain")].sort_values("epsilon2", ascending=False).head(3)
    km = k[(k.kind == "metric") & (k.grouping == "model")].sort_values("epsilon2", ascending=False).head(1)
    ratios = rd["ratio"].replace(np.inf, np.nan)
    dom = ", ".join(f"{x.target} {_f(x.epsilon2, 2)}" + (f" (p_perm, Holm over the page, "
                                                           f"{_holm_on_page(t, ('kruskal', 'domain', x.target, 'permutation'))})"
                                                           if "p_perm" in kd else "")
                    for x in kd.itertuples())
    n_unc = int(rm.model_dominates_uncorrected.sum()) if "model_dominates_uncorrected" in rm else int(
        rm.model_dominates.sum())
    rows.append(("model-over-domain ratio",
                 f"dimensions at most {_f(ratios.max(), 2)}x; top metric by model "
                 + (f"{km.target.iloc[0]} {_f(km.epsilon2.iloc[0], 2)}" if len(km) else "n/a")
                 + f", by domain {dom or 'n/a'}; {n_unc} / {len(rm)} metrics model > domain uncorrected"
                 + (f", {int(rm.model_dominates.sum())} / {len(rm)} chance-corrected" if corr else ""),
                 paper.COLUMN["max_ratio"], "kruskal, model_vs_domain"))
    return rows


def _bound(x: float, capped: int, nd: int | None = None) -> str:
    """A cycle statistic, prefixed ``>=`` when some trace's census stopped at the cap (a lower bound)."""
    s = f"{x:.{nd}f}" if nd is not None else f"{x:g}"
    return (">= " if capped else "") + s


def _cycle_rows(t: dict[str, pd.DataFrame]) -> list[Row]:
    if "cycles_summary" not in t:
        return []
    cs = t["cycles_summary"]
    allc = cs[cs.model == "(all)"].set_index("subgraph")
    if allc.empty:
        return []
    rows = [("traces with a directed cycle",
             ", ".join(f"{s} {100 * allc.loc[s, 'prevalence']:.1f}%" for s in allc.index),
             paper.COLUMN["cycle_prevalence"], "cycles_summary")]
    if "full" in allc.index:
        f = allc.loc["full"]
        c = int(f.n_capped)
        capped = f"{c} capped: counts are lower bounds" if c else "none capped"
        rows.append(("cycles per trace (full graph)",
                     f"median {_bound(f['median'], c)}, mean {_bound(f['mean'], c, 1)}, "
                     + (f"Q1 {_bound(f.q1, c)}, Q3 {_bound(f.q3, c)}" if c else f"Q1-Q3 {f.q1:g}-{f.q3:g}")
                     + f", max {_bound(f['max'], c)} ({capped}); median length {f.median_length:g}"
                     + (f" (seq+synt: {allc.loc['seq+synt', 'median_length']:g})" if "seq+synt" in allc.index else ""),
                     paper.COLUMN["cycle_counts"], "cycles_summary"))
    return rows


def _length_rows(t: dict[str, pd.DataFrame]) -> list[Row]:
    if "length_excluded" not in t:
        return []
    le = t["length_excluded"]
    parts = []
    for g, grp in le.groupby("grouping", sort=False):
        ch = grp[grp.delta.abs() > 1e-12]
        parts.append(f"{g}: " + (", ".join(f"{r.dimension} {_f(r.epsilon2_full)} -> {_f(r.epsilon2_excluded)}"
                                           for r in ch.itertuples()) or "no change"))
    return [("length-excluded profile (epsilon^2 that change)", "; ".join(parts), paper.COLUMN["length_excluded"],
             "length_excluded")]


def _rank_rows(t: dict[str, pd.DataFrame]) -> list[Row]:
    rows = []

    from .multiplicity import ranking_identity

    def cells(source, names, rhos, ps, identities=()) -> str:
        return ", ".join(f"{a} {_f(b, 2)} (rho = 1 by construction: an identity, no p)" if a in identities else
                         f"{a} {_f(b, 2)} (p {_p(c)}; Holm over the page {_holm_on_page(t, (source, 'model', a, 'exact Spearman'))})"
                         for a, b, c in zip(names, rhos, ps))

    if "aggregation_robustness" in t:
        r = t["aggregation_robustness"]
        n = int(r.n_models.max()) if len(r) else 0
        how = f", {r.p_method.iloc[0]} p" if "p_method" in r and len(r) else ""
        ident = {x.dimension for x in r.itertuples() if ranking_identity(x.weights)}
        rows.append((f"equal vs PCA-weighted model ranking (rho, {n} models{how}; a dimension of two metrics is an "
                     "identity: PCA weights equal weights)", cells("aggregation_robustness", r.dimension, r.rho, r.p, ident),
                     paper.COLUMN["robustness"], "aggregation_robustness"))
    if "encoder_sensitivity" in t:
        s = t["encoder_sensitivity"]
        s = s[s.kind == "dimension"]
        n = int(s.n_models.max()) if len(s) else 0
        how = f", {s.p_method.iloc[0]} p" if "p_method" in s and len(s) else ""
        rows.append((f"model ranking under a second encoder (rho, {n} models{how})",
                     cells("encoder_sensitivity", s.target, s.rho, s.p), paper.COLUMN["sensitivity"],
                     "encoder_sensitivity"))
    return rows


def _ablation_rows(t: dict[str, pd.DataFrame]) -> list[Row]:
    if "ablation" not in t:
        return []
    a = t["ablation"].set_index("layers")
    stages = [s for s in ("l1", "l3", "l4", "full") if s in a.index]
    n = int(a.n_traces.max()) if len(a) else 0
    cells = [f"{m} " + " / ".join(_f(a.loc[s, m], 2) for s in stages) for m in ("BF", "MEC", "GD", "RvD", "CBC", "ATU")
             if m in a.columns]
    return [(f"layer ablation ({n} traces; {' / '.join(stages)})", "; ".join(cells), paper.COLUMN["ablation"],
             "ablation")]


def agreement_means(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per segmentation: traces analysed and in all, and the mean of every agreement score (App. H)."""
    a = t["agreement"]
    ok = a[a.status == "ok"]
    cols = ["precision", "recall", "f1", "pk", "windowdiff", "kappa", "n_ref_segments", "n_hyp_segments"]
    out = ok.groupby("segmentation", sort=True)[cols].mean()
    out.insert(0, "n_total", a.groupby("segmentation").size())
    out.insert(0, "n_ok", ok.groupby("segmentation").size())
    return out


def _agreement_rows(t: dict[str, pd.DataFrame]) -> list[Row]:
    if "agreement" not in t:
        return []
    m = agreement_means(t)
    if m.empty:
        return []
    last = m.index[-1]
    x = m.loc[last]
    ours = f"{last}: {_f(x.f1)}, {_f(x.pk)}, {_f(x.kappa)}"
    others = [f"{s}: {_f(m.loc[s, 'f1'])}, {_f(m.loc[s, 'pk'])}, {_f(m.loc[s, 'kappa'])}" for s in m.index[:-1]]
    return [("segmentation agreement with the corpus's LLM step labels (F1 +-2, Pk, kappa)",
             ours + (f" ({'; '.join(others)})" if others else ""), paper.COLUMN["agreement"], "agreement")]


def headline(tables: dict[str, pd.DataFrame]) -> list[Row]:
    """``(finding, this run, paper, table)`` rows, in the order of the paper's sections."""
    rows: list[Row] = []
    for part in (_kruskal_rows, _dominance_rows, _cycle_rows, _length_rows, _rank_rows, _ablation_rows,
                 _agreement_rows):
        rows += part(tables)
    return rows


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(str(c).replace("|", "/") for c in r) + " |" for r in rows]


def effects_table(t: dict[str, pd.DataFrame]) -> list[str]:
    """Per target: epsilon^2 by model and by domain beside their chance levels, with the permutation p (and its
    Holm value over every p-value of the page, :func:`.multiplicity.page_pvalues`), its Monte Carlo error, the
    blocked test of the models, and the tests of one effect that disagree."""
    from .multiplicity import page_pvalues

    k = t["kruskal"]
    if "p_perm" not in k:
        return []
    by = {g: grp.set_index(["kind", "target"]) for g, grp in k.groupby("grouping", sort=False)}
    m, d = by.get("model"), by.get("domain")
    if m is None:
        return []
    page = _page(t)

    def perm(g: str, target: str, x) -> str:
        p, bound, ph = page.get(("kruskal", g, target, "permutation"), (np.nan, False, np.nan))
        return f"{_pb(p, bound)} ({_f(x.p_perm_mcse, 4)}); {_pb(ph, bound)}"

    header = ["target", "epsilon^2 by model", "null mean / 95th pct", "p_perm (MC SE); Holm over the page",
              "Friedman p; Holm over the page", "Kendall's W"]
    if d is not None:
        header += ["epsilon^2 by domain", "null mean / 95th pct", "p_perm (MC SE); Holm over the page"]
    rows, disagree = [], []
    alpha = page_alpha()
    for key, x in m.iterrows():
        fp, _, fh = page.get(("kruskal", "model", key[1], "Friedman"), (np.nan, False, np.nan))
        row = [key[1], _f(x.epsilon2), f"{_f(x.epsilon2_null_mean)} / {_f(x.epsilon2_null_p95)}",
               perm("model", key[1], x), f"{_p(fp)}; {_p(fh)}", _f(x.kendall_w)]
        if np.isfinite(fp) and np.isfinite(x.p_perm) and (fp < alpha) != (x.p_perm < alpha):
            disagree.append(f"{key[1]} (permutation within prompts p {_pb(x.p_perm, False)}, Friedman p {_p(fp)})")
        if d is not None:
            y = d.loc[key] if key in d.index else None
            row += ([_f(y.epsilon2), f"{_f(y.epsilon2_null_mean)} / {_f(y.epsilon2_null_p95)}",
                     perm("domain", key[1], y)] if y is not None else ["n/a"] * 3)
        rows.append(row)
    b = int(k.B.iloc[0])
    allp = page_pvalues(t)
    n_sig = int((allp.p_holm < alpha).sum())
    sig = ", ".join(f"{x.target} by {x.grouping} ({x.test}{', length partialled' if x.source == 'length_partial' else ''}"
                    f"{', at the floor' if x.bound else ''})"
                    for x in allp[allp.p_holm < alpha].itertuples())
    lines = [f"Effect sizes against chance (`kruskal`; B = {b:,} shufflings, so no permutation p is below "
             f"1 / (B + 1) = {1 / (b + 1):.2g}: a p at that floor is printed `<= p`). **Every p-value on this page "
             f"({len(allp)}: permutation and Friedman p here, the exact Spearman p of the ranking rows, the "
             f"length-partialled permutation p) is Holm-adjusted over all of them together** "
             f"(thinkprobe/stats/multiplicity.py `page_pvalues`); {n_sig} stay below {alpha:g}"
             + (f": {sig}" if sig else "") + ". The Friedman test blocks by prompt and needs every model to answer "
             "a prompt, so it exists for the model grouping only.", ""]
    lines += _table(header, rows)
    if disagree:
        lines += ["", f"Tests of the same model effect that disagree at {alpha:g} (the within-prompt permutation of "
                      "epsilon^2 and the Friedman test of within-prompt ranks; they weigh the prompts differently): "
                  + "; ".join(disagree) + "."]
    return lines


def length_section(t: dict[str, pd.DataFrame]) -> list[str]:
    """The length confound (`length_partial`): every metric's Spearman rho with length, and epsilon^2 by model
    and by domain before and after partialling length out, under the dimension map the paper's figure needs
    (App. G's), with which model effects survive (the partialled value above its permutation null's 95th pct)."""
    if "length_partial" not in t or t["length_partial"].empty:
        return []
    lp = t["length_partial"]
    by = {g: grp.set_index("target") for g, grp in lp.groupby("grouping", sort=False)}
    m, d = by.get("model"), by.get("domain")
    if m is None:
        return []
    page = _page(t)

    def cell(g, target, x) -> str:
        if x.identity:
            return f"{_f(x.epsilon2)} -> 0 (the length itself: an identity, no p)"
        p, bound, ph = page.get(("length_partial", g, target, "permutation"), (np.nan, False, np.nan))
        return (f"{_f(x.epsilon2)} -> {_f(x.epsilon2_partial)} (null 95th pct {_f(x.epsilon2_null_p95_partial)}; "
                f"p_perm {_pb(p, bound)}, Holm over the page {_pb(ph, bound)})")

    rows = []
    for target, x in m.iterrows():
        row = [target, x.kind, _f(x.rho_length, 2), cell("model", target, x)]
        if d is not None and target in d.index:
            row.append(cell("domain", target, d.loc[target]))
        rows.append(row)
    strong = lp[(lp.grouping == "model") & (lp.kind == "metric") & (lp.identity == "")]
    n_strong = int((strong.rho_length.abs() >= 0.2).sum())
    surv = m[(m.identity == "") & m.survives.astype(bool)]
    k = t["kruskal"]
    before = k[(k.grouping == "model") & (k.kind == "metric") & (k.epsilon2 > k.epsilon2_null_p95)].target
    lost = [x for x in before if x in m.index and not m.loc[x, "identity"] and not bool(m.loc[x, "survives"])]
    gd = m.loc["GD"] if "GD" in m.index else None
    prose = (f"Length confound (`length_partial`, thinkprobe/stats/confound.py; length = AT, dimension map "
             f"`{m.dimension_map.iloc[0]}`, the one under which the paper's App. G figures add up): {n_strong} of "
             f"{len(strong)} other metrics correlate with length at |rho| >= 0.2"
             + (f"; GD at {_f(gd.rho_length, 2)}, its model epsilon^2 {_f(gd.epsilon2)} -> {_f(gd.epsilon2_partial)} "
                "once length is partialled out" if gd is not None else "")
             + ". Model effects that survive partialling (above their permutation null's 95th percentile): "
             + (", ".join(surv.index) or "none")
             + ("; metrics above their null before (`kruskal`) but not after: " + ", ".join(lost) if lost else "")
             + ".")
    header = ["target", "kind", "rho with length", "epsilon^2 by model -> partialled"]
    if d is not None:
        header.append("epsilon^2 by domain -> partialled")
    return [prose, ""] + _table(header, rows)


def claims_sections(claims: pd.DataFrame, run: dict[str, Any] | None = None) -> list[str]:
    """The checks against the paper, from the claim register: replications (counted, each sentence whole with
    its criteria), identities, untestable sentences (with why) and not comparable findings (not counted)."""
    import json

    if "register" not in claims:
        return [PREDATES]
    c = counts(claims)
    rep = claims[claims.kind == "replication"]
    reg = (run or {}).get("register") or {}
    # where the register is read today, and the version (commit, sha256) the snapshot was checked against
    where = (f"`{REGISTER}`, commit {reg.get('commit', '?')}, sha256 {str(reg.get('sha256', '?'))[:12]}" if reg
             else f"`{REGISTER}`")
    n_sent = int(claims.register.astype(str).ne("").sum()) if "register" in claims else len(rep)
    lines = [f"Checks against the paper (`claims`; the claim register {where}, thinkprobe/stats/register.py): "
             f"{n_sent} sentences of the paper's abstract, results sections and appendices, each quoted whole, "
             f"{c['untestable']} of them not testable on this corpus (why: below). Each testable sentence's criteria "
             "come from its own words (the words in the second column); each is computed with a BCa interval over "
             "prompts, and the sentence replicates only when every criterion does. "
             f"**{c['replications']} testable sentences: {c[REPLICATES]} "
             f"{'replicates' if c[REPLICATES] == 1 else 'replicate'}, {c[FAILS]} {'does' if c[FAILS] == 1 else 'do'} "
             f"not, {c[INCONCLUSIVE]} inconclusive**" + (f", {c[MISSING]} not computed" if c[MISSING] else "") + ".",
             ""]

    def crit(r) -> str:
        out = []
        for x in json.loads(r.criteria or "[]"):
            if "identity" in x:
                out.append(f'"{plain(x["words"])}": {x["verdict"]} (not counted)')
                continue
            iv = (f" [{_f(x['ci_low'])}, {_f(x['ci_high'])}]" if x.get("ci_low") is not None else " (a test)")
            out.append(f'"{plain(x["words"])}": {x["criterion"]}; here {_f(x["estimate"])}{iv}: {x["verdict"]}')
        return "<br>".join(out)

    lines += _table(["sentence (section)", "its criteria: the sentence's words, the criterion, this run (BCa 95% "
                     "over prompts)", "verdict"],
                    [[f'"{plain(r.quote)}" ({r.where})' + (f" ({r.detail})" if r.detail else ""), crit(r),
                      r.verdict if r.verdict == REPLICATES else f"**{r.verdict}**"] for r in rep.itertuples()])
    ids = claims[claims.kind == "identity"]
    if len(ids):
        lines += ["", f"Identities of our reading ({len(ids)}; checks of the code, not counted): each holds by "
                      "construction, is proved on random graphs or tables by the test named, and is verified here.",
                  ""]
        lines += _table(["statement", "the paper", "this run", "holds", "proved by"],
                        [[r.question if not r.register else "(register sentence)", f'{r.where}: "{plain(r.quote.split(" | ")[0])}"',
                          r.here, r.verdict if r.verdict == "holds" else "**VIOLATED: a bug**",
                          ", ".join(f"`{x}`" for x in str(r.test).split(", ")) if r.test else "its reason"]
                         for r in ids.itertuples()])
    un = claims[claims.kind == "untestable"]
    if len(un):
        lines += ["", f"Not testable on this corpus ({len(un)} sentences of the register; not counted):", ""]
        lines += [f'- {r.where}: "{plain(r.quote)}" Why not: {r.detail}.' for r in un.itertuples()]
    nc = claims[claims.kind == "not_comparable"]
    if len(nc):
        lines += ["", f"Not comparable ({len(nc)}; the paper did not test these; not counted):", ""]
        lines += _table(["finding", "this run", "why not comparable", "table"],
                        [[r.question, r.here + (f" ({r.detail})" if r.detail else ""), r.paper, f"`{r.table}`"]
                         for r in nc.itertuples()])
    return lines


def run_line(run: dict[str, Any] | None, source: str) -> list[str]:
    if not run:
        return []
    return [f"Run `{run.get('name', '')}`: commit {run.get('commit', '?')}, {run.get('date', '?')}, "
            f"`{run.get('command', '?')}`; tables in `{source}`. Regenerate this text with "
            f"`thinkprobe summary {source}`.", ""]


def markdown(tables: dict[str, pd.DataFrame], run: dict[str, Any] | None = None, source: str = "") -> str:
    """The whole summary: run line, findings table, effects against chance, agreement, checks against the paper."""
    lines = run_line(run, source)
    lines += _table(["finding", "this run", f"paper ({paper.CORPUS})", "table"],
                    [[a, b, c, f"`{d}`"] for a, b, c, d in headline(tables)])
    eff = effects_table(tables)
    if eff:
        lines += [""] + eff
    ln = length_section(tables)
    if ln:
        lines += [""] + ln
    if "agreement" in tables and len(agreement_means(tables)):
        m = agreement_means(tables)
        lines += ["", "Segmentation agreement with the corpus's LLM step labels (means over the analysed traces; "
                      "`agreement`):", ""]
        lines += _table(["segmentation", "traces analysed", "boundary P", "boundary R", "F1 (+-2)", "Pk",
                         "WindowDiff", "kappa", "segments: labels / ours"],
                        [[s, f"{int(x.n_ok)} / {int(x.n_total)}", _f(x.precision), _f(x.recall), _f(x.f1), _f(x.pk),
                          _f(x.windowdiff), _f(x.kappa), f"{x.n_ref_segments:.1f} / {x.n_hyp_segments:.1f}"]
                         for s, x in m.iterrows()])
    if "claims" in tables and len(tables["claims"]):
        lines += [""] + claims_sections(tables["claims"], run)
    return "\n".join(lines) + "\n"


def read_run(stats_dir: str | Path) -> dict[str, Any] | None:
    p = Path(stats_dir) / RUN_FILE
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None


def summary_text(stats_dir: str | Path) -> str:
    """:func:`markdown` of the tables (and ``run.json``, when present) in ``stats_dir``."""
    return markdown(load_tables(stats_dir), read_run(stats_dir), str(stats_dir))


if __name__ == "__main__":
    print(summary_text(sys.argv[1] if len(sys.argv) > 1 else "results/stats"), end="")
