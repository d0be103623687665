"""What one trace page shows: the data :mod:`thinkprobe.stages.page_sources` gathers and :mod:`thinkprobe.view.trace_page`
renders (a leaf, so the page imports no source reader)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..vocabulary import DIMENSIONS


@dataclass
class PageData:
    """Everything one trace page shows (see :func:`thinkprobe.view.trace_page.render_page`)."""

    title: str
    unit: str
    status: str = "ok"
    reason: str | None = None
    ids: dict[str, Any] = field(default_factory=dict)
    graph: dict[str, Any] | None = None          # networkx node-link Thought Graph (nodes carry text, offsets)
    metrics: dict[str, float] = field(default_factory=dict)
    reference: dict[str, Any] | None = None       # {name, n, metrics: {m: {mean, sd}}}
    dimensions: dict[str, Sequence[str]] = field(default_factory=lambda: dict(DIMENSIONS))
    trajectory: dict[str, Any] | None = None      # see trajectory_view()
    provenance: dict[str, Any] = field(default_factory=dict)
