"""Pipeline layer ablation (paper section 5.4, Table 6): mean metric values under the four cumulative stages.

``l1`` structural boundaries only (SEQ backbone), ``l3`` + the semantic trajectory, ``l4`` + cross-segment
arcs, ``full`` + layer-2 TextTiling (:func:`thinkprobe.pipeline.ablation` runs them). The paper uses a
held-out set of 50 traces; here a sample of ``n`` traces drawn with a fixed seed from the study's analysed
traces (sorted by unit id first, so the sample depends only on the set of traces, the seed and ``n``).
"""

from __future__ import annotations

import random
from typing import Sequence

import pandas as pd

from ..encoder import Encoder
from ..vocabulary import METRIC_NAMES
from ..params import Params
from ..pipeline import ablation
from ..traces import Trace


def sample_traces(traces: Sequence[Trace], n: int, seed: int = 42) -> list[Trace]:
    """``n`` traces (all when fewer) chosen reproducibly, in unit-id order."""
    ordered = sorted(traces, key=lambda t: t.trace_id)
    if n >= len(ordered):
        return ordered
    picked = set(random.Random(seed).sample(range(len(ordered)), n))
    return [t for i, t in enumerate(ordered) if i in picked]


def ablation_table(traces: Sequence[Trace], params: Params, encoder: Encoder) -> pd.DataFrame:
    """One row per stage: ``stage, n_traces`` and the mean of each of the 19 metrics."""
    rows = ablation(list(traces), params, encoder)
    return pd.DataFrame(rows, columns=["stage", "n_traces", *METRIC_NAMES])
