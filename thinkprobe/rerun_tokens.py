"""Rerun tokens: shards whose input changed after the workflow was planned, to import again on the next run.

The import job finds each planned record again by its content hash. When an input file was edited between
planning and the job (an editor saving, a sync tool), the record is not found: the unit is written as
``excluded`` with the reason, so the batch goes on, but that exclusion is not a finished output. The job
registers the shard in ``results/.retry/{question_set}/{question_id}.json`` with a new token; the next
planning reads these tokens (:func:`pending`) and passes a shard's token to its import job as a parameter,
so Snakemake reruns exactly that shard (and what follows from it), whatever the input then holds. A shard
whose retry succeeds keeps its token, so later runs do not rerun it again.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Iterable

ROOT = Path("results") / ".retry"


def registry(question_set: str, question_id: str, base: str | os.PathLike = ".") -> Path:
    return Path(base) / ROOT / question_set / f"{question_id}.json"


def register(question_set: str, question_id: str, units: Iterable[str], base: str | os.PathLike = ".") -> None:
    """Record that these units of a shard must be imported again on the next run (atomically, new token)."""
    from .outputs import write_json

    write_json(registry(question_set, question_id, base),
               {"token": f"{time.time_ns()}-{os.getpid()}", "units": sorted(units),
                "reason": "input changed after the workflow was planned"})


def pending(base: str | os.PathLike = ".") -> dict[tuple[str, str], str]:
    """``{(question_set, question_id): token}`` of every registered shard (read at planning)."""
    root = Path(base) / ROOT
    out: dict[tuple[str, str], str] = {}
    if not root.is_dir():
        return out
    for path in root.glob("*/*.json"):
        try:
            out[(path.parent.name, path.stem)] = str(json.loads(path.read_text(encoding="utf-8"))["token"])
        except (OSError, ValueError, KeyError, TypeError):
            out[(path.parent.name, path.stem)] = "unreadable"
    return out
