"""Where a unit's trace file lies, and a collection job's manifest as the index of the trace files it wrote.

Every unit has one trace file, ``results/traces/<model>/<question_set>/<question_id>/<run>.json``. An imported
unit's file is written by ``import_traces`` (a Snakemake output). A collected unit's file is written by the
collection job that generated the unit (rule ``collect``, one job per model x question set x batch), not by a
job of its own: a paper-sized study has tens of thousands of units, and one Snakemake job per unit would cost
minutes of planning and days of login-node work. Snakemake therefore tracks a collected batch through its
*manifest* (``results/collect/<model>/<question_set>/<batch>.json``), which lists every unit of the batch with
the trace file written for it; a rule that reads collected trace files takes the manifests as its input and
finds the files with :func:`trace_files`.

A leaf module (no engine, no pandas): the analysis and statistics scripts use it without depending on the
collection code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Mapping

TRACES = "results/traces"
COLLECT = "results/collect"


def trace_file(unit: str | Mapping[str, str], root: str = TRACES) -> str:
    """The trace file of a unit, given as ``model/question_set/question_id/run`` or as a mapping.

    >>> trace_file("m/s/q1/2")
    'results/traces/m/s/q1/2.json'
    """
    if not isinstance(unit, str):
        unit = "/".join(str(unit[k]) for k in ("model", "question_set", "question_id", "run"))
    return f"{root}/{unit}.json"


def is_manifest(path: str | os.PathLike) -> bool:
    """Whether an input path is a collection manifest (``results/collect/<model>/<set>/<batch>.json``).

    >>> is_manifest("results/collect/m/s/c0000.json"), is_manifest("results/traces/m/s/q/1.json")
    (True, False)
    """
    parts = Path(path).parts
    return len(parts) >= 5 and parts[-5:-3] == ("results", "collect") and parts[-1].startswith("c")


def manifest_traces(path: str | os.PathLike) -> list[str]:
    """The trace files a collection manifest lists, in the batch's unit order (question, then run)."""
    with open(path, encoding="utf-8") as fh:
        units = json.load(fh)["units"]
    return [entry.get("trace") or trace_file(unit) for unit, entry in units.items() if entry.get("store")]


def trace_files(inputs: Iterable[str | os.PathLike]) -> list[str]:
    """A rule's trace inputs as trace files: a manifest stands for the trace files of its batch, any other
    path for itself (an imported unit's trace file). Order: as given, a manifest's units in its order."""
    out: list[str] = []
    for path in inputs:
        out.extend(manifest_traces(path) if is_manifest(path) else [str(path)])
    return out


def unit_of(path: str | os.PathLike) -> str:
    """``model/question_set/question_id/run`` of any per-unit file (``results/<stage>/<m>/<s>/<q>/<r>.<ext>``).

    >>> unit_of("results/segments/m/s/q1/2.json")
    'm/s/q1/2'
    """
    return "/".join(Path(path).with_suffix("").parts[-4:])


def unit_trace_files(unit_files: Iterable[str | os.PathLike], absent: Iterable[str] = (),
                     root: str = TRACES) -> list[str | None]:
    """The trace file of each unit of a shard, given the shard's files of a later stage; None for a unit in
    ``absent`` (outside its question set's grid: a collected set's absent unit has no trace file)."""
    absent = set(absent)
    return [None if unit_of(p) in absent else trace_file(unit_of(p), root) for p in unit_files]
