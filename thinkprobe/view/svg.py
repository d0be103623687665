"""Inline SVG of a trace page: the 5D-CP radar and the stacked answer distribution along the checkpoints.

Both are plain SVG (no plotting library: a page must stay small and render without scripts). This module
computes the geometry; the markup is in the templates ``radar.svg.j2`` and ``distribution.svg.j2``
(:mod:`thinkprobe.view.templating`). Each function returns the chart as Markup, for a page to place.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from .templating import render_markup

# Okabe & Ito's colour-blind-safe palette, for answer labels (the gold answer is marked by an outline).
ANSWER_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
OTHER, NULL = "#999999", "#dddddd"
FLAG = "#000000"  # the structure x dynamics flag: no answer colour is black
RADAR_RANGE = 2.0  # the radar's radius spans z = -2 .. +2 (the reference's mean is the middle ring)


def _f(x: float) -> str:
    return f"{x:.1f}"


def radar(scores: Mapping[str, float | None], size: int = 260):
    """The 5D-CP of one trace (mean z-score per dimension, paper eq. 1) on fixed rings z = -2, -1, 0, 1, 2.

    The scale does not depend on the trace, so a profile at the reference mean (every z = 0) is a pentagon
    on the middle ring, never a collapsed line; values beyond +-2 are drawn on the rim and labelled.
    """
    dims = list(scores)
    margin = 90  # room for the axis labels left and right
    width = size + 2 * margin
    c, cy, r = width / 2, size / 2, size / 2 - 40
    k = max(len(dims), 1)

    def point(i: int, z: float) -> tuple[float, float]:
        rad = r * (max(-RADAR_RANGE, min(RADAR_RANGE, z)) + RADAR_RANGE) / (2 * RADAR_RANGE)
        a = -math.pi / 2 + 2 * math.pi * i / k
        return c + rad * math.cos(a), cy + rad * math.sin(a)

    rings = [{"points": " ".join(f"{_f(x)},{_f(y)}" for x, y in (point(i, z) for i in range(k))),
              "stroke": "#888" if z == 0 else "#ddd", "width": 1.2 if z == 0 else 0.8} for z in (-2, -1, 0, 1, 2)]
    axes = []
    for i, d in enumerate(dims):
        x, y = point(i, RADAR_RANGE)
        lx, ly = point(i, RADAR_RANGE + 0.55)
        z = scores[d]
        axes.append({"x": _f(x), "y": _f(y), "label_x": _f(lx), "label_y": _f(ly + 4),
                     "label": f"{d} {'n/a' if z is None else f'{z:+.2f}'}",
                     "anchor": "middle" if abs(lx - c) < 10 else ("start" if lx > c else "end")})
    pts = [point(i, scores[d] if scores[d] is not None else 0.0) for i, d in enumerate(dims)]
    return render_markup("radar.svg.j2", width=width, size=size, cx=c, cy=cy, rings=rings, axes=axes,
                         profile=" ".join(f"{_f(x)},{_f(y)}" for x, y in pts),
                         points=[(_f(x), _f(y)) for x, y in pts])


def answer_order(checkpoints: Sequence[Mapping[str, Any]], gold: str | None, limit: int = len(ANSWER_COLOURS)
                 ) -> list[str]:
    """The answers drawn in their own colour: gold first, then by their highest probability (ties by name)."""
    best: dict[str, float] = {}
    for cp in checkpoints:
        for label, p in cp["state"].items():
            if label != "":
                best[label] = max(best.get(label, 0.0), p)
    order = sorted(best, key=lambda a: (-best[a], a))
    if gold is not None and gold in best:
        order.remove(gold)
        order.insert(0, gold)
    return order[:limit]


def distribution_chart(traj: Mapping[str, Any], width: int = 980, height: int = 190):
    """Stacked answer distribution per checkpoint (one column each, x = checkpoint position in reasoning
    tokens), the gold answer outlined, t_commit as a dashed line, intervals flagged by the structure x
    dynamics join shaded above their column. Columns carry ``data-cp`` to pair with the text's markers."""
    cps = traj["checkpoints"]
    n = len(cps)
    gold = None if traj.get("gold") is None else str(traj["gold"])
    colours = dict(zip(answer_order(cps, gold), ANSWER_COLOURS))
    left, top, bottom = 40, 22, 34
    plot_h = height - top - bottom
    col_w = (width - left - 10) / max(n, 1)
    flagged = {iv["checkpoint_index"]: iv for iv in traj.get("intervals", []) if iv["markers"]}
    grid = [{"y": _f(top + plot_h * (1 - frac)), "label_y": _f(top + plot_h * (1 - frac) + 3), "label": f"{frac:g}"}
            for frac in (0, 0.5, 1)]
    step = max(1, math.ceil(n / 16))
    columns = []
    for j, cp in enumerate(cps):
        x = left + j * col_w
        k = cp["index"]
        iv = flagged.get(k)
        flag = (f'interval to checkpoint {k}: {" ".join(iv["markers"])} unit; TV {iv["tv"]:.2f}'
                f'{" (switch)" if iv["switch"] else ""}') if iv else None
        y = top + plot_h
        state = cp["state"]
        parts = [(a, state[a]) for a in colours if a in state]
        other = sum(p for a, p in state.items() if a not in colours and a != "")
        parts += [("other", other)] if other > 0 else []
        parts += [("", state[""])] if state.get("", 0) > 0 else []
        tip = ", ".join(f"{'no answer' if a == '' else a}: {p:.2f}" for a, p in parts)
        bars = []
        for a, p in parts:
            h = p * plot_h
            y -= h
            bars.append({"x": _f(x + 0.5), "y": _f(y), "width": _f(max(col_w - 1, 0.5)), "height": _f(h),
                         "fill": colours.get(a, NULL if a == "" else OTHER),
                         "gold": gold is not None and a == gold})
        columns.append({"index": k, "x": _f(x), "width": _f(col_w), "flag": flag, "bars": bars,
                        "tip": f"checkpoint {k} ({cp['prefix_tokens']} tokens): {tip}",
                        "label": cp["prefix_tokens"] if j % step == 0 else None, "label_x": _f(x + col_w / 2)})
    commit = None
    if traj.get("t_commit_index") is not None and n:
        x = left + traj["t_commit_index"] * col_w
        commit = {"x": _f(x), "label_x": _f(x + 3)}
    answers = [{"label": a, "colour": c, "gold": a == gold} for a, c in colours.items()]
    return render_markup("distribution.svg.j2", width=width, height=height, left=left, top=top, bottom=bottom,
                         plot_height=plot_h, mid_y=top + plot_h / 2, grid_lines=grid, columns=columns,
                         commit=commit, axis_x=left + (width - left) / 2, answers=answers,
                         gold_never_sampled=gold if gold is not None and gold not in colours else None,
                         other_colour=OTHER, null_colour=NULL, flag_colour=FLAG)
