"""The study's graphs and metrics under the other typer, beside the study's own (``validity.compare_typers``;
rules/validity.smk, docs/validity.md "Both typers in one study"), and the side-by-side table they feed.

The other typer's unit files lie in their own stage folders, ``results/graphs-<typer>/`` and
``results/metrics-<typer>/`` (manifests under ``results/batches/graphs-<typer>/`` ...): the study's own
``graphs``/``metrics`` folders, and every result stored there, stay as they are. A graph job under the other
typer reads the study's segments and the embeddings beside them (the encoder never runs again); its metrics
job reads its graphs and the same embeddings. Only ``classification.typer`` differs from the study's
analysis parameters.
"""

from __future__ import annotations

from typing import Any, Sequence

from .batches import outdate_stale, unit_files, write_manifest
from .graph import graph_shard
from .metrics import metrics_shard
from .unitfiles import embeddings_files


def typer_stage(stage: str, typer: str) -> str:
    """The stage folder of ``stage`` (``graphs``, ``metrics``) under the comparison typer ``typer``.

    >>> typer_stage("graphs", "learned")
    'graphs-learned'
    """
    return f"{stage}-{typer}"


def other_typers(typer: str) -> list[str]:
    """The typers the study is compared with: every typer of :data:`thinkprobe.graph.TYPERS` but its own."""
    from ..graph import TYPERS

    return [t for t in TYPERS if t != typer]


def with_typer(analysis: dict[str, Any], typer: str) -> dict[str, Any]:
    """The analysis sections ``analysis`` with ``classification.typer`` set to ``typer`` (nothing else changes)."""
    return {**analysis, "classification": {**analysis["classification"], "typer": typer}}


def graph_batch(units: Sequence[str], typer: str, analysis: dict[str, Any], manifest: str,
                inputs: Sequence[str]) -> tuple[dict[str, int], list[str]]:
    """Rule ``graph_typer``: the graphs of ``units`` under ``typer`` (``analysis`` already carries it), from the
    study's segments and embeddings; returns the counts and the input manifests marked out of date."""
    segments, graphs = unit_files("segments", units), unit_files(typer_stage("graphs", typer), units)
    counts = graph_shard(segments, embeddings_files(segments), graphs, analysis)
    write_manifest(graphs, manifest)
    return counts, outdate_stale(inputs)


def metrics_batch(units: Sequence[str], typer: str, analysis: dict[str, Any], manifest: str,
                  inputs: Sequence[str]) -> tuple[dict[str, int], list[str]]:
    """Rule ``metrics_typer``: the 19 metrics of the graphs of ``units`` under ``typer``."""
    graphs = unit_files(typer_stage("graphs", typer), units)
    metrics = unit_files(typer_stage("metrics", typer), units)
    counts = metrics_shard(graphs, embeddings_files(graphs), metrics, analysis)
    write_manifest(metrics, manifest)
    return counts, outdate_stale(inputs)


def comparison_stage(profiles: Sequence[str], metrics: Sequence[str], typers: Sequence[str], out_path: str):
    """Rule ``typer_comparison``: :func:`thinkprobe.validity.typer_comparison.compare` of the profile and metrics
    tables under the study's typer and the other (in the order of ``typers``), written with its provenance."""
    import pandas as pd

    from ..codedeps import code_modules
    from ..outputs import provenance, read_table_metadata, write_table
    from ..validity.typer_comparison import compare

    tables = [pd.read_parquet(p) for p in (*profiles, *metrics)]
    table = compare(*tables, typers=typers)
    prov = provenance(code_modules(compare), {"typers": list(typers)}, [*profiles, *metrics],
                      source_provenance=[read_table_metadata(p) for p in profiles])
    write_table(out_path, table, prov)
    return table
