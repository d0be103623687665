"""Generated blocks of the Markdown pages: every number the README and the results pages print about a study.

A block is delimited by ``<!-- results:KIND DIR -->`` and ``<!-- /results -->`` (``<!-- results: DIR -->`` is
the full summary); ``DIR`` is a snapshot folder (:mod:`thinkprobe.study.snapshot`) and ``KIND`` one of :data:`BLOCKS`:

- ``summary``: the full results (:func:`.results_text.markdown`);
- ``headline``: a few lines for the README: the replication counts and a link to the results page;
- ``ablation-sets``: the layer ablation of the corpus sets beside the paper's Table 6, with what the numbers
  show and, marked as hypotheses, what might explain a difference;
- ``reading``: our reading of the corpus study's results, numbers from the tables, explanations marked as
  hypotheses unless a table of the snapshot tests them;
- ``statistics``: the constants of the statistics and what they imply (Monte Carlo error, chance levels);
- ``retake``: how the snapshot is re-taken, how long it took, and how close a rerun must come.

``thinkprobe summary --pages`` rewrites every block of :data:`DEFAULT_PAGES`; ``tests/test_results_summary.py``
regenerates them and fails when a page differs, so a number changed by hand fails a test. Prose outside the
blocks holds no number (:func:`unexplained_numbers`, also tested) except section, table and figure references.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from . import paper
from .register import REGISTER

# the committed snapshot the pages' blocks are generated from (taken by thinkprobe.study.snapshot)
DEFAULT_SNAPSHOT = "docs/results/corpus-study"
# corpus sets whose layer ablation the results page sets beside the paper's Table 6 (`thinkprobe ablate`):
# name, what they are, the file relative to the corpus folder, and whether the whole text is analysed
ABLATION_SETS = (
    ("A", "R1-distill-Llama-8B reasoning traces",
     "steering-thinking-llms/compare-base-reasoning/results/vars/reasoning_comparison_deepseek-r1-distill-llama-8b.json",
     False),
    ("B", "MMLU reasoning traces of DeepSeek-R1, QwQ-32B and Gemini-thinking",
     "thought-branches/faithfulness/good_problems/Professor_itc_failure_threshold0.3.json", False),
    ("C", "Qwen2.5-32B-Instruct step-by-step answers, a control formatted like the paper's models' output "
          "(markdown headers, bold lines, lists)",
     "steering-thinking-llms/compare-base-reasoning/results/vars/reasoning_comparison_qwen2.5-32b-instruct.json",
     True),
)
DEFAULT_PAGES = ("README.md", "docs/results.md", "docs/statistics.md")
RESULTS_PAGE = "docs/results.md"  # the page of every result; the headline elsewhere links to it
BEGIN = re.compile(r"<!-- results(?::(?P<kind>[a-z][a-z-]*))?:? (?P<dir>\S+) -->\n")
END = "<!-- /results -->"


def _f(x: Any, nd: int = 3) -> str:
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{float(x):.{nd}f}"


def _pct(x: Any, nd: int = 0) -> str:
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{100 * float(x):.{nd}f}%"


def _snapshot(folder: Path):
    from .results_text import load_tables, read_run

    return load_tables(folder), read_run(folder) or {}


# ------------------------------------------------------------------------------------------------ blocks

def summary_block(folder: Path, shown: str) -> str:
    from .results_text import markdown

    tables, run = _snapshot(folder)
    return markdown(tables, run or None, shown)


def headline_block(folder: Path, shown: str, page: str = "README.md") -> str:
    """The README's few lines: the replication counts, and (on any page but the results page itself) a link to
    it, relative to ``page`` (the repository-relative path of the page that holds the block)."""
    from .claims import FAILS, INCONCLUSIVE, REPLICATES, counts

    tables, run = _snapshot(folder)
    m = pd.read_parquet(folder / "metrics.parquet") if (folder / "metrics.parquet").exists() else None
    size = (f"{len(m)} traces of {m['model'].nunique()} models on {m['question_id'].nunique()} prompts"
            if m is not None else "the study")
    c = counts(tables["claims"]) if "claims" in tables else None
    lines = [f"Corpus study: {size} (snapshot `{shown}`, commit {run.get('commit', '?')}, {run.get('date', '?')})."]
    if c and "register" not in tables["claims"]:
        from .results_text import PREDATES

        lines += ["", PREDATES, ""]
    elif c:
        claims = tables["claims"]
        rep = claims[claims.kind == "replication"]
        reg = run.get("register") or {}
        n_ok = c["identities"] - c["identities_violated"]
        lines[0] += (f" The claim register (`{REGISTER}`{', commit ' + reg['commit'] if reg.get('commit') else ''}) "
                     f"quotes {int(claims.register.astype(str).ne('').sum())} "
                     f"sentences of the paper whole; {c['replications']} can be tested here: **{c[REPLICATES]} "
                     f"{'replicates' if c[REPLICATES] == 1 else 'replicate'}, {c[FAILS]} "
                     f"{'does' if c[FAILS] == 1 else 'do'} not, {c[INCONCLUSIVE]} "
                     f"{'is' if c[INCONCLUSIVE] == 1 else 'are'} inconclusive** (every criterion from the sentence's own "
                     f"words, BCa intervals over prompts); {c['untestable']} are not testable on this corpus; {n_ok} of "
                     f"{c['identities']} identities of our reading hold (checks of the code, not counted); "
                     f"{c['not_comparable']} findings are not comparable.")
        lines.append("")
        for verdict in (REPLICATES, FAILS, INCONCLUSIVE):
            keys = rep[rep.verdict == verdict].key.tolist()
            if keys:
                lines.append(f"- {verdict} ({len(keys)}): " + ", ".join(f"`{k}`" for k in keys))
        lines.append("")
    if Path(page).as_posix() != RESULTS_PAGE:
        link = os.path.relpath(RESULTS_PAGE, Path(page).parent.as_posix() or ".")
        lines.append("Every claim with its criterion, the paper's sentence and this run's interval, the effect sizes "
                     f"against chance and the layer ablation beside Table 6: [{RESULTS_PAGE}]({link}).")
    elif lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


SET_ROWS = ("typed", "eer_chr", "bf", "mec", "gd", "rvd", "br", "cbc", "tus", "branch", "convergence", "soft",
            "backtrack")


def ablation_sets(folder: Path) -> dict[str, pd.DataFrame]:
    """The ``ablate-<set>.parquet`` tables of a snapshot, by set name, indexed by layer setting."""
    return {p.stem.removeprefix("ablate-"): pd.read_parquet(p).set_index("layers")
            for p in sorted(folder.glob("ablate-*.parquet"))}


def ablation_sets_block(folder: Path, shown: str) -> str:

    sets = ablation_sets(folder)
    if not sets:
        return "(no ablation sets in this snapshot)\n"
    names = list(sets)
    what = {name: desc for name, desc, _, _ in ABLATION_SETS}

    def v(s: str, layers: str, col: str) -> float:
        t = sets[s]
        return float(t.loc[layers, col]) if layers in t.index and col in t.columns else float("nan")

    def cells(fn: Callable[[str], str]) -> list[str]:
        return [fn(s) for s in names]

    a = paper.ABLATION
    sh = paper.ABLATION_SHARES
    rows = [
        ("typed-edge metrics BF, BR, CBC, RvD (l1)", "0",
         cells(lambda s: _f(max(v(s, "l1", m) for m in ("BF", "BR", "CBC", "RvD")), 2))),
        ("EER, CHR (l1)", "non-zero", cells(lambda s: f"{_f(v(s, 'l1', 'EER'), 2)}, {_f(v(s, 'l1', 'CHR'), 2)}")),
        ("BF (l3)", _f(a["BF"]["l3"], 2), cells(lambda s: _f(v(s, "l3", "BF"), 2))),
        ("MEC (l3)", _f(a["MEC"]["l3"], 2), cells(lambda s: _f(v(s, "l3", "MEC"), 2))),
        ("GD (l3 / l4 / full)", f"{_f(a['GD']['l3'], 2)} / - / {_f(a['GD']['full'], 2)} (its maximum)",
         cells(lambda s: " / ".join(_f(v(s, st, "GD"), 3) for st in ("l3", "l4", "full")))),
        ("RvD (l3 / l4 / full)", f"{_f(a['RvD']['l3'], 0)} / {_f(a['RvD']['l4'], 2)} / -",
         cells(lambda s: " / ".join(_f(v(s, st, "RvD"), 2) for st in ("l3", "l4", "full")))),
        ("BR (l3 / l4 / full)", "0 / low / -",
         cells(lambda s: " / ".join(_f(v(s, st, "BR"), 2) for st in ("l3", "l4", "full")))),
        ("CBC (l4 / full)", f"{_f(a['CBC']['l4'], 2)} / {_f(a['CBC']['full'], 2)}",
         cells(lambda s: " / ".join(_f(v(s, st, "CBC"), 2) for st in ("l4", "full")))),
        ("TUs per trace (l4 / full)", f"- / {paper.TUS_PER_TRACE:g} (App. H)",
         cells(lambda s: " / ".join(_f(v(s, st, "tus_per_trace"), 1) for st in ("l4", "full")))),
        ("boundaries: branch (l1 / l3 / full)", f"- / - / {_pct(sh['branch'])}",
         cells(lambda s: " / ".join(_pct(v(s, st, "class_branch"), 1) for st in ("l1", "l3", "full")))),
        ("convergence (full)", _pct(sh["convergence"]), cells(lambda s: _pct(v(s, "full", "class_convergence"), 1))),
        ("soft, opened by layer 2 (full)", f'{_pct(sh["soft"])} ("NONE")',
         cells(lambda s: _pct(v(s, "full", "class_soft"), 1))),
        ("backtrack (full)", _pct(sh["backtrack"], 1), cells(lambda s: _pct(v(s, "full", "class_backtrack"), 1))),
    ]
    n = {s: int(sets[s]["n_traces"].max()) for s in names}
    lines = [f"Sets (`thinkprobe ablate`, tables `{shown}/ablate-<set>.parquet`): "
             + "; ".join(f"{s}: {n[s]} {what.get(s, '')}" for s in names) + ".", ""]
    lines += ["| metric (layers) | paper (Table 6, N = " + str(paper.ABLATION_N) + ") | "
              + " | ".join(f"ours {s}" for s in names) + " |", "|---|---|" + "---|" * len(names)]
    lines += [f"| {label} | {pap} | " + " | ".join(c) + " |" for label, pap, c in rows]
    # what the table shows, in numbers; explanations are hypotheses (no table here tests them)
    bf = ", ".join(f"{s} {_f(v(s, 'l3', 'BF'), 2)}" for s in names)
    br1 = ", ".join(f"{s} {_pct(v(s, 'l1', 'class_branch'), 1)}" for s in names)
    brf = ", ".join(f"{s} {_pct(v(s, 'full', 'class_branch'), 1)}" for s in names)
    bt = ", ".join(f"{s} {_pct(v(s, 'full', 'class_backtrack'), 1)}" for s in names)
    soft = ", ".join(f"{s} {_pct(v(s, 'full', 'class_soft'), 1)}" for s in names)
    def gd_gap(s: str) -> str:
        g = sorted(((v(s, st, "GD"), st) for st in ("l3", "l4", "full")), reverse=True)
        return f"{s} at {g[0][1]} by {g[0][0] - g[1][0]:.3f}"

    gd_peak = ", ".join(gd_gap(s) for s in names)
    tus = ", ".join(f"{s} {_f(v(s, 'full', 'tus_per_trace'), 1)}" for s in names)
    lines += [
        "",
        "What the table shows:",
        "",
        "* The order in which metrics switch on is the paper's: typed-edge metrics are 0 at l1, BF, MEC and GD "
        "appear at l3, RvD, BR and CBC only at l4. These are identities of our reading (the checks against the "
        "paper list them), not findings.",
        f"* BF at l3: {bf} (paper {_f(a['BF']['l3'], 2)}).",
        f"* Branch share of the boundaries: at l1 (markdown headers and bold lines) {br1}; in full {brf} "
        f"(App. H.4: {_pct(sh['branch'])}). By construction layer 3 makes at most about a quarter of the transitions "
        "cosine branches (those below the trace's 25th percentile), so a larger share needs layer 1's branches.",
        f"* Backtrack share in full: {bt} (App. H.4: {_pct(sh['backtrack'], 1)}). Soft boundaries opened by layer 2: "
        f"{soft} (App. H.4: {_pct(sh['soft'])}).",
        f"* GD's largest mean of l3 / l4 / full: {gd_peak} (over the next largest). These are means without an "
        "interval (the sets keep no per-trace table), so no stage is called GD's maximum here; the corpus study's "
        "per-trace ablation tests the paper's \"Graph Density reaches its maximum\" with an interval (checks "
        f"against the paper). TUs per trace in full: {tus} (App. H: {paper.TUS_PER_TRACE:g}).",
        "",
        "Hypotheses (not tested by a table of the snapshot):",
        "",
        "* The branch share is low on the reasoning traces because they carry no markdown structure for layer 1 "
        "to find, while the formatted control does.",
        "* The backtrack share is a property of the traces rather than of the rule: R1-style traces open many "
        "paragraphs with \"Wait\", which section 3.4 itself lists as a backtrack cue.",
        "* Layer 2 opens few boundaries where paragraphs are already short, since a valley that falls on a "
        "paragraph break adds no boundary.",
        "* GD, a density (its normaliser grows with the square of the TUs), falls when layer 2 adds TUs unless the "
        "new TUs bring long-range edges; the paper's GD below its BF at l3 says its normaliser is quadratic too.",
        "* MEC and the TU counts are lower than the paper's because these traces are shorter than its open-ended ones.",
    ]
    return "\n".join(lines) + "\n"


def reading_block(folder: Path, shown: str) -> str:
    from .results_text import chance_count

    tables, _ = _snapshot(folder)
    k = tables["kruskal"]
    km = k[(k.grouping == "model")]
    kd = k[(k.grouping == "domain")]
    out = []
    if len(km) and "epsilon2_null_p95" in k:
        top = km.sort_values("epsilon2", ascending=False).iloc[0]
        above_m = int((km.epsilon2 > km.epsilon2_null_p95).sum())
        fr = km[km.kind == "metric"]
        n_fr = int((np.minimum(1, fr.p_friedman * len(fr)) < 0.001).sum()) if "p_friedman" in fr else 0
        out.append(
            f"On this corpus model identity hardly separates the traces: the largest model epsilon^2 is "
            f"{_f(top.epsilon2)} ({top.target}), {chance_count(tables, 'model', above_m, len(km)).replace('it (', 'their null (')}, "
            f"and the blocked test finds {n_fr} of {len(fr)} metrics at the paper's threshold (p < 0.001 after "
            "Bonferroni).")
    if len(kd) and "epsilon2_null_p95" in k:
        topd = kd.sort_values("epsilon2", ascending=False).iloc[0]
        above_d = int((kd.epsilon2 > kd.epsilon2_null_p95).sum())
        out.append(
            f"The prompt's domain separates them more, with whole prompts permuted: "
            f"{chance_count(tables, 'domain', above_d, len(kd)).replace('it (', 'their null (')}, the largest "
            f"{topd.target} ({_f(topd.epsilon2)}).")
    out.append("Hypothesis (not tested by a table of the snapshot): the five models are distillations of one "
               "teacher (DeepSeek-R1) and share its reasoning style, unlike the paper's seven models from different "
               "families; the prompts mix closed problems with open-ended ones, which the paper excluded by design, "
               "so domain may largely separate closed from open problems.")
    if "aggregation_robustness" in tables and "claims" in tables:
        import json

        r = tables["aggregation_robustness"]
        c = tables["claims"].set_index("key")
        if "s7_rankings_invariant" in c.index:
            x = next((y for y in json.loads(c.loc["s7_rankings_invariant", "criteria"]) if "estimate" in y), None)
            if x is not None:
                out.append(f"The model rankings the robustness checks compare ({int(r.n_models.max())} models) have wide "
                           f"intervals: the smallest equal-vs-PCA rho of Breadth, Metacognition and Efficiency is "
                           f"{_f(x['estimate'], 2)}, BCa 95% [{_f(x['ci_low'], 2)}, {_f(x['ci_high'], 2)}] over prompts "
                           "(Depth, two metrics, is an identity there: rho = 1 by construction).")
    if "cycles_summary" in tables and "ablation" in tables:
        cs = tables["cycles_summary"]
        allc = cs[cs.model == "(all)"].set_index("subgraph")
        ab = tables["ablation"].set_index("layers")
        if "full" in allc.index and "full" in ab.index:
            out.append(f"Fewer traces have a cycle than in the paper ({_pct(allc.loc['full', 'prevalence'], 1)} against "
                       f"{_pct(paper.CYCLE_PREVALENCE['full'], 1)}). Hypothesis: these graphs are smaller (ATU in full "
                       f"{_f(ab.loc['full', 'ATU'], 1)} against App. H's {paper.TUS_PER_TRACE:g} TUs) and hold fewer "
                       "SYNT arcs; the full graph's other cycles close through BACK and CRIT arcs, which the seq+synt "
                       "decomposition leaves out.")
    m = pd.read_parquet(folder / "metrics.parquet") if (folder / "metrics.parquet").exists() else None
    if m is not None and "run" in m:
        runs = int(m.groupby(["model", "question_id"]).size().max())
        if runs < 2:
            out.append("Each model has one run per prompt, so run-to-run variation cannot be estimated here.")
    out.append(f"The report (`snakemake --configfile config/corpus-study.yaml --report report.html`) holds every "
               "table and figure of the run.")
    return " ".join(out) + "\n"


def statistics_block(folder: Path, shown: str) -> str:
    from ..config import load_schema
    from .multiplicity import expected_exceedances
    from .permutation import mc_standard_error, min_permutations

    props = load_schema(Path(__file__).resolve().parents[2] / "config" / "schema.yaml")["properties"]["stats"]["properties"]
    d = {k: props[k]["default"] for k in ("permutations", "permutation_mcse_max", "permutation_seed", "bootstrap",
                                          "bootstrap_seed", "interval_level", "alpha")}
    b = d["permutations"]
    tables, _ = _snapshot(folder)
    k = tables["kruskal"]
    rows = [
        ("`stats.permutations`", f"{b:,}", f"smallest permutation p 1 / (B + 1) = {1 / (b + 1):.1e}; Monte Carlo "
                                           f"SE at p = 0.05: {float(mc_standard_error(0.05, b)):.4f}"),
        ("`stats.permutation_mcse_max`", f"{d['permutation_mcse_max']:g}",
         f"B >= 1 / (4 bound^2) = {min_permutations(d['permutation_mcse_max']):,}, checked with the config"),
        ("`stats.permutation_seed`", str(d["permutation_seed"]), "the same shufflings for every target of a grouping"),
        ("`stats.bootstrap`", f"{d['bootstrap']:,}", "prompt resamples behind each check's interval"),
        ("`stats.bootstrap_seed`", str(d["bootstrap_seed"]), "a rerun gives the same intervals"),
        ("`stats.interval_level`", f"{d['interval_level']:g}", "coverage of the checks' BCa intervals over prompts"),
        ("`stats.alpha`", f"{d['alpha']:g}", "family-wise level of the Holm counts, within a family and over "
                                            "every p-value of the results page"),
    ]
    lines = ["| key | default | what it implies |", "|---|---|---|"] + [f"| {a} | {b_} | {c} |" for a, b_, c in rows]
    described = [(k, v) for k, v in props.items() if k not in d]
    lines += ["", "The other keys of `stats:` (config/schema.yaml; each reaches its rules as a param):", "",
              "| key | default | meaning |", "|---|---|---|"]
    lines += [f"| `stats.{key}` | `{_yaml(v.get('default'))}` | {' '.join(str(v.get('description', '')).split())} |"
              for key, v in described]
    chance = []
    for g, grp in k.groupby("grouping", sort=False):
        n, kk = int(grp.n.max()), int(grp.k.max())
        chance.append(f"{g}: {kk} groups, n = {n}: (k - 1) / (n - 1) = {(kk - 1) / (n - 1):.3f}"
                      + (f" (its permutation null's mean: {_f(grp.epsilon2_null_mean.min())}.."
                         f"{_f(grp.epsilon2_null_mean.max())})" if "epsilon2_null_mean" in grp else ""))
    fam = k.groupby(["grouping", "kind"]).size()
    lines += ["", f"Chance level of epsilon^2 in the snapshot `{shown}`: " + "; ".join(chance) + ".",
              "Families and the exceedances expected by chance on average (5% of each family above its null's 95th "
              "percentile; the joint null of the claims table gives the spread of the count): " + "; ".join(f"{g} x {kind}s: {int(c)} targets, {expected_exceedances(int(c)):.2f} "
                                          "expected" for (g, kind), c in fam.items()) + "."]
    return "\n".join(lines) + "\n"


def _yaml(value: Any) -> str:
    import json

    return json.dumps(value) if not isinstance(value, str) else (value or '""')


def retake_block(folder: Path, shown: str) -> str:

    _, run = _snapshot(folder)
    t = run.get("timings") or {}
    sets = t.get("ablation_sets_s") or {}
    lines = [f"Snapshot `{shown}`: commit {run.get('commit', '?')}, {run.get('date', '?')}, `{run.get('command', '?')}`."]
    if t:
        lines.append(f"Its re-take took {t.get('study_s', 'n/a')} s for the study"
                     + (f" and {sum(sets.values()):.0f} s for the ablation sets ("
                        + ", ".join(f"{k} {v} s" for k, v in sets.items()) + ")" if sets else "")
                     + f", at load average {run.get('load_average', '?')} on the machine it ran on.")
    lines.append(f"Re-take: `thinkprobe summary --retake {DEFAULT_SNAPSHOT} --corpus CORPUS_DIR`.")
    return "\n".join(lines) + "\n"


BLOCKS: dict[str, Callable[[Path, str], str]] = {
    "summary": summary_block, "headline": headline_block, "ablation-sets": ablation_sets_block,
    "reading": reading_block, "statistics": statistics_block, "retake": retake_block}


# ------------------------------------------------------------------------------------------------- pages

def blocks(text: str) -> list[tuple[str, str, str, int, int]]:
    """``(kind, folder, body, start, end)`` of every generated block of ``text`` (``end``: after the marker)."""
    out = []
    for m in BEGIN.finditer(text):
        end = text.find(END, m.end())
        if end < 0:
            raise ValueError(f"results block {m.group(0).strip()} has no closing {END}")
        kind = m.group("kind") or "summary"
        if kind not in BLOCKS:
            raise ValueError(f"unknown results block kind {kind!r} (one of {', '.join(BLOCKS)})")
        out.append((kind, m.group("dir"), text[m.end():end], m.start(), end + len(END)))
    return out


def render(kind: str, folder: str, root: str | Path = ".", page: str = "README.md") -> str:
    """The text of a block of ``kind`` for the snapshot ``folder`` (relative to ``root``, shown as written), as
    it stands on ``page`` (links are relative to it)."""
    if kind == "headline":
        return headline_block(Path(root) / folder, folder, page)
    return BLOCKS[kind](Path(root) / folder, folder)


def regenerate(text: str, root: str | Path = ".", page: str = "README.md") -> str:
    """``text`` (the page ``page``) with every generated block rewritten from its snapshot."""
    out, last = [], 0
    for kind, folder, body, start, end in blocks(text):
        head = text[start:text.index("\n", start) + 1]
        out += [text[last:start], head, render(kind, folder, root, page), END]
        last = end
    out.append(text[last:])
    return "".join(out)


def update_pages(pages: tuple[str, ...] = DEFAULT_PAGES, root: str | Path = ".") -> int:
    """Rewrite every generated block of ``pages`` (and each snapshot's ``summary.md``); returns the count."""
    from ..outputs import atomic_write_text

    n = 0
    for page in pages:
        path = Path(root) / page
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        found = blocks(text)
        for kind, folder, *_ in found:
            if kind == "summary":
                atomic_write_text(Path(root) / folder / "summary.md", render("summary", folder, root))
        new = regenerate(text, root, page)
        if new != text:
            atomic_write_text(path, new)
        n += len(found)
    return n


# references to the paper and names that hold digits (R1, L6-v2, Qwen2.5, 5D-CP, l3) are not numbers of a result
_REFERENCE = re.compile(r"(§\s?|\b(Tables?|Figures?|Figs?\.?|App\.|Appendix|Appendices|[Ss]ections?|Algorithm|"
                        r"[Ee]q\.|[Ii]ssue|[Ll]ayers?)\s)[A-Z]?\.?\d+([.-]\d+)*((\s?(-|and|,)\s?)[A-Z]?\.?\d+([.-]\d+)*)*")
_NAME = re.compile(r"\b[A-Za-z][\w.+-]*\d[\w.+-]*|\b5D-CP\b|\b\d+(st|nd|rd|th)\b|\^\d")


def unexplained_numbers(text: str) -> list[str]:
    """Lines of ``text`` that print a number outside generated blocks, code, links and references to the paper
    (a number of a result must come from a generated block; names such as R1 or L6-v2 are not numbers)."""
    kept, pos = [], 0
    for *_, s, e in blocks(text):
        kept.append(text[pos:s])
        pos = e
    kept.append(text[pos:])
    prose = re.sub(r"```.*?```", "", "".join(kept), flags=re.S)
    bad = []
    for line in prose.splitlines():
        stripped = re.sub(r"`[^`]*`", "", line)
        stripped = re.sub(r"\]\([^)]*\)", "]", stripped)  # link targets
        stripped = re.sub(r"<!--.*?-->", "", stripped)
        stripped = _REFERENCE.sub("", stripped)
        stripped = _NAME.sub("", stripped)
        if re.search(r"\d", stripped):
            bad.append(line)
    return bad
