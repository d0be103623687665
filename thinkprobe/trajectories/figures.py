"""Figures of answer-distribution trajectories (paper Figs. 1-4 in spirit; matplotlib, Agg backend).

All colours come from the Okabe-Ito palette (distinguishable under the common colour-vision deficiencies);
categories beyond eight are told apart by hatching as well. Each function takes data, writes one PNG and
returns the path; a provenance line, when given, is printed in the footer, as the project's other figures do.

``trajectory_plot``       stacked p_t over checkpoints (area per label, null in grey), gold marked.
``mechanism_shares``      horizontal stacked bars: share of each mechanism per model.
``group_profiles_plot``   standardized metric profile of each group (high accuracy, shortest CoT, all).
``forest_plot``           matched comparisons: mean standardized change (diamond) with its 95% Student-t
                          interval per metric, one panel per comparison, shared symmetric x-axis.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

OKABE_ITO = ["#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000"]
NULL_COLOUR = "#BBBBBB"
HATCHES = ["", "//", "..", "xx", "\\\\", "++"]

# success mechanisms in blues/greens, failures in oranges/reds, fragile ones in the lighter shades
MECHANISM_COLOURS = {
    "stable_success": "#0072B2", "rescue": "#56B4E9", "detour_success": "#009E73", "fragile_success": "#F0E442",
    "stable_failure": "#D55E00", "escape": "#E69F00", "failed_rescue": "#CC79A7", "fragile_failure": "#000000",
}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _footer(fig, provenance: str) -> None:
    """The provenance line, below everything drawn (tick labels included) so that it overlaps nothing."""
    if provenance:
        box = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
        fig.text(box.x0 / (fig.get_figwidth() or 1.0), box.y0 / (fig.get_figheight() or 1.0) - 0.01, provenance,
                 fontsize=6, color="#555555", ha="left", va="top")


def _save(fig, out_path: str, provenance: str) -> str:
    _footer(fig, provenance)
    fig.savefig(out_path, dpi=120, bbox_inches="tight")
    _pyplot().close(fig)
    return out_path


def trajectory_plot(states: Sequence[Mapping[Any, float]], positions: Sequence[float], out_path: str,
                    gold: str | None = None, title: str = "", provenance: str = "", max_labels: int = 8) -> str:
    """Stacked area of p_t(a) over the checkpoint positions (prefix tokens); the gold label is drawn on
    top with a thick outline and named in the legend; labels beyond ``max_labels - 1`` by total mass are
    pooled as "other"; the null label is grey."""
    plt = _pyplot()
    mass: dict[Any, float] = {}
    for p in states:
        for a, v in p.items():
            mass[a] = mass.get(a, 0.0) + v
    named = [a for a in sorted(mass, key=lambda a: (-mass[a], str(a))) if a is not None]
    if gold is not None and gold in named:
        named.remove(gold)
        named.insert(0, gold)
    keep = named[:max_labels - 1] if len(named) > max_labels - 1 else named
    series = {a: [p.get(a, 0.0) for p in states] for a in keep}
    other = [sum(v for a, v in p.items() if a is not None and a not in keep) for p in states]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    labels, colours, data = [], [], []
    for i, a in enumerate(keep):
        labels.append(f"{a} (gold)" if a == gold else str(a))
        colours.append(OKABE_ITO[i % len(OKABE_ITO)])
        data.append(series[a])
    if any(other):
        labels.append("other")
        colours.append("#777777")
        data.append(other)
    nulls = [p.get(None, 0.0) for p in states]
    if any(nulls):
        labels.append("null")
        colours.append(NULL_COLOUR)
        data.append(nulls)
    x = list(positions)
    if data:
        polys = ax.stackplot(x, np.asarray(data), labels=labels, colors=colours, alpha=0.9)
        if gold is not None and gold in keep:
            polys[0].set_edgecolor("black")
            polys[0].set_linewidth(2.0)
            polys[0].set_hatch("//")
    ax.set_xlim(min(x), max(x) if max(x) > min(x) else min(x) + 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("reasoning tokens in the prefix")
    ax.set_ylabel("p_t(answer)")
    ax.set_title(title or "answer-distribution trajectory")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return _save(fig, out_path, provenance)


def mechanism_shares(traces: pd.DataFrame, out_path: str, by: str = "model", provenance: str = "") -> str:
    """Share of each mechanism per ``by`` value (traces with a mechanism), successes then failures."""
    from thinkprobe.trajectories.mechanisms import MECHANISMS

    plt = _pyplot()
    frame = traces[traces["mechanism"].notna()]
    shares = pd.crosstab(frame[by], frame["mechanism"], normalize="index").reindex(columns=list(MECHANISMS),
                                                                                   fill_value=0.0)
    fig, ax = plt.subplots(figsize=(8, 0.8 + 0.45 * max(len(shares), 1)))
    left = np.zeros(len(shares))
    for name in MECHANISMS:
        values = shares[name].to_numpy(dtype=float) if len(shares) else np.zeros(0)
        ax.barh(list(map(str, shares.index)), values, left=left, color=MECHANISM_COLOURS[name], label=name,
                edgecolor="white", hatch="//" if name.startswith("fragile") else "")
        left = left + values
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of traces")
    ax.set_title("success and failure mechanisms")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return _save(fig, out_path, provenance)


def group_profiles_plot(profiles: pd.DataFrame, metrics: Sequence[str], out_path: str,
                        provenance: str = "") -> str:
    """Grouped bars of the standardized metric means per group; raw accuracy and CoT length in the legend."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.5))
    n = max(len(profiles), 1)
    width = 0.8 / n
    x = np.arange(len(metrics))
    for i, (_, row) in enumerate(profiles.iterrows()):
        label = f"{row['group']} (acc {row['accuracy']:.2f}, CoT {row['cot_tokens']:.0f} tok)"
        ax.bar(x + (i - (n - 1) / 2) * width, [row[m] for m in metrics], width, label=label,
               color=OKABE_ITO[i % len(OKABE_ITO)], hatch=HATCHES[i % len(HATCHES)], edgecolor="white")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels(metrics, rotation=30, ha="right")
    ax.set_ylabel("mean within-task z-score")
    ax.set_title("dynamical profiles of model-task groups")
    ax.legend(fontsize=8)
    return _save(fig, out_path, provenance)


def forest_plot(summary: pd.DataFrame, out_path: str, provenance: str = "") -> str:
    """One panel per comparison: diamonds at the mean standardized change, bars = the t interval; the
    panels share one symmetric x-axis."""
    plt = _pyplot()
    comparisons = list(dict.fromkeys(summary["comparison"])) or ["(none)"]
    fig, axes = plt.subplots(1, len(comparisons), figsize=(3.6 * len(comparisons), 3.5), sharey=True,
                             squeeze=False)
    bound = np.nanmax(np.abs(summary[["mean", "ci_low", "ci_high"]].to_numpy(dtype=float))) if len(summary) else 1
    bound = 1.0 if not np.isfinite(bound) or bound == 0 else bound * 1.1
    metrics = list(dict.fromkeys(summary["metric"]))
    for ax, name in zip(axes[0], comparisons):
        part = summary[summary["comparison"] == name].set_index("metric").reindex(metrics)
        y = np.arange(len(metrics))
        mean = part["mean"].to_numpy(dtype=float)
        low = part["ci_low"].to_numpy(dtype=float)
        high = part["ci_high"].to_numpy(dtype=float)
        ok = np.isfinite(low) & np.isfinite(high)
        ax.errorbar(mean[ok], y[ok], xerr=[mean[ok] - low[ok], high[ok] - mean[ok]], fmt="none",
                    ecolor=OKABE_ITO[4], capsize=3)
        ax.scatter(mean, y, marker="D", color=OKABE_ITO[5], zorder=3)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_xlim(-bound, bound)
        n = part["n"].max() if "n" in part and len(part) else 0
        ax.set_title(f"{name} (n = {int(n) if np.isfinite(n) else 0})", fontsize=9)
        ax.set_yticks(y)
        ax.set_yticklabels(metrics)
        ax.set_xlabel("standardized change")
    return _save(fig, out_path, provenance)
