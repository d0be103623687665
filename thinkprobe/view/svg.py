"""Inline SVG of a trace page: the 5D-CP radar and the stacked answer distribution along the checkpoints.

Both are plain SVG strings (no plotting library: a page must stay small and render without scripts).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from .display import plain, shown

# Okabe & Ito's colour-blind-safe palette, for answer labels (the gold answer is marked by an outline).
ANSWER_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
OTHER, NULL = "#999999", "#dddddd"
FLAG = "#000000"  # the structure x dynamics flag: no answer colour is black
RADAR_RANGE = 2.0  # the radar's radius spans z = -2 .. +2 (the reference's mean is the middle ring)


def _f(x: float) -> str:
    return f"{x:.1f}"


def radar(scores: Mapping[str, float | None], size: int = 260) -> str:
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

    out = [f'<svg class="radar" viewBox="0 0 {width} {size}" width="{width}" height="{size}" role="img" '
           f'aria-label="5D cognitive profile">']
    for z in (-2, -1, 0, 1, 2):
        ring = " ".join(f"{_f(x)},{_f(y)}" for x, y in (point(i, z) for i in range(k)))
        out.append(f'<polygon points="{ring}" fill="none" stroke="{"#888" if z == 0 else "#ddd"}" '
                   f'stroke-width="{1.2 if z == 0 else 0.8}"/>')
    for i, d in enumerate(dims):
        x, y = point(i, RADAR_RANGE)
        out.append(f'<line x1="{c}" y1="{cy}" x2="{_f(x)}" y2="{_f(y)}" stroke="#ddd"/>')
        lx, ly = point(i, RADAR_RANGE + 0.55)
        z = scores[d]
        label = f"{d} {'n/a' if z is None else f'{z:+.2f}'}"
        anchor = "middle" if abs(lx - c) < 10 else ("start" if lx > c else "end")
        out.append(f'<text x="{_f(lx)}" y="{_f(ly + 4)}" font-size="11" text-anchor="{anchor}">{plain(label)}</text>')
    pts = [point(i, scores[d] if scores[d] is not None else 0.0) for i, d in enumerate(dims)]
    out.append(f'<polygon class="profile" points="{" ".join(f"{_f(x)},{_f(y)}" for x, y in pts)}" '
               'fill="#0072B2" fill-opacity="0.25" stroke="#0072B2" stroke-width="2"/>')
    out += [f'<circle cx="{_f(x)}" cy="{_f(y)}" r="3" fill="#0072B2"/>' for x, y in pts]
    out.append(f'<text x="{c}" y="{size - 4}" font-size="10" text-anchor="middle" fill="#666">rings: z = -2 .. +2 '
               '(middle ring: the reference mean)</text>')
    out.append("</svg>")
    return "".join(out)


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


def distribution_chart(traj: Mapping[str, Any], width: int = 980, height: int = 190) -> str:
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
    out = [f'<svg class="dist" viewBox="0 0 {width} {height}" width="100%" role="img" '
           f'aria-label="answer distribution per checkpoint">',
           f'<text x="4" y="{top + plot_h / 2}" font-size="10" transform="rotate(-90 10 {top + plot_h / 2})" '
           'text-anchor="middle">p(answer)</text>']
    for frac in (0, 0.5, 1):
        y = top + plot_h * (1 - frac)
        out.append(f'<line x1="{left - 3}" x2="{width - 10}" y1="{_f(y)}" y2="{_f(y)}" stroke="#eee"/>'
                   f'<text x="{left - 5}" y="{_f(y + 3)}" font-size="9" text-anchor="end">{frac:g}</text>')
    step = max(1, math.ceil(n / 16))
    for j, cp in enumerate(cps):
        x = left + j * col_w
        k = cp["index"]
        if k in flagged:
            iv = flagged[k]
            out.append(f'<rect x="{_f(x)}" y="2" width="{_f(col_w)}" height="{top - 4}" fill="{FLAG}" '
                       f'opacity="0.85"><title>interval to checkpoint {k}: {" ".join(iv["markers"])} unit; TV '
                       f'{iv["tv"]:.2f}{" (switch)" if iv["switch"] else ""}</title></rect>')
        y = top + plot_h
        state = cp["state"]
        parts = [(a, state[a]) for a in colours if a in state]
        other = sum(p for a, p in state.items() if a not in colours and a != "")
        parts += [("other", other)] if other > 0 else []
        parts += [("", state[""])] if state.get("", 0) > 0 else []
        tip = ", ".join(f"{'no answer' if a == '' else a}: {p:.2f}" for a, p in parts)
        out.append(f'<g class="col" data-cp="{k}" data-tip="checkpoint {k} ({cp["prefix_tokens"]} tokens): '
                   f'{plain(tip)}">')
        for a, p in parts:
            h = p * plot_h
            y -= h
            fill = colours.get(a, NULL if a == "" else OTHER)
            stroke = ' stroke="#000" stroke-width="1.6"' if gold is not None and a == gold else ""
            out.append(f'<rect x="{_f(x + 0.5)}" y="{_f(y)}" width="{_f(max(col_w - 1, 0.5))}" height="{_f(h)}" '
                       f'fill="{fill}"{stroke}/>')
        out.append("</g>")
        if j % step == 0:
            out.append(f'<text x="{_f(x + col_w / 2)}" y="{height - bottom + 12}" font-size="9" '
                       f'text-anchor="middle">{cp["prefix_tokens"]}</text>')
    if traj.get("t_commit_index") is not None and n:
        j = traj["t_commit_index"]
        x = left + j * col_w
        out.append(f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{top - 4}" y2="{top + plot_h + 4}" stroke="#000" '
                   f'stroke-dasharray="4 3" stroke-width="1.5"/><text x="{_f(x + 3)}" y="{top + 10}" '
                   f'font-size="10">t_commit</text>')
    out.append(f'<text x="{left + (width - left) / 2}" y="{height - 4}" font-size="10" text-anchor="middle">'
               'checkpoint position (reasoning tokens read)</text>')
    out.append("</svg>")
    legend = [f'<span><span class="sw" style="background:{c}{";outline:2px solid #000" if a == gold else ""}">'
              f'</span>{shown(a)}{" (gold)" if a == gold else ""}</span>' for a, c in colours.items()]
    legend += [f'<span><span class="sw" style="background:{OTHER}"></span>other answers</span>',
               f'<span><span class="sw" style="background:{NULL}"></span>no answer</span>',
               f'<span><span class="sw" style="background:{FLAG}"></span>interval with a BACK/CRT/SYN unit (band '
               'above its column; black marker in the text)</span>']
    if gold is not None and gold not in colours:
        legend.append(f"<span>gold {shown(gold)}: never sampled</span>")
    return "".join(out) + '<div class="legend">' + "".join(legend) + "</div>"
