"""The extraction pipeline end to end: trace -> TUs (layers 1-2) -> Thought Graph (layers 3-4) -> metrics.

Work is done in chunks of traces so that the encoder sees large batches: layer 1 for the whole chunk, one
encoder call for every sentence of the chunk (layer 2 slides its window over the whole trace, see
:mod:`thinkprobe.texttiling`), layer 2, one encoder call for all TU texts (a one-sentence TU is a cache
hit), then graphs and metrics per trace. Every failure of one trace becomes an
:class:`~thinkprobe.traces.Exclusion` naming the trace, the stage and the reason; the chunk goes on.

Cost bound: a trace cut into more than ``segmentation.max_thought_units`` TUs (default 5,000; real traces have tens)
is excluded after layer 1, before anything is encoded; so is a trace whose layer-1 spans already imply more
than that many TUs after layer 2 (a tileable paragraph of m sentences gives at least
ceil(m / max_tu_sentences)), and one of more than ``texttiling.max_sentences`` sentences (layer 2 encodes
every sentence); the check after layer 2 remains as a backstop. Below the caps, layers 3-4 and the
metrics are at most quadratic in TUs with bounded memory (see :mod:`thinkprobe.graph`), and layer 2 is
linear in sentences.

Layer settings for the ablation of paper Table 6 (cumulative, :data:`LAYER_SETTINGS`): ``l1`` structural
boundaries only (SEQ backbone), ``l3`` adds the semantic trajectory, ``l4`` adds cross-segment arcs, ``full``
adds layer-2 TextTiling to ``l4`` (the complete pipeline).
"""

from __future__ import annotations

import bisect
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
from .lexicon import load_cues, load_hedges
from .metrics import compute_metrics
from .params import Params
from .segmentation import BOUNDARY_CLASSES, Span, segment
from .text import count_tokens
from .traces import Exclusion, Trace, validate_trace

LAYER_SETTINGS = ("l1", "l3", "l4", "full")  # which layers run (docs/glossary.md: layer)
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
                      t.get("domain", ""), t.get("source", ""), t.get("truncated", False), t.get("offset") or 0)
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
    """Seconds spent per layer (and on the encoder, graphs and metrics), summed over traces."""

    def __init__(self):
        super().__init__(float)

    def add(self, key: str, t0: float) -> float:
        now = time.perf_counter()
        self[key] += now - t0
        return now


def _internal_error(trace_id: str, stage: str, exc: Exception, source: str) -> Exclusion:
    log.debug("internal error on %s in %s:\n%s", trace_id, stage, traceback.format_exc())
    return Exclusion(trace_id, f"internal error in {stage}: {type(exc).__name__}: {exc}", source, stage)


def _too_many_thought_units(trace: Trace, n: int, params: Params, stage: str) -> Exclusion:
    return Exclusion(trace.trace_id, f"too many thought units: {n} after {stage} (maximum "
                     f"{params.segmentation.max_thought_units}; segmentation.max_thought_units)",
                     trace.source, stage)


def _tile(spans: list[Span], emb_of: dict[tuple[int, int], np.ndarray],
          params: Params) -> tuple[list[Span], dict[str, Any]]:
    """Layer 2 on one trace: valleys of the whole trace's similarity curve split the paragraphs ``scope`` allows."""
    tp = params.texttiling
    sentences = [x for s in spans for x in s.sentences]
    emb = np.stack([emb_of[x] for x in sentences]) if sentences else np.zeros((0, 1), np.float32)
    tau = texttiling.trace_threshold(texttiling.gap_similarities(emb, tp.window), tp.threshold_percentile)
    valleys = sorted(texttiling.boundaries(emb, tp.window, tp.prominence, tau))
    out: list[Span] = []
    n_soft = n_length = 0
    first = 0
    for s in spans:
        m = len(s.sentences)
        cuts: list[tuple[int, str]] = []
        if _is_tileable(s, params):
            inside = valleys[bisect.bisect_right(valleys, first):bisect.bisect_left(valleys, first + m)]
            soft = [k - first for k in inside]
            edges = [0, *soft, m]
            for a, b in zip(edges[:-1], edges[1:]):
                cuts += [(a + c, "length") for c in texttiling.even_cuts(b - a, tp.max_tu_sentences)]
            cuts = sorted(cuts + [(k, "texttiling") for k in soft])
        first += m
        if not cuts:
            out.append(s)
            continue
        edges = [(0, s.origin), *cuts, (m, "")]
        for (a, origin), (b, _) in zip(edges[:-1], edges[1:]):
            sents = s.sentences[a:b]
            out.append(Span(sents[0][0], s.end if b == m else sents[-1][1], s.kind, s.boundary if a == 0 else "none",
                            list(sents), origin))
        n_soft += sum(1 for _, o in cuts if o == "texttiling")
        n_length += sum(1 for _, o in cuts if o == "length")
    info = {"tau": tau if np.isfinite(tau) else None, "sentences": len(sentences), "new_boundaries": n_soft,
            "length_cuts": n_length}
    return out, info


def _over_layer2_caps(spans: list[Span], params: Params) -> str | None:
    """Why layer 2 must not run on this trace, from layer 1's spans alone (no encoding), or None.

    Layer 2 encodes every sentence, and it never makes fewer TUs than ceil(m / max_tu_sentences) of a
    tileable paragraph of m sentences (no part is longer), one of any other span: both bounds are known
    before the encoder runs, so an over-cap trace costs its segmentation only (seconds, not minutes).
    """
    tp = params.texttiling
    n_sent = sum(len(s.sentences) for s in spans)
    if n_sent > tp.max_sentences:
        return (f"too many sentences for layer 2: {n_sent} (maximum {tp.max_sentences}; "
                "texttiling.max_sentences), excluded before encoding")
    least = sum(-(-len(s.sentences) // tp.max_tu_sentences) if _is_tileable(s, params) else 1 for s in spans)
    if least > params.segmentation.max_thought_units:
        return (f"too many thought units: at least {least} after layer2 (maximum {params.segmentation.max_thought_units}; "
                "segmentation.max_thought_units), excluded before encoding")
    return None


def _is_tileable(s: Span, params: Params) -> bool:
    tp = params.texttiling
    return (s.kind == "paragraph" and (tp.scope == "paragraphs" or s.boundary == "none")
            and len(s.sentences) >= tp.min_sentences)


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
            spans = segment(tr.text, params.segmentation, lexicon)
        except Exception as exc:  # noqa: BLE001 - one trace must never stop the batch
            results[i] = _internal_error(tr.trace_id, "layer1", exc, tr.source)
            continue
        if len(spans) > params.segmentation.max_thought_units:
            results[i] = _too_many_thought_units(tr, len(spans), params, "layer1")
        else:
            layered[i] = spans
    t0 = timings.add("layer1", t0)

    tiling: dict[int, dict[str, Any]] = {}
    if layer2 and params.texttiling.enabled:
        for i in list(layered):  # cost caps from layer 1's counts, before anything is encoded
            reason = _over_layer2_caps(layered[i], params)
            if reason:
                results[i] = Exclusion(traces[i].trace_id, reason, traces[i].source, "layer2")
                del layered[i]
        wanted = list(dict.fromkeys((i, a, b) for i, spans in layered.items() for s in spans for a, b in s.sentences))
        texts = [traces[i].text[a:b] for i, a, b in wanted]
        vecs = encoder.encode(texts)
        t0 = timings.add("layer2_encode", t0)
        per_trace: dict[int, dict[tuple[int, int], np.ndarray]] = defaultdict(dict)
        for (i, a, b), v in zip(wanted, vecs):
            per_trace[i][(a, b)] = v
        for i in list(layered):
            try:
                layered[i], tiling[i] = _tile(layered[i], per_trace[i], params)
            except Exception as exc:  # noqa: BLE001
                results[i] = _internal_error(traces[i].trace_id, "layer2", exc, traces[i].source)
                del layered[i]
                continue
            if len(layered[i]) > params.segmentation.max_thought_units:
                results[i] = _too_many_thought_units(traces[i], len(layered[i]), params, "layer2")
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
                   "reasoning_offset": seg.trace.offset,
                   "soft_units": [i for i, s in enumerate(seg.spans) if s.origin != "structural"],
                   **({"dropped_think_blocks": seg.trace.dropped_blocks} if seg.trace.dropped_blocks else {}),
                   **(attrs or {})}
    g = build_graph(texts, [(s.start, s.end) for s in seg.spans], [s.boundary for s in seg.spans],
                    seg.embeddings, [count_tokens(text[s.start:s.end]) for s in seg.spans],
                    params.trajectory, params.cross_segment, params.classification, layers, graph_attrs)
    if timings is not None:
        timings.add("graph", t0)
    return g


def analyze(traces: Iterable[Trace | Exclusion], params: Params, encoder: Encoder, layers: str = "full",
            chunk_size: int = 64, timings: Timings | None = None,
            on_result: Callable[[TraceResult], None] | None = None,
            graph_attrs: dict[str, Any] | None = None) -> Iterator[TraceResult]:
    """Analyse traces (exclusions pass straight through) and yield one :class:`TraceResult` each, in order.

    ``layers`` is one of :data:`LAYER_SETTINGS` (``full``: every layer; the others are the ablation's)."""
    if layers not in LAYER_SETTINGS:
        raise ValueError(f"layers must be one of {LAYER_SETTINGS}, got {layers!r}")
    timings = timings if timings is not None else Timings()
    hedges = load_hedges(params.metrics.hedge_lexicon or None)
    chunk: list[Trace | Exclusion] = []

    def flush() -> Iterator[TraceResult]:
        real = [t for t in chunk if isinstance(t, Trace)]
        segmented = iter(segment_traces(real, params, encoder, layer2=(layers == "full"), timings=timings))
        for item in chunk:
            if isinstance(item, Exclusion):
                res = TraceResult(Trace(item.trace_id, "", source=item.source), exclusion=item)
            else:
                res = _finish(item, next(segmented), params, layers, timings, hedges, graph_attrs)
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


def _finish(trace: Trace, seg: SegmentedTrace | Exclusion, params: Params, layers: str, timings: Timings,
            hedges, graph_attrs) -> TraceResult:
    if isinstance(seg, Exclusion):
        return TraceResult(trace, exclusion=seg)
    try:
        graph = graph_of(seg, params, _GRAPH_LAYERS[layers], timings, graph_attrs)
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


def boundary_class_shares(graphs: Iterable[ThoughtGraph]) -> dict[str, float]:
    """Share of each boundary class among all TU boundaries (every TU but ``v0``) of ``graphs``.

    Classes are the graphs' final ones (after layer 3's branch and layer 4's convergence promotions), as
    in the paper's Appendix H.4; they sum to 1. Two more shares, of all boundaries too: ``soft``, the
    boundaries layer 2 opened whatever their final class (the graph's ``soft_units``; App. H.4 calls the
    pipeline's NONE class "soft TextTiling boundaries"), and ``none_soft``, the part of them still ``none``.
    """
    counts = dict.fromkeys((*BOUNDARY_CLASSES, "soft", "none_soft"), 0)
    total = 0
    for g in graphs:
        soft = set(g.attrs.get("soft_units", ()))
        for i, b in enumerate(g.boundaries[1:], start=1):
            counts[b] += 1
            counts["soft"] += i in soft
            counts["none_soft"] += b == "none" and i in soft
            total += 1
    return {k: (v / total if total else 0.0) for k, v in counts.items()}


def ablation(traces: list[Trace], params: Params, encoder: Encoder) -> list[dict[str, Any]]:
    """Paper Table 6: per cumulative layer setting, the mean of every metric and the boundary-class shares.

    One row per layer setting: ``layers``, ``n_traces`` (analysed), ``tus_per_trace``, the 19 metric means, then
    ``class_<name>`` for each share of :func:`boundary_class_shares`.
    """
    rows = []
    for layers in LAYER_SETTINGS:
        results = [r for r in analyze(traces, params, encoder, layers=layers) if r.metrics]
        row: dict[str, Any] = {"layers": layers, "n_traces": len(results)}
        if results:
            row["tus_per_trace"] = float(np.mean([r.graph.n for r in results]))
            for k in results[0].metrics:
                row[k] = float(np.mean([r.metrics[k] for r in results]))
            for k, v in boundary_class_shares(r.graph for r in results).items():
                row[f"class_{k}"] = v
        rows.append(row)
    return rows
