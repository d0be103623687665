"""Step labels inline in the text: the ``annotated_response`` of the steering-thinking-llms corpus
(Venhoff et al., "Understanding reasoning in thinking language models via steering vectors", 2025).

A file is a JSON list of records with ``thinking_process`` (the reasoning) and ``annotated_response`` (the
same reasoning cut into steps, each ``["label"] text ["end-section"]``; parsed by
:func:`thinkprobe.stats.agreement.parse_step_labels`). The labels are an LLM's (gpt-4.1), not a person's.
Each step is located in ``thinking_process`` by its characters, whitespace ignored, from the end of the
step before (a step whose whole text is not found is located by its first 40 characters); a step found
nowhere makes the trace a :class:`Skipped` with the step's number. A unit runs from its step's start to
the next step's start (the last to the end of the text). Trace ids are ``<model>/<record>``, the model
from the file name ``reasoning_comparison_<model>.json``. No edges, no outcome measure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Mapping

# one whitespace-collapsing helper with its offsets, shared with the segmentation agreement's aligner
from ...stats.agreement import _normalised, parse_step_labels
from ..annotation import AnnotatedTrace, Skipped, Unit
from . import Format, register

LABELS = ("initializing", "deduction", "adding-knowledge", "example-testing", "uncertainty-estimation",
          "backtracking")
PREFIX = 40


def locate(text: str, steps: list[str]) -> list[int] | str:
    """Start offsets of ``steps`` in ``text`` (in order), or the reason one cannot be found."""
    norm, where = _normalised(text)
    starts, cursor = [], 0
    for k, step in enumerate(steps):
        s = " ".join(step.split())
        pos, length = norm.find(s, cursor), len(s)
        if pos < 0:
            pos, length = norm.find(s[:PREFIX], cursor), min(PREFIX, len(s))
        if pos < 0:
            return f"step {k} ({s[:40]!r}...) is not in the trace text"
        starts.append(where[pos])
        cursor = pos + length
    return starts


def _model(path: Path) -> str:
    stem = path.stem
    return stem.split("reasoning_comparison_", 1)[1] if stem.startswith("reasoning_comparison_") else stem


def read(path: Path) -> Iterator[AnnotatedTrace | Skipped]:
    model = _model(Path(path))
    try:
        records = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        yield Skipped(model, f"unreadable: {exc}", str(path))
        return
    if not isinstance(records, list):
        yield Skipped(model, "not a JSON list of records (thinking_process, annotated_response)", str(path))
        return
    for i, rec in enumerate(records):
        row = rec.get("record", i) if isinstance(rec, Mapping) else i  # a file cut from a corpus file keeps its row
        tid, src = f"{model}/{row}", f"{path}:{i}"
        text = rec.get("thinking_process") if isinstance(rec, Mapping) else None
        ann = rec.get("annotated_response") if isinstance(rec, Mapping) else None
        if not isinstance(text, str) or not text.strip():
            yield Skipped(tid, "no thinking_process text", src)
            continue
        if not isinstance(ann, str) or not ann.strip():
            yield Skipped(tid, "no annotations (annotated_response is empty)", src)
            continue
        steps = parse_step_labels(ann)
        if not steps:
            yield Skipped(tid, "no annotations (no labelled step in annotated_response)", src)
            continue
        starts = locate(text, [t for _, t in steps])
        if isinstance(starts, str):
            yield Skipped(tid, f"offsets do not match the trace text: {starts}", src)
            continue
        ends = [*starts[1:], len(text)]
        units = [Unit(a, b, label) for (label, _), a, b in zip(steps, starts, ends)]
        yield AnnotatedTrace(tid, text, units, source=src)


FORMAT = register(Format("step_labels", read, LABELS, (),
                         "steps labelled inline in the text (steering-thinking-llms annotated_response; "
                         "Venhoff et al. 2025's taxonomy; LLM labels)"))
