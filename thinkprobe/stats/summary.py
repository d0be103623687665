"""The study's results as Markdown, generated from the ``results/stats`` tables, beside the paper's.

    thinkprobe summary results/stats                    # prints it (the stats_summary rule writes summary.md)
    thinkprobe summary results/stats --snapshot docs/results/<run> --run-command "snakemake ..."
    thinkprobe summary docs/results/<run> --readme README.md      # the README's results block, regenerated

Nothing is re-estimated here: every cell is read from one of the tables the ``stats`` rules write, and
every row names that table. The paper's column comes from :mod:`.paper`; the checks against the paper and
the identities from :mod:`.claims`. A *snapshot* is a copy of the small tables the summary reads
(:data:`SNAPSHOT_TABLES`, a few hundred KB) with ``run.json`` (commit, date, command); the README's results
block is the summary of a named snapshot, and ``tests/test_results_summary.py`` regenerates it and fails
when the README differs.

Cycle counts from a census stopped at ``stats.cycle_cap`` are lower bounds; they are printed with ``>=``
whenever a trace of that subgraph hit the cap.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..vocabulary import DIMENSIONS
from . import paper
from .claims import checks, identities

SNAPSHOT_TABLES = ("kruskal", "model_vs_domain", "cycles_summary", "length_excluded", "aggregation_robustness",
                   "encoder_sensitivity", "ablation", "agreement")
RUN_FILE = "run.json"
BEGIN = re.compile(r"<!-- results: (?P<dir>\S+) -->\n")
END = "<!-- /results -->"

Row = tuple[str, str, str, str]  # finding, this run, paper, table


def _f(x: Any, nd: int = 3) -> str:
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{float(x):.{nd}f}"


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
    perm = ""
    if "p_perm" in km:
        perm = f", {int((km.p_perm < 0.001).sum())} by permutation p"
    rows.append(("metrics discriminating models at p < 0.001",
                 f"{n_sig} / {len(km)} ({n_bonf} after Bonferroni{perm}); epsilon^2 {_f(km.epsilon2.min())}.."
                 f"{_f(km.epsilon2.max())}", paper.COLUMN["metrics_p001"], "kruskal"))
    top = km.sort_values("epsilon2", ascending=False).head(3)
    corr = "epsilon2_corrected" in top
    rows.append(("largest model effects (epsilon^2" + ("; chance-corrected)" if corr else ")"),
                 ", ".join(f"{r.target} {_f(r.epsilon2)}" + (f" ({_f(r.epsilon2_corrected)})" if corr else "")
                           for r in top.itertuples()), paper.COLUMN["largest_metric"], "kruskal"))
    if "epsilon2_null_mean" in k:
        parts = []
        for g, grp in k.groupby("grouping", sort=False):
            kk = int(grp.k.max())
            parts.append(f"{g} ({kk} groups, {grp.permutation.iloc[0]}): null mean {_f(grp.epsilon2_null_mean.min())}.."
                         f"{_f(grp.epsilon2_null_mean.max())}, 95th pct up to {_f(grp.epsilon2_null_p95.max())}; "
                         f"{int((grp.epsilon2 > grp.epsilon2_null_p95).sum())} / {len(grp)} targets above it")
        b = int(k.B.iloc[0])
        rows.append((f"epsilon^2 expected by chance (permutation null, B = {b:,})", "; ".join(parts),
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
    dom = ", ".join(f"{x.target} {_f(x.epsilon2, 2)}" + (f" (p_perm {x.p_perm:.3g})" if "p_perm" in kd else "")
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
    if "aggregation_robustness" in t:
        r = t["aggregation_robustness"]
        n = int(r.n_models.max()) if len(r) else 0
        rows.append((f"equal vs PCA-weighted model ranking (rho, {n} models)",
                     ", ".join(f"{a} {_f(b, 2)}" for a, b in zip(r.dimension, r.rho)), paper.COLUMN["robustness"],
                     "aggregation_robustness"))
    if "encoder_sensitivity" in t:
        s = t["encoder_sensitivity"]
        s = s[s.kind == "dimension"]
        n = int(s.n_models.max()) if len(s) else 0
        rows.append((f"model ranking under a second encoder (rho, {n} models)",
                     ", ".join(f"{a} {_f(b, 2)}" for a, b in zip(s.target, s.rho)), paper.COLUMN["sensitivity"],
                     "encoder_sensitivity"))
    return rows


def _ablation_rows(t: dict[str, pd.DataFrame]) -> list[Row]:
    if "ablation" not in t:
        return []
    a = t["ablation"].set_index("stage")
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
    return out + ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows]


def markdown(tables: dict[str, pd.DataFrame], run: dict[str, Any] | None = None, source: str = "") -> str:
    """The whole summary: run line, results table, agreement table, checks, identities and notes."""
    lines = []
    if run:
        lines += [f"Run `{run.get('name', '')}`: commit {run.get('commit', '?')}, {run.get('date', '?')}, "
                  f"`{run.get('command', '?')}`; tables in `{source}`. Regenerate this text with "
                  f"`thinkprobe summary {source}`.", ""]
    lines += _table(["finding", "this run", f"paper ({paper.CORPUS})", "table"],
                    [[a, b, c, f"`{d}`"] for a, b, c, d in headline(tables)])
    if "agreement" in tables and len(agreement_means(tables)):
        m = agreement_means(tables)
        lines += ["", "Segmentation agreement with the corpus's LLM step labels (means over the analysed traces; "
                      "`agreement`):", ""]
        lines += _table(["segmentation", "traces analysed", "boundary P", "boundary R", "F1 (+-2)", "Pk",
                         "WindowDiff", "kappa", "segments: labels / ours"],
                        [[s, f"{int(x.n_ok)} / {int(x.n_total)}", _f(x.precision), _f(x.recall), _f(x.f1), _f(x.pk),
                          _f(x.windowdiff), _f(x.kappa), f"{x.n_ref_segments:.1f} / {x.n_hyp_segments:.1f}"]
                         for s, x in m.iterrows()])
    cs = checks(tables)
    if cs:
        n = sum(c.replicates for c in cs)
        lines += ["", f"Checks against the paper (`thinkprobe/stats/claims.py`): a claim replicates when this run "
                      f"answers its question as the paper does. {n} of {len(cs)} replicate.", ""]
        lines += _table(["claim", "paper", "this run", "replicates", "table"],
                        [[c.claim, c.paper, c.here, "yes" if c.replicates else "**no**", f"`{c.table}`"] for c in cs])
    ids = identities(tables)
    if ids:
        lines += ["", "True by construction (verified on this run; not replications):", ""]
        lines += [f"- {i.statement} Here: {i.detail}" + ("." if i.holds else " **VIOLATED: a bug.**") for i in ids]
    return "\n".join(lines) + "\n"


def read_run(stats_dir: str | Path) -> dict[str, Any] | None:
    p = Path(stats_dir) / RUN_FILE
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None


def summary_text(stats_dir: str | Path) -> str:
    """:func:`markdown` of the tables (and ``run.json``, when present) in ``stats_dir``."""
    return markdown(load_tables(stats_dir), read_run(stats_dir), str(stats_dir))


def compact_provenance(block: Any, limit: int = 20) -> Any:
    """``block`` with every ``inputs`` map of more than ``limit`` files replaced by its file count and one
    sha256 over its sorted ``path sha256`` lines: the provenance of a study table names hundreds of unit
    files, which would make a snapshot megabytes; the digest still identifies exactly the same inputs."""
    import hashlib

    if isinstance(block, dict):
        out = {}
        for key, value in block.items():
            if key == "inputs" and isinstance(value, dict) and len(value) > limit:
                lines = "\n".join(f"{p} {h}" for p, h in sorted(value.items()))
                out[key] = {"n_files": len(value), "sha256_of_sorted_lines": hashlib.sha256(lines.encode()).hexdigest()}
            else:
                out[key] = compact_provenance(value, limit)
        return out
    if isinstance(block, list):
        return [compact_provenance(v, limit) for v in block]
    return block


def snapshot(stats_dir: str | Path, dest: str | Path, command: str, name: str | None = None) -> Path:
    """Copy the :data:`SNAPSHOT_TABLES` of ``stats_dir`` to ``dest`` (provenance compacted:
    :func:`compact_provenance`) with ``run.json`` (name, commit, date, command) and ``summary.md``. An
    existing snapshot is never overwritten."""
    from ..outputs import atomic_write_bytes

    src, dest = Path(stats_dir), Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest}: a snapshot is already there (choose a new run name)")
    load_tables(src)  # refuses a folder without the tables
    from ..outputs import read_table_metadata, write_table

    dest.mkdir(parents=True, exist_ok=True)
    for n in SNAPSHOT_TABLES:
        if (src / f"{n}.parquet").exists():
            write_table(dest / f"{n}.parquet", pd.read_parquet(src / f"{n}.parquet"),
                        compact_provenance(read_table_metadata(src / f"{n}.parquet")))
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    run = {"name": name or dest.name, "commit": commit,
           "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "command": command}
    atomic_write_bytes(dest / RUN_FILE, (json.dumps(run, indent=2) + "\n").encode())
    atomic_write_bytes(dest / "summary.md", summary_text(dest).encode())
    return dest


def readme_blocks(text: str) -> list[tuple[str, str]]:
    """``(snapshot folder, block text)`` of every ``<!-- results: DIR -->`` ... ``<!-- /results -->`` block."""
    out = []
    for m in BEGIN.finditer(text):
        end = text.find(END, m.end())
        if end < 0:
            raise ValueError(f"results block for {m.group('dir')} has no closing {END}")
        out.append((m.group("dir"), text[m.end():end]))
    return out


def update_readme(readme: str | Path, root: str | Path = ".") -> int:
    """Rewrite every results block of ``readme`` (and the snapshot's own ``summary.md``) with the summary of
    its snapshot, as the current code renders it; returns the number of blocks."""
    from ..outputs import atomic_write_bytes

    path = Path(readme)
    text = path.read_text(encoding="utf-8")
    blocks = readme_blocks(text)
    for folder, old in blocks:
        new = summary_text_rel(folder, root)
        atomic_write_bytes(Path(root) / folder / "summary.md", new.encode("utf-8"))
        text = text.replace(f"<!-- results: {folder} -->\n{old}{END}", f"<!-- results: {folder} -->\n{new}{END}")
    path.write_text(text, encoding="utf-8")
    return len(blocks)


def summary_text_rel(folder: str, root: str | Path = ".") -> str:
    """:func:`summary_text` of ``root/folder``, naming the folder as written (relative to the repository)."""
    d = Path(root) / folder
    return markdown(load_tables(d), read_run(d), folder)


if __name__ == "__main__":
    print(summary_text(sys.argv[1] if len(sys.argv) > 1 else "results/stats"), end="")
