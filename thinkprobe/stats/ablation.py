"""Pipeline layer ablation (paper section 5.4, Table 6): mean metric values under the four cumulative layer
settings (column ``layers``).

``l1`` structural boundaries only (SEQ backbone), ``l3`` + the semantic trajectory, ``l4`` + cross-segment
arcs, ``full`` + layer-2 TextTiling (:func:`thinkprobe.pipeline.ablation` runs them). The paper uses a
held-out set of 50 traces; here a sample of ``n`` traces drawn with a fixed seed from the study's analysed
traces (sorted by unit id first, so the sample depends only on the set of traces, the seed and ``n``).

Besides the means (``ablation.parquet``, the paper's table), the per-trace values are kept
(``ablation_traces.parquet``: one row per layer setting and trace): the checks against Table 6 compare layer
settings on the same traces (paired), and their intervals resample those traces (:mod:`.claims`).
"""

from __future__ import annotations

import random
from typing import Sequence

import pandas as pd

from ..encoder import Encoder
from ..vocabulary import METRIC_NAMES
from ..params import Params
from ..pipeline import LAYER_SETTINGS, analyze
from ..traces import Trace

TRACE_COLUMNS = ["layers", "trace_id", "model", "question_id", "run", "domain", "tus", *METRIC_NAMES]


def sample_traces(traces: Sequence[Trace], n: int, seed: int = 42) -> list[Trace]:
    """``n`` traces (all when fewer) chosen reproducibly, in unit-id order."""
    ordered = sorted(traces, key=lambda t: t.trace_id)
    if n >= len(ordered):
        return ordered
    picked = set(random.Random(seed).sample(range(len(ordered)), n))
    return [t for i, t in enumerate(ordered) if i in picked]


def ablation_trace_table(traces: Sequence[Trace], params: Params, encoder: Encoder) -> pd.DataFrame:
    """One row per layer setting and analysed trace: ids, the number of TUs and the 19 metrics
    (:data:`TRACE_COLUMNS`)."""
    rows = []
    for layers in LAYER_SETTINGS:
        for r in analyze(list(traces), params, encoder, layers=layers):
            if r.metrics:
                t = r.trace
                rows.append({"layers": layers, "trace_id": t.trace_id, "model": t.model, "question_id": t.question_id,
                             "run": t.run, "domain": t.domain, "tus": r.graph.n, **r.metrics})
    return pd.DataFrame(rows, columns=TRACE_COLUMNS)


def ablation_means(per_trace: pd.DataFrame) -> pd.DataFrame:
    """One row per layer setting (in pipeline order): ``layers, n_traces`` and the mean of each of the 19 metrics."""
    rows = []
    for layers in LAYER_SETTINGS:
        part = per_trace[per_trace["layers"] == layers]
        rows.append({"layers": layers, "n_traces": len(part),
                     **{m: float(part[m].astype(float).mean()) if len(part) else float("nan") for m in METRIC_NAMES}})
    return pd.DataFrame(rows, columns=["layers", "n_traces", *METRIC_NAMES])
