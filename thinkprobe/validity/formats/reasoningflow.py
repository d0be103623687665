"""Reasoning graphs with typed nodes by character offsets and typed edges: ReasoningFlow's annotation
files (Lee et al., ReasoningFlow, ArgMining 2025; the ``web/data/*.json`` files of its repository).

A file is one JSON object: ``raw_text.response`` the reasoning; ``nodes`` a list of ``{id, start, end,
label, text, source}`` where ``source`` is ``"question"`` or ``"response"`` and ``start``/``end`` are
offsets into that source's text; ``edges`` a list of ``{id, from_node_id, to_node_id, label}``. Only the
response's nodes are units (question nodes are context, not reasoning); edges touching a question node are
dropped. A node whose offsets fall outside the response, overlap the node before, or whose ``text`` is not
the response's text at those offsets (whitespace ignored) makes the trace a :class:`Skipped` naming it. The
path may be a file or a folder of ``*.json`` files; the trace id is the file's ``doc_id`` (else its stem).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from ..annotation import AnnotatedTrace, Edge, Skipped, Unit, check_offsets
from . import Format, register

LABELS = ("planning", "fact", "reasoning", "restatement", "assumption", "example", "reflection", "context")
EDGE_LABELS = ("same_unit", "reason:premise-conclusion", "reason:plan-step", "reason:concept-example",
               "reason:fact-detail", "reason:stmt-restatement", "reason:stmt-correction", "plan:frontier-plan",
               "plan:frontier-verify", "plan:plan-subplan", "plan:plan-nextplan", "plan:plan-alternative",
               "evaluate:support", "evaluate:refute", "evaluate:uncertainty")


def _one(path: Path) -> AnnotatedTrace | Skipped:
    src = str(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Skipped(path.stem, f"unreadable: {exc}", src)
    tid = str(doc.get("doc_id") or path.stem) if isinstance(doc, dict) else path.stem
    text = (doc.get("raw_text") or {}).get("response") if isinstance(doc, dict) else None
    if not isinstance(text, str) or not text.strip():
        return Skipped(tid, "no raw_text.response", src)
    nodes = [n for n in doc.get("nodes") or [] if isinstance(n, dict) and n.get("source") == "response"]
    if not nodes:
        return Skipped(tid, "no annotations (no response node)", src)
    try:
        nodes = sorted(nodes, key=lambda n: (int(n["start"]), int(n["end"])))
        units = [Unit(int(n["start"]), int(n["end"]), n.get("label"), n.get("text")) for n in nodes]
    except (KeyError, TypeError, ValueError) as exc:
        return Skipped(tid, f"a response node without integer start/end ({exc})", src)
    index = {str(n.get("id")): k for k, n in enumerate(nodes)}
    edges = [Edge(index[str(e.get("from_node_id"))], index[str(e.get("to_node_id"))], str(e.get("label")))
             for e in doc.get("edges") or []
             if isinstance(e, dict) and str(e.get("from_node_id")) in index and str(e.get("to_node_id")) in index]
    trace = AnnotatedTrace(tid, text, units, edges, None, src)
    reason = check_offsets(trace)
    if reason:
        return Skipped(tid, f"offsets do not match the trace text: {reason}", src)
    return trace


def read(path: Path) -> Iterator[AnnotatedTrace | Skipped]:
    path = Path(path)
    files = [path] if path.is_file() else sorted(path.glob("*.json"))
    if not files:
        raise ValueError(f"{path}: no ReasoningFlow .json file")
    for f in files:
        yield _one(f)


FORMAT = register(Format("reasoningflow", read, LABELS, EDGE_LABELS,
                         "reasoning graphs with typed nodes by character offsets and typed edges (ReasoningFlow)"))
