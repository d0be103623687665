"""The common form of an annotated trace, whatever format it was published in (docs/validity.md).

An :class:`AnnotatedTrace` holds the trace text verbatim and the annotator's units over it as character
offsets into that text, each with its label; edges join two units (by their index) with a label; ``outcome``
is an optional per-unit measure of where the answer moves (Thought Anchors' resampling importance: the change
in the chance of the correct answer when the rollouts start after that unit rather than before it).

Readers (:mod:`thinkprobe.validity.formats`) locate units in the text; a unit whose offsets do not match the
text (out of range, or whose stated text differs from the text at those offsets) makes the whole trace an
exclusion with that reason (:func:`check_offsets`), since a shifted annotation would score as disagreement.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Unit:
    """One annotated unit: ``text[start:end]`` with its label (``None``: the annotator gave none)."""

    start: int
    end: int
    label: str | None
    stated: str | None = None  # the unit's text as the annotation states it, when it does


@dataclass(frozen=True)
class Edge:
    """A labelled edge from unit ``source`` to unit ``target`` (indices into ``AnnotatedTrace.units``)."""

    source: int
    target: int
    label: str


@dataclass
class AnnotatedTrace:
    trace_id: str
    text: str
    units: list[Unit]
    edges: list[Edge] = field(default_factory=list)
    outcome: list[float] | None = None  # one value per unit, or None when the format carries none
    source: str = ""  # file (and record) the annotation came from


@dataclass(frozen=True)
class Skipped:
    """A trace of an annotated set that is left out of the comparison, and why."""

    trace_id: str
    reason: str
    source: str = ""


def _squash(s: str) -> str:
    return " ".join(s.split())


def check_offsets(trace: AnnotatedTrace) -> str | None:
    """``None`` when every unit lies inside the text, in order, and matches its stated text (whitespace
    ignored); else the reason, naming the first unit that does not."""
    n = len(trace.text)
    prev = 0
    for i, u in enumerate(trace.units):
        if not 0 <= u.start < u.end <= n:
            return f"unit {i}: offsets {u.start}..{u.end} outside the text of {n} characters"
        if u.start < prev:
            return f"unit {i}: starts at {u.start}, before the end {prev} of the unit before it"
        if u.stated is not None and _squash(trace.text[u.start:u.end]) != _squash(u.stated):
            return (f"unit {i}: the text at {u.start}..{u.end} ({trace.text[u.start:u.start + 30]!r}...) is not "
                    f"the unit's stated text ({u.stated[:30]!r}...)")
        prev = u.end
    if trace.outcome is not None and len(trace.outcome) != len(trace.units):
        return f"{len(trace.outcome)} outcome values for {len(trace.units)} units"
    return None
