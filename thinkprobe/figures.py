"""Figures of the report: the 5D cognitive radar per model and the per-model metric z-score heatmap.

Each figure carries its own provenance in a footer (thinkprobe version, code hash, input sha256), so a
copy that travels without the report can still be traced back.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .vocabulary import DIMENSIONS, METRIC_NAMES


def _footer(fig, provenance: str) -> None:
    fig.text(0.01, 0.005, provenance, fontsize=6, color="#555555", ha="left", va="bottom")


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
    lo, hi = (values.min(axis=0), values.max(axis=0)) if len(values) else (0, 1)
    span = np.where(hi - lo > 0, hi - lo, 1.0)
    for (_, row), vals in zip(models.iterrows(), values):
        norm = ((vals - lo) / span).tolist()
        ax.plot(angles + angles[:1], norm + norm[:1], label=str(row["model"]))
        ax.fill(angles + angles[:1], norm + norm[:1], alpha=0.1)
    ax.set_xticks(angles)
    ax.set_xticklabels(dims)
    ax.set_yticklabels([])
    ax.set_title("5D cognitive profile per model (min-max per axis)")
    if len(models):
        ax.legend(loc="upper right", bbox_to_anchor=(1.3, 1.1), fontsize=8)
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
