"""The study's results as Markdown, generated from the ``results/stats`` tables, beside the paper's.

    thinkprobe summary results/stats                  # prints it (the stats_summary rule writes summary.md)
    thinkprobe summary docs/results/corpus-study      # the same for the committed snapshot
    thinkprobe summary --pages                        # regenerate every results block of the docs and README

Nothing is estimated here: every cell is read from one of the tables the ``stats`` rules write (the checks
against the paper from ``claims.parquet``, :mod:`.claims`), and every row names that table. The paper's
column comes from :mod:`.paper`. The snapshot that the documentation quotes is :mod:`.snapshot`'s; the
generated blocks of the Markdown pages are :mod:`.pages`'.

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

# the statistics tables the summary reads (a snapshot holds them, with the per-trace tables of .snapshot)
SNAPSHOT_TABLES = ("kruskal", "model_vs_domain", "cycles_summary", "length_excluded", "aggregation_robustness",
                   "encoder_sensitivity", "ablation", "agreement", "claims")
RUN_FILE = "run.json"

Row = tuple[str, str, str, str]  # finding, this run, paper, table


def _f(x: Any, nd: int = 3) -> str:
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{float(x):.{nd}f}"


def _p(x: Any) -> str:
    """A p-value: 3 significant digits, ``< 1e-16`` below double precision."""
    if x is None or not np.isfinite(float(x)):
        return "n/a"
    x = float(x)
    return "< 1e-16" if x < 1e-16 else f"{x:.3g}"


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
                 f"Kruskal-Wallis {n_sig} / {len(km)} ({n_bonf} after Bonferroni){blocked}; epsilon^2 "
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
                         f"{above} / {len(grp)} targets above it ({expected_exceedances(len(grp)):.1f} expected by "
                         "chance)")
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
    dom = ", ".join(f"{x.target} {_f(x.epsilon2, 2)}" + (f" (Holm p_perm {_p(x.p_perm_holm)})"
                                                           if "p_perm_holm" in kd else "")
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

    def cells(names, rhos, ps) -> str:
        return ", ".join(f"{a} {_f(b, 2)} (p {_p(c)})" for a, b, c in zip(names, rhos, ps))

    if "aggregation_robustness" in t:
        r = t["aggregation_robustness"]
        n = int(r.n_models.max()) if len(r) else 0
        how = f", {r.p_method.iloc[0]} p" if "p_method" in r and len(r) else ""
        rows.append((f"equal vs PCA-weighted model ranking (rho, {n} models{how})", cells(r.dimension, r.rho, r.p),
                     paper.COLUMN["robustness"], "aggregation_robustness"))
    if "encoder_sensitivity" in t:
        s = t["encoder_sensitivity"]
        s = s[s.kind == "dimension"]
        n = int(s.n_models.max()) if len(s) else 0
        how = f", {s.p_method.iloc[0]} p" if "p_method" in s and len(s) else ""
        rows.append((f"model ranking under a second encoder (rho, {n} models{how})", cells(s.target, s.rho, s.p),
                     paper.COLUMN["sensitivity"], "encoder_sensitivity"))
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
    """Per target: epsilon^2 by model and by domain beside their chance levels, with the permutation p
    (Holm-adjusted within the family), its Monte Carlo error, and the blocked test of the models."""
    k = t["kruskal"]
    if "p_perm_holm" not in k:
        return []
    by = {g: grp.set_index(["kind", "target"]) for g, grp in k.groupby("grouping", sort=False)}
    m, d = by.get("model"), by.get("domain")
    if m is None:
        return []
    header = ["target", "epsilon^2 by model", "null mean / 95th pct", "p_perm, Holm (MC SE of p_perm)",
              "Friedman p, Holm", "Kendall's W"]
    if d is not None:
        header += ["epsilon^2 by domain", "null mean / 95th pct", "p_perm, Holm (MC SE of p_perm)"]
    rows = []
    for key, x in m.iterrows():
        row = [key[1], _f(x.epsilon2), f"{_f(x.epsilon2_null_mean)} / {_f(x.epsilon2_null_p95)}",
               f"{_p(x.p_perm_holm)} ({_f(x.p_perm_mcse, 4)})", _p(x.p_friedman_holm), _f(x.kendall_w)]
        if d is not None:
            y = d.loc[key] if key in d.index else None
            row += ([_f(y.epsilon2), f"{_f(y.epsilon2_null_mean)} / {_f(y.epsilon2_null_p95)}",
                     f"{_p(y.p_perm_holm)} ({_f(y.p_perm_mcse, 4)})"] if y is not None else ["n/a"] * 3)
        rows.append(row)
    b = int(k.B.iloc[0])
    return ([f"Effect sizes against chance (`kruskal`; B = {b:,} shufflings; p-values Holm-adjusted within each family: "
             "one grouping x the 19 metrics, or x the 5 dimensions; the Friedman test blocks by prompt and needs every "
             "model to answer a prompt, so it exists for the model grouping only):", ""]
            + _table(header, rows))


def claims_sections(claims: pd.DataFrame) -> list[str]:
    """The checks against the paper: replications (counted), identities and not comparable (not counted)."""
    c = counts(claims)
    rep = claims[claims.kind == "replication"]
    lines = ["Checks against the paper (`claims`, thinkprobe/stats/claims.py). A replication answers a question "
             "the paper answers from its data, with a criterion fixed from the paper's own words (the sentences "
             "follow the table); this run answers with an estimate and a bootstrap interval over prompts, and a "
             "check whose interval straddles its criterion is inconclusive. "
             f"**{c['replications']} replications: {c[REPLICATES]} "
             f"{'replicates' if c[REPLICATES] == 1 else 'replicate'}, {c[FAILS]} {'does' if c[FAILS] == 1 else 'do'} "
             f"not, {c[INCONCLUSIVE]} inconclusive**" + (f", {c[MISSING]} not computed" if c[MISSING] else "") + ".", ""]
    lines += _table(["question", "criterion", "paper", "this run", "verdict", "table"],
                    [[r.question, r.criterion, r.paper, r.here + (f" ({r.detail})" if r.detail else ""),
                      r.verdict if r.verdict == REPLICATES else f"**{r.verdict}**", f"`{r.table}`"]
                     for r in rep.itertuples()])
    lines += ["", "The paper's sentences behind each criterion:", ""]
    lines += [f"- {r.question} ({r.where}): " + "; ".join(f'"{plain(q)}"' for q in r.quote.split(" | "))
              for r in rep.itertuples()]
    ids = claims[claims.kind == "identity"]
    if len(ids):
        lines += ["", f"Identities of our reading ({len(ids)}; checks of the code, not counted): each holds by "
                      "construction, is proved on random graphs or tables by the test named, and is verified here.",
                  ""]
        lines += _table(["statement", "the paper", "this run", "holds", "proved by"],
                        [[r.question, f'{r.where}: "{plain(r.quote.split(" | ")[0])}"', r.here,
                          r.verdict if r.verdict == "holds" else "**VIOLATED: a bug**", f"`{r.test}`"]
                         for r in ids.itertuples()])
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
        lines += [""] + claims_sections(tables["claims"])
    return "\n".join(lines) + "\n"


def read_run(stats_dir: str | Path) -> dict[str, Any] | None:
    p = Path(stats_dir) / RUN_FILE
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None


def summary_text(stats_dir: str | Path) -> str:
    """:func:`markdown` of the tables (and ``run.json``, when present) in ``stats_dir``."""
    return markdown(load_tables(stats_dir), read_run(stats_dir), str(stats_dir))


if __name__ == "__main__":
    print(summary_text(sys.argv[1] if len(sys.argv) > 1 else "results/stats"), end="")
