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

This module gathers what each section shows; the markup is the template ``trace_page.html.j2``
(:mod:`thinkprobe.view.templating`), which escapes every value it writes.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from ..graph import FAMILY_OF, NODE_TYPES
from ..vocabulary import METRIC_NAMES
from .reference import zscore
from .pagedata import PageData
from .svg import distribution_chart, radar
from .templating import render

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


def _units(graph: Mapping[str, Any], traj: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """One entry per node: its look, its tip, and its text cut at the checkpoint markers it holds (each
    marker in the unit holding its character offset). ``pieces`` alternate text and markers and end with a
    text (possibly empty)."""
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
            if pos > last:
                pieces.append({"text": text[last:pos]})
            flag = cp["flag"]
            ftip = f"; interval with {' '.join(flag['markers'])}" if flag else ""
            pieces.append({"checkpoint": cp["index"], "flag": bool(flag),
                           "tip": f"checkpoint {cp['index']}: {cp['prefix_tokens']} tokens read{ftip}"})
            last = pos
        pieces.append({"text": text[last:]})
        out.append({"id": n["id"], "type": t, "boundary": n.get("boundary"), "tip": tip, "pieces": pieces,
                    "colour": TYPE_COLOURS.get(t, "#999"), "fg": "#000" if t in _DARK_TEXT else "#fff"})
    return out


def _legend() -> dict[str, list[dict[str, str]]]:
    return {"types": [{"code": t, "name": TYPE_NAMES[t], "colour": TYPE_COLOURS[t]} for t in NODE_TYPES],
            "arcs": [{"code": a, "name": ARC_NAMES[a], "colour": ARC_COLOURS[a],
                      "style": "dashed" if a in ("BACK", "CRIT") else "solid"} for a in ARC_TYPES]}


def _metrics(data: PageData) -> dict[str, Any]:
    ref = (data.reference or {}).get("metrics", {})
    z = {m: zscore(data.metrics.get(m), ref.get(m)) for m in METRIC_NAMES}
    rows = []
    for dim, members in data.dimensions.items():
        for m in members:
            v, r, zm = data.metrics.get(m), ref.get(m), z.get(m)
            rows.append({"metric": m, "dimension": dim, "value": v, "mean": r and r["mean"], "sd": r and r["sd"],
                         "z": zm, "z_text": "n/a" if zm is None else f"{zm:+.2f}", "negative": (zm or 0) < 0,
                         "bar": f"{0 if zm is None else min(abs(zm), 3) / 3 * 60:.0f}"})
    return {"rows": rows, "reference": (data.reference or {}).get("name", "no reference"),
            "n": (data.reference or {}).get("n"), "radar": radar(profile_scores(z, data.dimensions))}


def _trajectory(traj: Mapping[str, Any]) -> dict[str, Any]:
    if not traj["checkpoints"]:
        return {"reason": traj.get("reason"), "chart": None}
    facts = [("gold", traj.get("gold")), ("final answer", traj.get("endpoint_label")),
             ("correct", traj.get("correct")), ("mechanism", traj.get("mechanism")),
             ("committed to", traj.get("committed_answer")),
             ("t_commit (tokens)", traj.get("t_commit")), ("tau", traj.get("tau")), ("switches", traj.get("switches")),
             ("flagged intervals", sum(bool(iv["markers"]) for iv in traj.get("intervals", [])))]
    return {"facts": facts, "chart": distribution_chart(traj)}


def _provenance(prov: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per part of the provenance: a block (version, code hash, inputs, parameters) or a value."""
    parts = []
    for part, block in prov.items():
        if not isinstance(block, Mapping) or not block:
            if block:
                parts.append({"name": part, "value": block})
            continue
        parts.append({"name": part, "block": True, "version": block.get("thinkprobe_version", "?"),
                      "code": str(block["source_sha256"])[:16] if block.get("source_sha256") else None,
                      "inputs": list((block.get("inputs") or {}).items()),
                      "params": json.dumps(block.get("params", {}), indent=1, sort_keys=True, default=str)})
    return parts


def render_page(data: PageData) -> str:
    """The page of ``data`` as one HTML string (see the module docstring for what it shows)."""
    graph, traj = data.graph, data.trajectory
    arcs = typed_arcs(graph)
    return render("trace_page.html.j2", title=data.title,
                  ids=[(k, v) for k, v in data.ids.items() if v not in (None, "")],
                  status=data.status, reason=data.reason, legend=_legend(),
                  stats=f"{len(graph['nodes'])} thought units, {len(arcs)} typed arcs" if graph else "no Thought Graph",
                  arcs=arcs, units=_units(graph, traj) if graph else None,
                  trajectory=None if traj is None else _trajectory(traj),
                  metrics=_metrics(data) if data.metrics else None, provenance=_provenance(data.provenance))


def write_page(data: PageData, out: str) -> int:
    """Write the page atomically; returns its size in bytes."""
    from ..outputs import atomic_write_text

    html = render_page(data)
    atomic_write_text(out, html)
    return len(html.encode("utf-8"))
