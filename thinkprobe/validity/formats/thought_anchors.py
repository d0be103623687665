"""Sentence-chunk tables with function tags and dependencies: Thought Anchors' ``chunks_labeled.json``
(Bogdan, Macar et al., "Thought Anchors: which LLM reasoning steps matter?", 2025; the math-rollouts
data set and the thought-anchors repository).

A trace is a folder holding ``chunks_labeled.json`` (a JSON list, one object per chunk: ``chunk`` its text,
``chunk_idx``, ``function_tags`` a list of tags, ``depends_on`` the indices of earlier chunks it uses, and
the resampling measures, among them ``resampling_importance_accuracy``) and, when present,
``base_solution.json`` whose ``solution`` is the reasoning the chunks were cut from; without it the text is
the chunks joined by single spaces. The path given may be the folder, its ``chunks_labeled.json``, or a
folder of such folders. Chunks are located in the text in order (whitespace ignored); a chunk that is not
there makes the trace a :class:`Skipped`. A chunk's label is its first function tag (the published tables
give one tag per chunk, rarely two). Each ``depends_on`` entry ``j`` of chunk ``i`` is an edge ``j -> i``
labelled ``depends_on`` (the tables' dependencies are untyped). The outcome measure is
``resampling_importance_accuracy``: the change in the share of correct answers among rollouts resampled
after the chunk against before it; a chunk without it has NaN.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterator

from ..annotation import AnnotatedTrace, Edge, Skipped, Unit
from . import Format, register
from .step_labels import locate

LABELS = ("problem_setup", "plan_generation", "fact_retrieval", "active_computation", "uncertainty_management",
          "result_consolidation", "self_checking", "final_answer_emission")
EDGE_LABELS = ("depends_on",)
OUTCOME = "resampling_importance_accuracy"


def _folders(path: Path) -> list[Path]:
    if path.is_file():
        return [path.parent]
    if (path / "chunks_labeled.json").is_file():
        return [path]
    return sorted(p.parent for p in path.rglob("chunks_labeled.json"))


def _one(folder: Path) -> AnnotatedTrace | Skipped:
    tid, src = folder.name, str(folder / "chunks_labeled.json")
    try:
        chunks = json.loads((folder / "chunks_labeled.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Skipped(tid, f"chunks_labeled.json unreadable: {exc}", src)
    if not isinstance(chunks, list) or not chunks:
        return Skipped(tid, "no annotations (chunks_labeled.json holds no chunk)", src)
    if not all(isinstance(c, dict) and isinstance(c.get("chunk"), str) for c in chunks):
        return Skipped(tid, "a chunk without its text (every entry needs a 'chunk' string)", src)
    try:
        if all("chunk_idx" in c for c in chunks):  # else the file's order is the chunks' order
            chunks = sorted(chunks, key=lambda c: int(c["chunk_idx"]))
    except (TypeError, ValueError) as exc:
        return Skipped(tid, f"a chunk_idx that is not an integer ({exc})", src)
    base = folder / "base_solution.json"
    text = None
    if base.is_file():
        try:
            solution = json.loads(base.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            return Skipped(tid, f"base_solution.json unreadable: {exc}", str(base))
        text = solution.get("solution") if isinstance(solution, dict) else None
    if not isinstance(text, str):
        text = " ".join(c["chunk"].strip() for c in chunks)
    starts = locate(text, [c["chunk"] for c in chunks])
    if isinstance(starts, str):
        return Skipped(tid, f"offsets do not match the trace text: {starts}", src)
    ends = [*starts[1:], len(text)]
    units, position = [], {}
    for k, (c, a, b) in enumerate(zip(chunks, starts, ends)):
        tags = c.get("function_tags") or []
        units.append(Unit(a, b, tags[0] if tags else None))
        position[str(c.get("chunk_idx", k))] = k
    edges = []
    for k, c in enumerate(chunks):
        for dep in c.get("depends_on") or []:
            if str(dep) in position and position[str(dep)] != k:
                edges.append(Edge(position[str(dep)], k, "depends_on"))
    outcome = None
    if any(OUTCOME in c for c in chunks):
        outcome = [float(c[OUTCOME]) if isinstance(c.get(OUTCOME), (int, float)) else math.nan for c in chunks]
    return AnnotatedTrace(tid, text, units, edges, outcome, src)


def read(path: Path) -> Iterator[AnnotatedTrace | Skipped]:
    folders = _folders(Path(path))
    if not folders:
        raise ValueError(f"{path}: no chunks_labeled.json in it")
    for folder in folders:
        yield _one(folder)


FORMAT = register(Format("thought_anchors", read, LABELS, EDGE_LABELS,
                         "sentence-chunk tables with function tags, dependencies and resampled accuracy "
                         "(Thought Anchors' chunks_labeled.json)"))
