"""The five-dimensional cognitive profile (5D-CP, paper §3.5, eq. 1).

Each metric is z-scored globally over all traces of the corpus, ``z_m = (x_m - mean_m) / sd_m`` (population
standard deviation; a metric constant over the corpus scores 0), and a trace's score on dimension ``d`` is
the mean of the z-scores of the dimension's metrics: ``CP_d = (1/|M_d|) sum_{m in M_d} z_m``. A model's
profile is the mean over its traces. No sign is flipped (the paper's eq. 1): a high Efficiency score means
long, token-dense traces, as in the paper's reading of Phi-4-reasoning.

``exclude`` drops metrics before standardising, e.g. the length-confounded AT, ATU and TPI of Appendix G;
a dimension left with no metric is omitted.

``dimensions`` (config ``analysis.profile.dimensions``) says which metrics make up each dimension: the
name of a built-in map of :data:`thinkprobe.metrics.DIMENSION_MAPS` or a mapping. The paper contradicts
itself here: Table 2 calls all 19 metrics active (``table2``, the default), while Appendix G's numbers
only add up if Efficiency is the mean of TPI and RR alone, with AT and ATU as baselines (``app_g``).
Metrics in no dimension are still z-scored (their ``z_`` columns are reported) but score no dimension.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from .vocabulary import DIMENSION_MAPS, DIMENSIONS, METRIC_NAMES

ID_COLUMNS = ("trace_id", "model", "question_set", "question_id", "run", "domain")


def zscores(metrics: pd.DataFrame, columns: Iterable[str] = METRIC_NAMES) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Global z-scores of ``columns`` and the ``mean``/``sd`` used for each (indexed by metric)."""
    cols = list(columns)
    values = metrics[cols].astype(float)
    mean = values.mean(axis=0)
    sd = values.std(axis=0, ddof=0)
    safe = sd.where(sd > 0, 1.0)
    z = (values - mean) / safe
    z.loc[:, sd[sd <= 0].index] = 0.0
    stats = pd.DataFrame({"mean": mean, "sd": sd})
    stats.index.name = "metric"
    return z, stats


def dimension_map(spec: str | Mapping[str, Iterable[str]] | None = None) -> dict[str, tuple[str, ...]]:
    """The dimension map named (or given) by ``spec``; ``None`` is the default ``table2``.

    >>> dimension_map("app_g")["Efficiency"]
    ('TPI', 'RR')
    """
    if spec is None:
        return dict(DIMENSIONS)
    if isinstance(spec, str):
        if spec not in DIMENSION_MAPS:
            raise ValueError(f"unknown dimension map {spec!r}; built-in: {sorted(DIMENSION_MAPS)}")
        return dict(DIMENSION_MAPS[spec])
    return {dim: tuple(members) for dim, members in spec.items()}


def trace_profiles(metrics: pd.DataFrame, exclude: Iterable[str] = (),
                   dimensions: str | Mapping[str, Iterable[str]] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-trace 5D-CP: id columns, ``z_<metric>`` for each used metric, then one column per dimension."""
    excluded = set(exclude)
    unknown = excluded - set(METRIC_NAMES)
    if unknown:
        raise ValueError(f"unknown metric(s) to exclude: {sorted(unknown)}; known: {list(METRIC_NAMES)}")
    missing = [m for m in METRIC_NAMES if m not in metrics.columns]
    if missing:
        raise ValueError(f"the metrics table lacks column(s) {missing}")
    used = [m for m in METRIC_NAMES if m not in excluded]
    z, stats = zscores(metrics, used)
    ids = [c for c in ID_COLUMNS if c in metrics.columns]
    out = metrics[ids].copy().reset_index(drop=True)
    for m in used:
        out[f"z_{m}"] = z[m].to_numpy()
    for dim, members in dimension_map(dimensions).items():
        kept = [m for m in members if m in used]
        if kept:
            out[dim] = np.mean([z[m].to_numpy() for m in kept], axis=0) if len(metrics) else []
    return out, stats


def model_profiles(profiles: pd.DataFrame, by: str = "model") -> pd.DataFrame:
    """Mean 5D-CP per ``by`` group (default per model), with the number of traces behind each mean."""
    dims = [c for c in profiles.columns if c not in ID_COLUMNS and c != by and not c.startswith("z_")
            and c != "level"]
    grouped = profiles.groupby(by, sort=True, dropna=False)
    out = grouped[dims].mean()
    out.insert(0, "n_traces", grouped.size())
    return out.reset_index()
