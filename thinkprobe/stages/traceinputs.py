"""A rule's trace inputs as trace files, for the statistics that re-read every trace (stats_ablation,
stats_sensitivity).

A rule that reads trace files waits for the jobs that write them, through their manifests: an imported unit's
trace file is written by the ``import_traces`` job of its analysis batch (manifest
``results/batches/traces/<model>/<question_set>/<batch>.json``, :mod:`thinkprobe.stages.batches`), a collected
unit's by its collection job (:mod:`thinkprobe.tracefiles`). Kept apart from :mod:`thinkprobe.tracefiles`, which
the collection and sampling jobs hash into their code identity: this module changes with the analysis alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from ..tracefiles import is_manifest, manifest_traces
from .batches import BATCHES, listed_files


def is_import_manifest(path: str | os.PathLike) -> bool:
    """Whether an input path is an import job's manifest.

    >>> is_import_manifest("results/batches/traces/m/s/b0000.json"), is_import_manifest("results/traces/m/s/q/1.json")
    (True, False)
    """
    parts = Path(path).parts
    return len(parts) >= 6 and parts[-6:-3] == (*Path(BATCHES).parts, "traces")


def trace_files(inputs: Iterable[str | os.PathLike]) -> list[str]:
    """The trace files of a rule's trace inputs: a collection or import manifest stands for the trace files of
    its batch, any other path for itself. Order: as given, a manifest's units in its order."""
    out: list[str] = []
    for path in inputs:
        if is_manifest(path):
            out.extend(manifest_traces(path))
        elif is_import_manifest(path):
            out.extend(listed_files([path]))
        else:
            out.append(str(path))
    return out
