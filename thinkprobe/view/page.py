"""The HTML of a trace page: one static, self-contained file (inline CSS, SVG and a small script of ours).

Sections, top to bottom:

* the reasoning text, one block per Thought Unit (paper §3.2), coloured by node type (8 types, Okabe-Ito
  colours, legend in the header); hovering a unit names its type, family and layer-1 boundary class;
* beside it, one arc per typed edge BRCH, BACK, SYNT and CRIT (the SEQ backbone and the ELAB edges are
  implicit in the reading order); the script shapes them from where the units were laid out;
* when the unit has a trajectory: checkpoint markers in the text at their character offsets, and under the
  text the stacked answer distribution per checkpoint (gold outlined, t_commit, the mechanism of App. B
  named, intervals flagged by the structure x dynamics join shaded);
* the 19 metrics with their z-scores against the reference (:mod:`thinkprobe.view.reference`) and the
  trace's 5D-CP radar (paper eq. 1: the mean z-score of each dimension's metrics);
* the provenance in a footer (thinkprobe version, code hash, parameters, inputs with their sha256).
"""

from __future__ import annotations

import json
from html import escape
from importlib import resources
from typing import Any, Mapping, Sequence

from ..graph import FAMILY_OF, NODE_TYPES
from ..vocabulary import METRIC_NAMES
from .display import CONTROL_STYLE, plain, shown
from .reference import zscore
from .sources import PageData
from .svg import distribution_chart, radar

# Okabe-Ito colours, one per node type; exploration warm, exploitation blue, metacognition red/purple,
# integration green/black. The text colour of a badge keeps contrast on light fills.
TYPE_COLOURS = {"HYP": "#E69F00", "RFR": "#F0E442", "SPC": "#56B4E9", "JUS": "#0072B2",
                "CRT": "#D55E00", "MET": "#CC79A7", "SYN": "#009E73", "CMP": "#000000"}
TYPE_NAMES = {"HYP": "hypothesis", "RFR": "reframing", "SPC": "specification", "JUS": "justification",
              "CRT": "critique", "MET": "metacognition", "SYN": "synthesis", "CMP": "comparison"}
ARC_TYPES = ("BRCH", "BACK", "SYNT", "CRIT")
ARC_NAMES = {"BRCH": "branch", "BACK": "backtrack (revises an earlier unit)", "SYNT": "synthesis",
             "CRIT": "critique"}
ARC_COLOURS = {"BRCH": "#0072B2", "BACK": "#D55E00", "SYNT": "#009E73", "CRIT": "#CC79A7"}
_DARK_TEXT = {"RFR", "HYP", "SPC"}


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def typed_arcs(graph: Mapping[str, Any] | None) -> list[tuple[int, int, str]]:
    """The edges a page draws as arcs: BRCH, BACK, SYNT and CRIT (source, target, type), in graph order."""
    if not graph:
        return []
    edges = graph.get("edges", graph.get("links", []))
    return [(int(e["source"]), int(e["target"]), e["edge_type"]) for e in edges if e["edge_type"] in ARC_TYPES]


def profile_scores(z: Mapping[str, float | None], dimensions: Mapping[str, Sequence[str]]) -> dict[str, float | None]:
    """5D-CP of one trace: per dimension, the mean of its metrics' z-scores (paper §3.5, eq. 1)."""
    out: dict[str, float | None] = {}
    for dim, members in dimensions.items():
        vals = [z[m] for m in members if z.get(m) is not None]
        out[dim] = sum(vals) / len(vals) if vals else None
    return out


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.{digits}g}" if abs(x) < 1000 else f"{x:,.0f}"
    return shown(x) if isinstance(x, str) else escape(str(x))


def _unit_blocks(graph: Mapping[str, Any], traj: Mapping[str, Any] | None) -> str:
    """One ``div.tu`` per node; checkpoint markers inserted in the unit holding their character offset."""
    nodes = sorted(graph["nodes"], key=lambda n: n["id"])
    marks: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    if traj:
        flagged = {iv["checkpoint_index"]: iv for iv in traj.get("intervals", []) if iv["markers"]}
        for cp in traj["checkpoints"]:
            off = cp.get("char_offset")
            if off is None:
                continue
            holder = next((n for n in nodes if n["start"] <= off - 1 < n["end"]), None)
            holder = holder or max((n for n in nodes if n["end"] <= off), key=lambda n: n["end"], default=nodes[0])
            marks.setdefault(int(holder["id"]), []).append((min(max(off - holder["start"], 0), len(holder["text"])),
                                                            {**cp, "flag": flagged.get(cp["index"])}))
    out = []
    for n in nodes:
        t = n["node_type"]
        tip = (f"unit {n['id']}: {t} ({TYPE_NAMES.get(t, t)}, {FAMILY_OF.get(t, '?')}) \u00b7 boundary: "
               f"{n.get('boundary', '?')} \u00b7 segment {n.get('segment', '?')} \u00b7 {n.get('n_tokens', '?')} tokens")
        text, pieces, last = n["text"], [], 0
        for pos, cp in sorted(marks.get(int(n["id"]), []), key=lambda m: m[0]):
            pieces.append(shown(text[last:pos]) if pos > last else "")
            flag = cp["flag"]
            ftip = f"; interval with {' '.join(flag['markers'])}" if flag else ""
            pieces.append(f'<span class="cp{" flag" if flag else ""}" data-cp="{cp["index"]}" '
                          f'data-tip="checkpoint {cp["index"]}: {cp["prefix_tokens"]} tokens read{ftip}">'
                          f'{cp["index"]}</span>')
            last = pos
        pieces.append(shown(text[last:]))
        colour = TYPE_COLOURS.get(t, "#999")
        fg = "#000" if t in _DARK_TEXT else "#fff"
        out.append(f'<div class="tu t-{t}" data-i="{n["id"]}" data-type="{t}" data-boundary="{plain(n.get("boundary"))}" '
                   f'data-tip="{plain(tip)}" style="border-color:{colour};background:{colour}14">'
                   f'<span class="badge" style="background:{colour};color:{fg}">{t}</span>{"".join(pieces)}</div>')
    return "".join(out)


def _legend() -> str:
    types = "".join(f'<span><span class="sw" style="background:{TYPE_COLOURS[t]}"></span>{t} {TYPE_NAMES[t]}</span>'
                    for t in NODE_TYPES)
    arcs = "".join(f'<span><span class="ln" style="border-color:{ARC_COLOURS[a]};border-top-style:'
                   f'{"dashed" if a in ("BACK", "CRIT") else "solid"}"></span>{a} {ARC_NAMES[a]}</span>'
                   for a in ARC_TYPES)
    return f'<div class="legend">{types}</div><div class="legend">{arcs}<span>(SEQ: reading order)</span></div>'


def _metrics_section(data: PageData) -> str:
    ref = (data.reference or {}).get("metrics", {})
    z = {m: zscore(data.metrics.get(m), ref.get(m)) for m in METRIC_NAMES}
    rows = []
    for dim, members in data.dimensions.items():
        for m in members:
            v, r, zm = data.metrics.get(m), ref.get(m), z.get(m)
            width = 0 if zm is None else min(abs(zm), 3) / 3 * 60
            bar = f'<span class="bar{" neg" if (zm or 0) < 0 else ""}" style="width:{width:.0f}px"></span>'
            rows.append(f'<tr><td>{m}</td><td class="l">{dim}</td><td data-v="{"" if v is None else v}">{_fmt(v)}</td>'
                        f'<td>{_fmt(r and r["mean"])}</td><td>{_fmt(r and r["sd"])}</td>'
                        f'<td data-v="{"" if zm is None else zm}">{"n/a" if zm is None else f"{zm:+.2f}"}</td>'
                        f'<td class="l">{bar}</td></tr>')
    name = shown((data.reference or {}).get("name", "no reference"))
    n = (data.reference or {}).get("n")
    table = ('<table class="sortable metrics"><thead><tr><th>metric</th><th>dimension</th><th>value</th>'
             '<th>ref. mean</th><th>ref. sd</th><th>z</th><th>|z| (to 3)</th></tr></thead><tbody>'
             + "".join(rows) + "</tbody></table>")
    scores = profile_scores(z, data.dimensions)
    return (f'<section id="metrics"><h2>19 metrics and the 5D cognitive profile</h2>'
            f'<p class="summary">z-scores against {name}{f" ({n} traces)" if n else ""}; click a column to sort.</p>'
            f'<div class="panels"><div>{table}</div><div>{radar(scores)}</div></div></section>')


def _trajectory_section(traj: Mapping[str, Any]) -> str:
    if not traj["checkpoints"]:
        return (f'<section id="trajectory"><h2>Answer-distribution trajectory</h2><p class="status-excluded">'
                f'no sampled checkpoint: {shown(traj.get("reason"))}</p></section>')
    facts = [("gold", traj.get("gold")), ("final answer", traj.get("endpoint_label")),
             ("correct", traj.get("correct")), ("mechanism", traj.get("mechanism")),
             ("committed to", traj.get("committed_answer")),
             ("t_commit (tokens)", traj.get("t_commit")), ("tau", traj.get("tau")), ("switches", traj.get("switches")),
             ("flagged intervals", sum(bool(iv["markers"]) for iv in traj.get("intervals", [])))]
    summary = " \u00b7 ".join(f"{k}: <b>{_fmt(v)}</b>" for k, v in facts)
    return (f'<section id="trajectory"><h2>Answer-distribution trajectory</h2><p class="summary">{summary}</p>'
            f'{distribution_chart(traj)}</section>')


def _provenance(prov: Mapping[str, Any]) -> str:
    lines = []
    for part, block in prov.items():
        if not isinstance(block, Mapping) or not block:
            if block:
                lines.append(f"<div>{shown(part)}: {shown(block)}</div>")
            continue
        head = [f"thinkprobe {shown(block.get('thinkprobe_version', '?'))}"]
        if block.get("source_sha256"):
            head.append(f"code <code>{shown(str(block['source_sha256'])[:16])}</code>")
        inputs = "".join(f"<li><code>{shown(p)}</code> sha256 <code>{shown(h)}</code></li>"
                         for p, h in (block.get("inputs") or {}).items())
        params = escape(json.dumps(block.get("params", {}), indent=1, sort_keys=True, default=str))
        lines.append(f"<div><b>{shown(part)}</b>: {', '.join(head)}<ul>{inputs}</ul>"
                     f"<details><summary>parameters</summary><pre>{params}</pre></details></div>")
    return "<footer><h2>Provenance</h2>" + "".join(lines or ["<div>none recorded</div>"]) + "</footer>"


def render_page(data: PageData) -> str:
    """The page of ``data`` as one HTML string (see the module docstring for what it shows)."""
    graph, traj = data.graph, data.trajectory
    ids = " \u00b7 ".join(f"{k}: {shown(v)}" for k, v in data.ids.items() if v not in (None, ""))
    status = ("" if data.status == "ok" else
              f'<p class="status-excluded">{shown(data.status)}: {shown(data.reason)}</p>')
    n_nodes = len(graph["nodes"]) if graph else 0
    arcs = typed_arcs(graph)
    stats = f"{n_nodes} thought units, {len(arcs)} typed arcs" if graph else "no Thought Graph"
    body = [f'<header><h1>{shown(data.title)}</h1><div class="ids">{ids} \u00b7 {stats}</div>{status}{_legend()}'
            "</header>"]
    if graph:
        paths = "".join(f'<path class="arc {t}" data-type="{t}" data-s="{s}" data-t="{d}"/>' for s, d, t in arcs)
        body.append(f'<section><h2>Reasoning</h2><div class="trace"><svg id="arcs" aria-label="typed edges">{paths}'
                    f'</svg><div id="units">{_unit_blocks(graph, traj)}</div></div></section>')
    if traj is not None:
        body.append(_trajectory_section(traj))
    if data.metrics:
        body.append(_metrics_section(data))
    body.append(_provenance(data.provenance))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{plain(data.title)} "
            f"\u2014 thinkprobe</title><style>{_asset('page.css')}{CONTROL_STYLE}</style></head><body>{''.join(body)}"
            f"<div id=\"tip\"></div><script>{_asset('page.js')}</script></body></html>\n")


def write_page(data: PageData, out: str) -> int:
    """Write the page atomically; returns its size in bytes."""
    from ..outputs import atomic_write_text

    html = render_page(data)
    atomic_write_text(out, html)
    return len(html.encode("utf-8"))
