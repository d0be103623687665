"""Figures of the report: the 5D cognitive radar per model and the per-model metric z-score heatmap.

Each figure carries its own provenance in a footer (thinkprobe version, code hash, input sha256), so a
copy that travels without the report can still be traced back.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .vocabulary import DIMENSIONS, METRIC_NAMES


def _footer(fig, provenance: str) -> None:
    """The provenance line, placed below everything already drawn (tick labels included), so that it never
    overlaps them; ``bbox_inches="tight"`` then keeps it in the saved image."""
    box = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
    height = fig.get_figheight() or 1.0
    fig.text(box.x0 / (fig.get_figwidth() or 1.0), box.y0 / height - 0.01, provenance, fontsize=6,
             color="#555555", ha="left", va="top")


def radar_positions(values: np.ndarray, inner: float = 0.15) -> np.ndarray:
    """Min-max positions per axis (paper Figure 2) on ``[inner, 1]``: the lowest model on an axis sits on
    the inner ring, not at the centre, and an axis on which every model scores the same puts them all on
    the middle ring, so no model's polygon collapses to a point or a line.

    >>> radar_positions(np.array([[0.0, 2.0], [1.0, 2.0]])).round(3).tolist()
    [[0.15, 0.575], [1.0, 0.575]]
    """
    lo, hi = np.nanmin(values, axis=0), np.nanmax(values, axis=0)
    flat = ~(hi - lo > 0)
    span = np.where(flat, 1.0, hi - lo)
    pos = inner + (1 - inner) * (values - lo) / span
    pos[:, flat] = (1 + inner) / 2
    return pos


def radar(profiles: pd.DataFrame, out_path: str, provenance: str = "") -> None:
    """Per-model 5D-CP polygons, min-max normalised per axis as in the paper's Figure 2."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = profiles[profiles["level"] == "model"] if "level" in profiles else profiles
    dims = [d for d in DIMENSIONS if d in models.columns]
    fig = plt.figure(figsize=(6, 6))
    ax = fig.add_subplot(111, polar=True)
    angles = np.linspace(0, 2 * np.pi, len(dims), endpoint=False).tolist()
    values = models[dims].to_numpy(dtype=float) if len(models) else np.zeros((0, len(dims)))
    positions = radar_positions(values) if len(values) else values
    for (_, row), vals in zip(models.iterrows(), positions):
        norm = vals.tolist()
        ax.plot(angles + angles[:1], norm + norm[:1], marker="o", ms=3, label=str(row["model"]))
        ax.fill(angles + angles[:1], norm + norm[:1], alpha=0.1)
    ax.set_ylim(0, 1)
    ax.set_xticks(angles)
    ax.set_xticklabels(dims)
    ax.set_yticks([0.15, 0.575, 1.0])
    ax.set_yticklabels([])
    ax.set_title("5D cognitive profile per model\n(min-max per axis: inner ring = lowest model, outer = highest)",
                 fontsize=9, pad=18)
    if len(models):
        ax.legend(loc="upper left", bbox_to_anchor=(1.08, 1.0), fontsize=8)  # beside the plot, not on the title
    _footer(fig, provenance)
    fig.savefig(out_path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def metric_heatmap(profiles: pd.DataFrame, out_path: str, provenance: str = "") -> None:
    """Mean z-score of each metric per model (rows: models; columns: the 19 metrics by dimension)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = profiles[profiles["level"] == "trace"] if "level" in profiles else profiles
    cols = [f"z_{m}" for m in METRIC_NAMES if f"z_{m}" in traces.columns]
    table = traces.groupby("model")[cols].mean() if len(traces) else pd.DataFrame(columns=cols)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.45 * max(len(table), 1)))
    data = table.to_numpy(dtype=float) if len(table) else np.zeros((1, len(cols)))
    lim = max(1.0, float(np.nanmax(np.abs(data)))) if data.size else 1.0
    im = ax.imshow(data, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels([c[2:] for c in cols], rotation=60, fontsize=8)
    ax.set_yticks(range(len(table)))
    ax.set_yticklabels(list(table.index), fontsize=8)
    fig.colorbar(im, ax=ax, label="mean z-score")
    ax.set_title("Metric z-scores per model")
    _footer(fig, provenance)
    fig.savefig(out_path, dpi=120, bbox_inches="tight")
    plt.close(fig)
