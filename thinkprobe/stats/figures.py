"""Figures of the study's statistics (paper Figures 2-5, 13-18), written as PNG and PDF.

Readable in print and for colour-blind readers: categorical colours are the Okabe-Ito palette, sequential
maps are viridis/cividis, the diverging map is ColorBrewer's RdBu (colour-blind safe), every heatmap cell
that matters carries its value or significance as text, lines differ by style as well as colour, fonts
are >= 7 pt at the saved size. Each figure prints its provenance in a footer (thinkprobe version, code
hash, input sha256), so a copy that travels without the report can be traced back. Every function takes
tables and writes files; an empty table gives a figure that says so, never a missing file.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from ..vocabulary import DIMENSIONS, METRIC_NAMES

OKABE_ITO = ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#000000", "#F0E442"]
AXIS_LABELS = {"Metacognition": "Metacog."}
DIMENSION_COLOURS = dict(zip(DIMENSIONS, ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00"]))
DIMENSION_OF = {m: d for d, ms in DIMENSIONS.items() for m in ms}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8, "pdf.fonttype": 42})
    return plt


def _save(fig, outputs: Sequence[str], provenance: str) -> None:
    if provenance:
        renderer = fig.canvas.get_renderer()
        box = fig.get_tightbbox(renderer)  # inches
        bottom = box.y0 / fig.get_figheight() if fig.get_figheight() else 0.0
        left = box.x0 / fig.get_figwidth() if fig.get_figwidth() else 0.0
        fig.text(left, bottom - 0.01, provenance, fontsize=5.5, color="#444444", ha="left", va="top")
    for path in outputs:
        fig.savefig(path, dpi=200, bbox_inches="tight")
    _plt().close(fig)


def short_labels(names: Sequence[str]) -> list[str]:
    """Names without their longest common prefix ending at a ``-``/``_``/``/`` (when every name keeps text).

    >>> short_labels(["deepseek-r1-distill-qwen-14b", "deepseek-r1-distill-llama-8b"])
    ['qwen-14b', 'llama-8b']
    """
    names = [str(n) for n in names]
    if len(names) < 2:
        return names
    prefix = names[0]
    for n in names[1:]:
        while not n.startswith(prefix):
            prefix = prefix[:-1]
    cut = max(prefix.rfind(c) for c in "-_/") + 1
    return [n[cut:] for n in names] if cut and all(n[cut:] for n in names) else names


def ellipsis(name, width: int) -> str:
    """``name`` cut to ``width`` characters with a trailing ellipsis when longer.

    >>> ellipsis("Creative Problem Solving", 22), ellipsis("Logic", 22)
    ('Creative Problem Solv…', 'Logic')
    """
    text = str(name)
    return text if len(text) <= width else text[: width - 1] + "…"


def _empty(outputs: Sequence[str], title: str, why: str, provenance: str) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 2))
    ax.axis("off")
    ax.set_title(title)
    ax.text(0.5, 0.5, why, ha="center", va="center", wrap=True)
    _save(fig, outputs, provenance)


def radar_per_model(profiles: pd.DataFrame, outputs: Sequence[str], provenance: str = "") -> None:
    """One 5D radar per model (small multiples on a shared scale: the models' range per axis)."""
    plt = _plt()
    models = profiles[profiles["level"] == "model"] if "level" in profiles else profiles
    dims = [d for d in DIMENSIONS if d in models.columns]
    if models.empty or not dims:
        return _empty(outputs, "5D cognitive profile per model", "no analysed traces", provenance)
    from ..report_figures import radar_positions

    values = models[dims].to_numpy(dtype=float)
    # inner ring = lowest model, outer = highest; an axis where all models are equal (one model included)
    # puts them on the middle ring, so no polygon collapses
    positions = radar_positions(values)
    n = len(models)
    cols = min(n, 4)
    rows = int(np.ceil(n / cols))
    fig = plt.figure(figsize=(2.6 * cols, 2.7 * rows))
    angles = np.linspace(0, 2 * np.pi, len(dims), endpoint=False).tolist()
    for i, ((_, row), vals) in enumerate(zip(models.iterrows(), positions)):
        ax = fig.add_subplot(rows, cols, i + 1, polar=True)
        norm = vals.tolist()
        colour = OKABE_ITO[i % (len(OKABE_ITO) - 1)]  # yellow is left out: too light in print
        ax.plot(angles + angles[:1], norm + norm[:1], color=colour, lw=1.5)
        ax.fill(angles + angles[:1], norm + norm[:1], color=colour, alpha=0.25)
        ax.set_ylim(0, 1)
        ax.set_xticks(angles)
        ax.set_xticklabels([AXIS_LABELS.get(d, d) for d in dims], fontsize=7)
        ax.set_yticks([0.15, 1.0])
        ax.set_yticklabels([])
        label = short_labels(models["model"].tolist())[i]
        ax.set_title(label if len(label) <= 28 else label[:26] + "...", fontsize=8, pad=10)
    fig.suptitle("5D cognitive profile per model (min-max over models per axis: inner ring = lowest model, "
                 "outer = highest)", fontsize=9)
    fig.tight_layout()
    _save(fig, outputs, provenance)


def effect_sizes(kruskal: pd.DataFrame, outputs: Sequence[str], small: float = 0.06, large: float = 0.14,
                 provenance: str = "") -> None:
    """Kruskal-Wallis epsilon^2 per metric (and dimension), one row of panels per grouping (model, domain),
    each bar with its chance level beside it: a grey bar from 0 to the permutation null's 95th percentile with
    a black tick at the null's mean (when ``kruskal`` carries the nulls), so a bar that does not rise above
    its grey neighbour is within chance. The paper's small and large thresholds are drawn as lines."""
    plt = _plt()
    if kruskal.empty:
        return _empty(outputs, "Kruskal-Wallis effect sizes", "no test could be run", provenance)
    groupings = [g for g in ("model", "domain") if g in set(kruskal["grouping"])]
    has_null = "epsilon2_null_p95" in kruskal.columns
    fig, axes = plt.subplots(len(groupings), 2, figsize=(10, 3.3 * len(groupings) + 0.6), squeeze=False,
                             gridspec_kw={"width_ratios": [19, 6]})
    order_of: dict[str, list[str]] = {}
    for row, g in enumerate(groupings):
        for ax, kind, names in ((axes[row][0], "metric", list(METRIC_NAMES)), (axes[row][1], "dimension", list(DIMENSIONS))):
            part = kruskal[(kruskal["kind"] == kind) & (kruskal["grouping"] == g)].set_index("target")
            if kind not in order_of:  # one order for both groupings: the first grouping's effect, descending
                order_of[kind] = sorted([t for t in names if t in part.index],
                                        key=lambda t: -np.nan_to_num(part.loc[t, "epsilon2"], nan=-1))
            order = [t for t in order_of[kind] if t in part.index]
            x = np.arange(len(order))
            vals = part.reindex(order)["epsilon2"].to_numpy(dtype=float)
            width = 0.42 if has_null else 0.8
            offset = -width / 2 if has_null else 0.0
            if g == "model":
                colours = [DIMENSION_COLOURS.get(DIMENSION_OF.get(t, t), "#777777") for t in order]
                ax.bar(x + offset, vals, width, color=colours, edgecolor="black", linewidth=0.4)
            else:
                ax.bar(x + offset, vals, width, color="white", edgecolor="black", hatch="///", linewidth=0.4)
            top = np.nanmax(vals) if len(vals) and np.isfinite(vals).any() else 0.0
            if has_null:
                p95 = part.reindex(order)["epsilon2_null_p95"].to_numpy(dtype=float)
                mean = part.reindex(order)["epsilon2_null_mean"].to_numpy(dtype=float)
                ax.bar(x + width / 2, p95, width, color="#BBBBBB", edgecolor="#555555", linewidth=0.4)
                ax.hlines(mean, x + 0.02, x + width - 0.02, colors="black", linewidth=1.2)
                if np.isfinite(p95).any():
                    top = max(top, float(np.nanmax(p95)))
            for y, ls, lw in ((small, "--", 0.8), (large, ":", 1.0)):
                ax.axhline(y, color="black", ls=ls, lw=lw)
            ax.set_ylim(0, max(top, large) * 1.12 if max(top, large) > 0 else 1.0)
            ax.set_xticks(x)
            ax.set_xticklabels(order, rotation=60 if kind == "metric" else 30, ha="right")
            ax.set_ylabel(f"epsilon^2 by {g}")
            ax.set_title(f"per {kind}, by {g}")
    # the threshold lines and the chance levels are named in the legend, not by labels on the plot
    handles = [plt.Rectangle((0, 0), 1, 1, color=c, ec="black", lw=0.4) for c in DIMENSION_COLOURS.values()]
    labels = [f"{d} (by model)" for d in DIMENSION_COLOURS]
    if "domain" in groupings:
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch="///", lw=0.4))
        labels.append("by domain")
    if has_null:
        handles += [plt.Rectangle((0, 0), 1, 1, facecolor="#BBBBBB", edgecolor="#555555", lw=0.4),
                    plt.Line2D([], [], color="black", lw=1.2)]
        labels += ["chance: null's 95th pct", "chance: null's mean"]
    handles += [plt.Line2D([], [], color="black", ls="--", lw=0.8), plt.Line2D([], [], color="black", ls=":", lw=1.0)]
    labels += [f"small ({small})", f"large ({large})"]
    top = 1.0 - 0.5 / fig.get_figheight()  # room for the title and two legend rows, whatever the height
    fig.legend(handles, labels, fontsize=7, loc="upper center", ncol=6, frameon=False,
               bbox_to_anchor=(0.5, 1.0 - 0.28 / fig.get_figheight()))
    b = int(kruskal["B"].iloc[0]) if has_null and "B" in kruskal else 0
    fig.suptitle("Kruskal-Wallis epsilon^2" + (f" beside its chance level (permutation null, B = {b:,})"
                                              if has_null else ""), fontsize=9, y=0.998)
    fig.tight_layout(rect=(0, 0, 1, top))
    _save(fig, outputs, provenance)


def model_domain_heatmaps(profiles: pd.DataFrame, outputs: Sequence[str], provenance: str = "") -> None:
    """Five panels: mean 5D-CP z-score per model (rows) x domain (columns), one per dimension."""
    plt = _plt()
    traces = profiles[profiles["level"] == "trace"] if "level" in profiles else profiles
    dims = [d for d in DIMENSIONS if d in traces.columns]
    if traces.empty or "domain" not in traces or not dims:
        return _empty(outputs, "Model x domain profile", "no traces with a domain", provenance)
    traces = traces.assign(domain=traces["domain"].astype(str).replace("", "(none)"))
    tables = {d: traces.pivot_table(index="model", columns="domain", values=d, aggfunc="mean") for d in dims}
    lim = max(0.5, float(np.nanmax([np.nanmax(np.abs(t.to_numpy(dtype=float))) for t in tables.values()])))
    n_dom = len(next(iter(tables.values())).columns)
    n_mod = len(next(iter(tables.values())).index)
    fig, axes = plt.subplots(1, len(dims), figsize=(1.2 + len(dims) * (0.9 + 0.3 * n_dom), 1.6 + 0.3 * n_mod),
                             sharey=True, squeeze=False)
    im = None
    cmap = plt.get_cmap("RdBu_r").copy()
    cmap.set_bad("#999999")
    for ax, d in zip(axes[0], dims):
        t = tables[d]
        im = ax.imshow(np.ma.masked_invalid(t.to_numpy(dtype=float)), cmap=cmap, vmin=-lim, vmax=lim, aspect="auto")
        ax.set_xticks(range(len(t.columns)))
        ax.set_xticklabels([ellipsis(c, 22) for c in t.columns], rotation=70, ha="right", fontsize=7)
        ax.set_yticks(range(len(t.index)))
        ax.set_yticklabels([ellipsis(n, 28) for n in short_labels(list(t.index))], fontsize=7)
        ax.set_title(d)
    fig.colorbar(im, ax=axes[0].tolist(), label="mean z-score", shrink=0.8)
    fig.suptitle("Mean 5D-CP z-score per model x domain (blue below, red above the global mean; grey: no trace)",
                 fontsize=9, y=1.06)
    _save(fig, outputs, provenance)


def dunn_heatmap(dunn: pd.DataFrame, outputs: Sequence[str], provenance: str = "") -> None:
    """Model pairs x targets: -log10 of the Bonferroni-adjusted Dunn p, with *** / ** / * / ns overlaid."""
    from .posthoc import significance_stars

    plt = _plt()
    if dunn.empty:
        return _empty(outputs, "Dunn post-hoc tests", "fewer than two models", provenance)
    models = sorted(set(dunn["group_a"].astype(str)) | set(dunn["group_b"].astype(str)))
    labels = short_labels(models)  # the common prefix is dropped, and named in the title
    prefix = models[0][: len(models[0]) - len(labels[0])] if labels != models else ""
    short = dict(zip(models, (ellipsis(n, 24) for n in labels)))
    d = dunn.assign(pair=dunn["group_a"].astype(str).map(short) + " vs " + dunn["group_b"].astype(str).map(short))
    targets = [t for t in list(METRIC_NAMES) + list(DIMENSIONS) if t in set(d["target"])]
    mat = d.pivot_table(index="pair", columns="target", values="p_adj").reindex(columns=targets)
    logp = -np.log10(np.clip(mat.to_numpy(dtype=float), 1e-300, 1.0))
    fig, ax = plt.subplots(figsize=(1.5 + 0.45 * len(targets), 1.2 + 0.32 * len(mat)))
    im = ax.imshow(np.minimum(logp, 10), cmap="viridis", vmin=0, vmax=10, aspect="auto")
    for i in range(mat.shape[0]):
        for j in range(mat.shape[1]):
            p = mat.iat[i, j]
            ax.text(j, i, significance_stars(p), ha="center", va="center", fontsize=6,
                    color="black" if np.minimum(logp[i, j], 10) > 6 else "white")
    ax.set_xticks(range(len(targets)))
    ax.set_xticklabels(targets, rotation=60, ha="right")
    ax.set_yticks(range(len(mat)))
    ax.set_yticklabels(list(mat.index), fontsize=7)
    fig.colorbar(im, ax=ax, label="-log10 p (Bonferroni), capped at 10")
    ax.set_title("Dunn post-hoc tests between models (*** p<0.001, ** p<0.01, * p<0.05)"
                 + (f"\nmodel names without their common prefix {prefix!r}" if prefix else ""))
    _save(fig, outputs, provenance)


def correlation_heatmap(spearman: pd.DataFrame, outputs: Sequence[str], provenance: str = "") -> None:
    """19 x 19 Spearman rho heatmap in Ward order, with the dendrogram above it."""
    from scipy.cluster.hierarchy import dendrogram

    from .correlation import matrix_from_table, ward_linkage

    plt = _plt()
    if spearman.empty:
        return _empty(outputs, "Spearman correlation of the metrics", "no traces", provenance)
    raw = matrix_from_table(spearman, ordered=False)
    mat = matrix_from_table(spearman, ordered=True)
    fig = plt.figure(figsize=(7.5, 8.2))
    ax_d = fig.add_axes([0.12, 0.80, 0.70, 0.12])
    ax = fig.add_axes([0.12, 0.10, 0.70, 0.70])
    ax_c = fig.add_axes([0.84, 0.10, 0.025, 0.70])
    if len(raw) >= 3:
        dendrogram(ward_linkage(raw), ax=ax_d, labels=list(raw.columns), no_labels=True,
                   color_threshold=0, above_threshold_color="black")
        ax_d.set_xlim(0, 10 * len(raw))
    ax_d.axis("off")
    im = ax.imshow(mat.to_numpy(dtype=float), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    for i in range(len(mat)):
        for j in range(len(mat)):
            v = mat.iat[i, j]
            if np.isfinite(v) and i != j:
                ax.text(j, i, "0" if abs(v) < 0.05 else f"{v:.1f}".replace("0.", "."), ha="center", va="center", fontsize=5.5,
                        color="white" if abs(v) > 0.6 else "black")
    ax.set_xticks(range(len(mat)))
    ax.set_xticklabels(list(mat.columns), rotation=90)
    ax.set_yticks(range(len(mat)))
    ax.set_yticklabels(list(mat.index))
    fig.colorbar(im, cax=ax_c, label="Spearman rho")
    ax_d.set_title("Spearman rho between the 19 metrics (Ward clustering on 1 - rho)")
    _save(fig, outputs, provenance)


def cycle_distributions(cycles: pd.DataFrame, summary: pd.DataFrame, outputs: Sequence[str], cap: int,
                        provenance: str = "") -> None:
    """Cycle counts per trace (log), prevalence per model and subgraph, and the cycle-length distribution."""
    from .cycles import _sum_counts

    plt = _plt()
    full = cycles[cycles["subgraph"] == "full"] if not cycles.empty else cycles
    if full.empty:
        return _empty(outputs, "Directed cycles", "no analysed graphs", provenance)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    counts = full["n_cycles"].to_numpy(dtype=float)
    # symlog: 0 has its own bar at 0 (linear up to 1), counts >= 1 on log bins; a trace without a cycle is
    # never drawn where a trace with one cycle would be
    axes[0].set_xscale("symlog", linthresh=1, linscale=0.5)
    zero = int((counts == 0).sum())
    axes[0].bar([0], [zero], width=0.7, color="#dddddd", edgecolor="black", hatch="///", lw=0.3,
                label=f"no cycle ({zero} traces)")
    pos = counts[counts > 0]
    if pos.size:
        bins = np.unique(np.concatenate([[1], np.logspace(0, np.log10(pos.max() + 1), 25)]).round())
        axes[0].hist(pos, bins=np.append(bins - 0.5, bins[-1] + 0.5), color="#0072B2", edgecolor="black", lw=0.3,
                     label=">= 1 cycle")
    med = float(np.median(counts))
    n_capped = int(full["capped"].sum())
    bound = ">= " if n_capped else ""  # a census stopped at the cap counts at least that many: lower bounds
    axes[0].axvline(med, color="black", ls="--", lw=0.8, label=f"median {bound}{med:g}")
    if n_capped:
        axes[0].annotate(f"{n_capped} capped: >= {cap:,}", (cap, 0), xytext=(0, 12),
                         textcoords="offset points", ha="right", fontsize=7,
                         arrowprops={"arrowstyle": "->", "lw": 0.6})
    axes[0].set_xlim(-0.6, None)
    axes[0].xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))  # 0, 1, 10, 100: counts
    axes[0].legend(fontsize=7)
    axes[0].set_title(f"Cycles per trace (median {bound}{med:g}; cap {cap:,}, {n_capped} capped)")
    axes[0].set_xlabel("simple cycles per trace (0, then log scale)")
    axes[0].set_ylabel("traces")
    models = summary[summary["model"] != "(all)"]
    subs = [s for s in ("full", "seq+synt", "elab+back") if s in set(models["subgraph"])]
    names = sorted(models["model"].unique())
    x = np.arange(len(names))
    width = 0.8 / max(len(subs), 1)
    hatches = {"full": "", "seq+synt": "///", "elab+back": "..."}
    for j, s in enumerate(subs):
        vals = models[models["subgraph"] == s].set_index("model").reindex(names)["prevalence"].to_numpy(dtype=float)
        axes[1].bar(x + (j - (len(subs) - 1) / 2) * width, vals, width, color=OKABE_ITO[j + 1], hatch=hatches[s],
                    edgecolor="black", lw=0.3, label=s)
    overall = summary[(summary["model"] == "(all)") & (summary["subgraph"] == "full")]["prevalence"]
    if len(overall):
        axes[1].axhline(float(overall.iloc[0]), color="black", ls="--", lw=0.8)
    axes[1].set_xticks(x)
    axes[1].set_xticklabels(short_labels(names), rotation=45, ha="right", fontsize=7)
    axes[1].set_ylim(0, 1.05)
    axes[1].set_ylabel("share of traces with >= 1 cycle")
    axes[1].set_title("Prevalence per model and subgraph")
    axes[1].legend(fontsize=7)
    hist = _sum_counts(full["length_counts"])
    if hist.sum():
        lengths = np.arange(len(hist))
        axes[2].bar(lengths[1:], hist[1:], color="#009E73", edgecolor="black", lw=0.3)
        axes[2].set_yscale("log")
        from matplotlib.ticker import LogFormatter  # plain counts ("6", not "6 x 10^0") within a decade too

        axes[2].yaxis.set_major_formatter(LogFormatter())
        axes[2].yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.4)))
    axes[2].set_xlabel("cycle length (nodes)")
    axes[2].set_ylabel("cycles")
    axes[2].set_title("Cycle lengths (full graph)")
    fig.tight_layout()
    _save(fig, outputs, provenance)


def _annotated_heatmap(fig, ax, mat: pd.DataFrame, shade: np.ndarray, style: dict[str, Any], fmt: str,
                       fontsize: int, text_colour: Callable[[float], str], rotation: int, label: str,
                       title: str) -> None:
    """A matrix drawn as colours (``shade``, with ``style`` for ``imshow``) with each finite value of ``mat``
    written in its cell (``fmt``, in ``text_colour(value)``), its columns and rows labelled, a colour bar and a
    title: the body the coefficient-of-variation and cosine heatmaps share."""
    im = ax.imshow(shade, **style)
    for i in range(mat.shape[0]):
        for j in range(mat.shape[1]):
            v = mat.iat[i, j]
            if np.isfinite(v):
                ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=fontsize, color=text_colour(v))
    ax.set_xticks(range(mat.shape[1]))
    ax.set_xticklabels(list(mat.columns), rotation=rotation, ha="right")
    ax.set_yticks(range(len(mat)))
    ax.set_yticklabels(list(mat.index))
    fig.colorbar(im, ax=ax, label=label)
    ax.set_title(title)


def cv_heatmap(cv: pd.DataFrame, outputs: Sequence[str], provenance: str = "") -> None:
    """Models x metrics: mean run-to-run coefficient of variation (log(1 + CV) colour scale)."""
    plt = _plt()
    if cv.empty:
        return _empty(outputs, "Run-to-run coefficient of variation",
                      "no model answered a question in two or more runs: no run-to-run CV", provenance)
    mat = cv.pivot_table(index="model", columns="metric", values="cv").reindex(
        columns=[m for m in METRIC_NAMES if m in set(cv["metric"])])
    shade = np.log1p(mat.to_numpy(dtype=float))
    mean_shade = np.nanmean(shade)
    fig, ax = plt.subplots(figsize=(10, 1.3 + 0.4 * len(mat)))
    _annotated_heatmap(fig, ax, mat, shade, dict(cmap="cividis", aspect="auto"), "{:.2f}", 6,
                       lambda v: "black" if np.log1p(v) > mean_shade else "white", 60,
                       "log(1 + CV)", "Mean run-to-run coefficient of variation per model and metric")
    _save(fig, outputs, provenance)


def cosine_heatmap(cosine: pd.DataFrame, outputs: Sequence[str], provenance: str = "") -> None:
    """Models x models: cosine similarity of their mean 5D-CP vectors, annotated."""
    plt = _plt()
    if cosine.empty:
        return _empty(outputs, "Cosine similarity of model profiles", "no models", provenance)
    mat = cosine.pivot(index="model_a", columns="model_b", values="cosine")
    fig, ax = plt.subplots(figsize=(1.8 + 0.7 * len(mat), 1.2 + 0.6 * len(mat)))
    _annotated_heatmap(fig, ax, mat, mat.to_numpy(dtype=float), dict(cmap="RdBu_r", vmin=-1, vmax=1), "{:+.2f}", 7,
                       lambda v: "white" if abs(v) > 0.6 else "black", 45,
                       "cosine", "Cosine similarity between model mean 5D-CP vectors")
    _save(fig, outputs, provenance)


def length_confound_bars(confound: pd.DataFrame, outputs: Sequence[str], provenance: str = "") -> None:
    """Spearman rho of each metric with trace length (AT), lines at |rho| = 0.5 (paper Figure 18)."""
    plt = _plt()
    if confound.empty:
        return _empty(outputs, "Length confound", "no traces", provenance)
    c = confound.sort_values("rho", ascending=False, na_position="last")
    fig, ax = plt.subplots(figsize=(7, 3.4))
    colours = [DIMENSION_COLOURS.get(DIMENSION_OF.get(m, ""), "#777777") for m in c["metric"]]
    ax.bar(range(len(c)), c["rho"].fillna(0), color=colours, edgecolor="black", lw=0.4)
    for y in (0.5, -0.5):
        ax.axhline(y, color="black", ls="--", lw=0.8)
    ax.axhline(0, color="black", lw=0.5)
    ax.set_xticks(range(len(c)))
    ax.set_xticklabels(list(c["metric"]), rotation=60, ha="right")
    ax.set_ylim(-1, 1)
    ax.set_ylabel("Spearman rho with AT (tokens)")
    ax.set_title("Length confound: each metric vs trace length")
    handles = [plt.Rectangle((0, 0), 1, 1, color=col, ec="black", lw=0.4) for col in DIMENSION_COLOURS.values()]
    ax.legend(handles, list(DIMENSION_COLOURS), fontsize=7, ncol=5, loc="lower left")
    _save(fig, outputs, provenance)
