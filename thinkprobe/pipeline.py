"""The extraction pipeline end to end: trace -> TUs (layers 1-2) -> Thought Graph (layers 3-4) -> metrics.

Work is done in chunks of traces so that the encoder sees large batches: layer 1 for the whole chunk, one
encoder call for the sentences layer 2 needs, layer 2, one encoder call for all TU texts, then graphs and
metrics per trace. Every failure of one trace becomes an :class:`~thinkprobe.traces.Exclusion` naming the
trace, the stage and the reason; the batch goes on.

Stages for the ablation of paper Table 6 (cumulative): ``l1`` structural boundaries only (SEQ backbone),
``l3`` adds the semantic trajectory, ``l4`` adds cross-segment arcs, ``full`` adds layer-2 TextTiling to
``l4`` (the complete pipeline).
"""

from __future__ import annotations

import logging
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from . import texttiling
from .encoder import Encoder
from .graph import InvariantError, ThoughtGraph, build_graph
from .lexicon import CueLexicon, load_cues, load_hedges
from .metrics import compute_metrics
from .params import Params
from .segmentation import Span, segment
from .text import count_tokens
from .traces import Exclusion, Trace, validate_trace

STAGES = ("l1", "l3", "l4", "full")
_GRAPH_LAYERS = {"l1": "l1", "l3": "l3", "l4": "l4", "full": "l4"}
log = logging.getLogger("thinkprobe")


@dataclass
class SegmentedTrace:
    """A trace cut into its final Thought Units, with one embedding per TU."""

    trace: Trace
    spans: list[Span]
    embeddings: np.ndarray
    tiling: dict[str, Any] = field(default_factory=dict)

    @property
    def texts(self) -> list[str]:
        return [s.text(self.trace.text) for s in self.spans]

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace": {**self.trace.ids(), "source": self.trace.source, "truncated": self.trace.truncated,
                      "offset": self.trace.offset},
            "tiling": self.tiling,
            "units": [{"start": s.start, "end": s.end, "kind": s.kind, "boundary": s.boundary,
                       "origin": s.origin, "sentences": [list(x) for x in s.sentences]} for s in self.spans],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], text: str, embeddings: np.ndarray) -> "SegmentedTrace":
        t = data["trace"]
        trace = Trace(t["trace_id"], text, t.get("model", ""), t.get("question_id", ""), t.get("run", ""),
                      t.get("domain", ""), t.get("source", ""), t.get("truncated", False), t.get("offset", 0))
        spans = [Span(u["start"], u["end"], u["kind"], u["boundary"], [tuple(x) for x in u["sentences"]],
                      u["origin"]) for u in data["units"]]
        return cls(trace, spans, embeddings, data.get("tiling", {}))


@dataclass
class TraceResult:
    trace: Trace
    graph: ThoughtGraph | None = None
    metrics: dict[str, float] | None = None
    exclusion: Exclusion | None = None


class Timings(defaultdict):
    """Seconds spent per pipeline stage, summed over traces."""

    def __init__(self):
        super().__init__(float)

    def add(self, key: str, t0: float) -> float:
        now = time.perf_counter()
        self[key] += now - t0
        return now


def _internal_error(trace_id: str, stage: str, exc: Exception, source: str) -> Exclusion:
    log.debug("internal error on %s in %s:\n%s", trace_id, stage, traceback.format_exc())
    return Exclusion(trace_id, f"internal error in {stage}: {type(exc).__name__}: {exc}", source, stage)


def _tile(spans: list[Span], text: str, emb_of: dict[tuple[int, int], np.ndarray], params: Params,
          lexicon: CueLexicon) -> tuple[list[Span], dict[str, Any]]:
    tp = params.texttiling
    long_spans = [s for s in spans if _is_long(s, params)]
    blocks = [np.stack([emb_of[x] for x in s.sentences]) for s in long_spans]
    tau = texttiling.trace_threshold(blocks, tp.threshold_percentile)
    out: list[Span] = []
    n_new = 0
    cuts_of = {id(s): texttiling.boundaries(b, tp.window, tp.prominence, tau) for s, b in zip(long_spans, blocks)}
    for s in spans:
        cuts = cuts_of.get(id(s), [])
        if not cuts:
            out.append(s)
            continue
        edges = [0, *cuts, len(s.sentences)]
        for part, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
            sents = s.sentences[a:b]
            boundary = s.boundary if part == 0 else lexicon.classify(text[sents[0][0]:sents[0][1]])
            out.append(Span(sents[0][0], s.end if b == len(s.sentences) else sents[-1][1], s.kind, boundary,
                            list(sents), s.origin if part == 0 else "texttiling"))
        n_new += len(cuts)
    info = {"tau": tau if np.isfinite(tau) else None, "tiled_spans": len(long_spans), "new_boundaries": n_new}
    return out, info


def _is_long(s: Span, params: Params) -> bool:
    return s.boundary == "none" and s.kind == "paragraph" and len(s.sentences) >= params.texttiling.min_sentences


def segment_traces(traces: list[Trace], params: Params, encoder: Encoder, layer2: bool = True,
                   timings: Timings | None = None) -> list[SegmentedTrace | Exclusion]:
    """Layers 1 and 2 for a chunk of traces, and the TU embeddings; returns one item per trace, in order."""
    timings = timings if timings is not None else Timings()
    lexicon = load_cues(params.segmentation.cue_lexicon or None)
    results: list[Any] = [None] * len(traces)
    layered: dict[int, list[Span]] = {}
    t0 = time.perf_counter()
    for i, tr in enumerate(traces):
        reason = validate_trace(tr, params.input)
        if reason:
            results[i] = Exclusion(tr.trace_id, reason, tr.source, "input")
            continue
        try:
            layered[i] = segment(tr.text, params.segmentation, lexicon)
        except Exception as exc:  # noqa: BLE001 - one trace must never stop the batch
            results[i] = _internal_error(tr.trace_id, "layer1", exc, tr.source)
    t0 = timings.add("layer1", t0)

    tiling: dict[int, dict[str, Any]] = {}
    if layer2 and params.texttiling.enabled:
        wanted = list(dict.fromkeys(
            (i, a, b) for i, spans in layered.items() for s in spans if _is_long(s, params) for a, b in s.sentences))
        texts = [traces[i].text[a:b] for i, a, b in wanted]
        vecs = encoder.encode(texts)
        t0 = timings.add("layer2_encode", t0)
        per_trace: dict[int, dict[tuple[int, int], np.ndarray]] = defaultdict(dict)
        for (i, a, b), v in zip(wanted, vecs):
            per_trace[i][(a, b)] = v
        for i in list(layered):
            try:
                layered[i], tiling[i] = _tile(layered[i], traces[i].text, per_trace[i], params, lexicon)
            except Exception as exc:  # noqa: BLE001
                results[i] = _internal_error(traces[i].trace_id, "layer2", exc, traces[i].source)
                del layered[i]
        t0 = timings.add("layer2", t0)

    order = list(layered)
    tu_texts = [s.text(traces[i].text) for i in order for s in layered[i]]
    vecs = encoder.encode(tu_texts)
    t0 = timings.add("tu_encode", t0)
    pos = 0
    for i in order:
        k = len(layered[i])
        results[i] = SegmentedTrace(traces[i], layered[i], vecs[pos:pos + k], tiling.get(i, {"tau": None}))
        pos += k
    return results


def graph_of(seg: SegmentedTrace, params: Params, layers: str = "l4", timings: Timings | None = None,
             attrs: dict[str, Any] | None = None) -> ThoughtGraph:
    """Layers 3-4, node classification and invariants for one segmented trace."""
    t0 = time.perf_counter()
    text = seg.trace.text
    texts = seg.texts
    graph_attrs = {**seg.trace.ids(), "source": seg.trace.source, "truncated": seg.trace.truncated,
                   "reasoning_offset": seg.trace.offset, **(attrs or {})}
    g = build_graph(texts, [(s.start, s.end) for s in seg.spans], [s.boundary for s in seg.spans],
                    seg.embeddings, [count_tokens(text[s.start:s.end]) for s in seg.spans],
                    params.trajectory, params.cross_segment, params.classification, layers, graph_attrs)
    if timings is not None:
        timings.add("graph", t0)
    return g


def analyze(traces: Iterable[Trace | Exclusion], params: Params, encoder: Encoder, stage: str = "full",
            chunk_size: int = 64, timings: Timings | None = None,
            on_result: Callable[[TraceResult], None] | None = None,
            graph_attrs: dict[str, Any] | None = None) -> Iterator[TraceResult]:
    """Analyse traces (exclusions pass straight through) and yield one :class:`TraceResult` each, in order."""
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
    timings = timings if timings is not None else Timings()
    hedges = load_hedges(params.metrics.hedge_lexicon or None)
    chunk: list[Trace | Exclusion] = []

    def flush() -> Iterator[TraceResult]:
        real = [t for t in chunk if isinstance(t, Trace)]
        segmented = iter(segment_traces(real, params, encoder, layer2=(stage == "full"), timings=timings))
        for item in chunk:
            if isinstance(item, Exclusion):
                res = TraceResult(Trace(item.trace_id, "", source=item.source), exclusion=item)
            else:
                res = _finish(item, next(segmented), params, stage, timings, hedges, graph_attrs)
            if on_result:
                on_result(res)
            yield res
        chunk.clear()

    for item in traces:
        chunk.append(item)
        if len(chunk) >= chunk_size:
            yield from flush()
    if chunk:
        yield from flush()


def _finish(trace: Trace, seg: SegmentedTrace | Exclusion, params: Params, stage: str, timings: Timings,
            hedges, graph_attrs) -> TraceResult:
    if isinstance(seg, Exclusion):
        return TraceResult(trace, exclusion=seg)
    try:
        graph = graph_of(seg, params, _GRAPH_LAYERS[stage], timings, graph_attrs)
    except InvariantError as exc:
        return TraceResult(trace, exclusion=Exclusion(trace.trace_id, str(exc), trace.source, "graph"))
    except Exception as exc:  # noqa: BLE001
        return TraceResult(trace, exclusion=_internal_error(trace.trace_id, "graph", exc, trace.source))
    t0 = time.perf_counter()
    try:
        metrics = compute_metrics(graph, params.metrics, hedges)
    except Exception as exc:  # noqa: BLE001
        return TraceResult(trace, graph, exclusion=_internal_error(trace.trace_id, "metrics", exc, trace.source))
    timings.add("metrics", t0)
    return TraceResult(trace, graph, metrics)


def ablation(traces: list[Trace], params: Params, encoder: Encoder) -> list[dict[str, Any]]:
    """Mean of every metric under the four cumulative stages of paper Table 6 (one row per stage)."""
    rows = []
    for stage in STAGES:
        values = [r.metrics for r in analyze(traces, params, encoder, stage=stage) if r.metrics]
        row: dict[str, Any] = {"stage": stage, "n_traces": len(values)}
        if values:
            for k in values[0]:
                row[k] = float(np.mean([v[k] for v in values]))
        rows.append(row)
    return rows
