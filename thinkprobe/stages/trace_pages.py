"""What the workflow's ``trace_pages`` rule does (rules/pages.smk): choose the units with a page, write them.

:func:`page_units` picks, at planning time, the first ``per_model`` units of every model (question set,
question, run order) and every unit with an answer-distribution trajectory; :func:`write_pages` writes one
page per unit. A unit that fails gets a page saying why (its traceback goes to the job's log): one unit
never costs the job.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any, Iterable, Mapping, Sequence

from ..units import UnitKey


def page_units(units: Iterable[UnitKey], per_model: int, trajectory_units: Iterable[UnitKey] = ()) -> list[str]:
    """Unit paths with a page: the first ``per_model`` of each model, then every trajectory unit (no repeats)."""
    chosen: list[str] = []
    by_model: dict[str, list[UnitKey]] = {}
    for key in sorted(set(units), key=lambda k: (k.model, k.question_set, k.question_id, (len(k.run), k.run))):
        by_model.setdefault(key.model, []).append(key)
    for keys in by_model.values():
        chosen += [k.path for k in keys[:per_model]]
    for key in trajectory_units:
        if key.path not in chosen:
            chosen.append(key.path)
    return chosen


def page_file(unit: str) -> str:
    return f"results/pages/{unit}.html"


def write_pages(units: Sequence[str], outputs: Sequence[str], results: str, analysis: Mapping[str, Any],
                tau: float, log=sys.stderr) -> dict[str, int]:
    """Write the page of each unit to the matching output; returns counts (ok, excluded, failed)."""
    from ..params import Params
    from ..view.trace_page import write_page
    from .page_sources import PageData, analyse_text, page_from_results, results_reference

    params = Params.from_dict({k: dict(v) for k, v in analysis.items()})
    encoder: list[Any] = []

    def analyse(trace, p):  # one encoder for every page of the job that needs a graph built now
        if not encoder:
            from ..encoder import load_encoder

            encoder.append(load_encoder(p.encoder))
        return analyse_text(trace, p, encoder[0])

    try:  # the study's reference, read once for every page
        reference = results_reference(results)
    except Exception:  # noqa: BLE001 - a table that cannot be read: each page below reports it
        reference = None
    counts = {"ok": 0, "excluded": 0, "failed": 0}
    for unit, out in zip(units, outputs):
        try:
            data = page_from_results(results, unit, tau=tau, params=params, analyse=analyse, reference=reference)
            counts["ok" if data.status == "ok" else "excluded"] += 1
        except Exception as exc:  # noqa: BLE001 - one unit never costs the job
            print(f"unit {unit}: page failed:", file=log)
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=log)
            data = PageData(title=unit, unit=unit, status="failed", reason=f"{type(exc).__name__}: {exc}")
            counts["failed"] += 1
        size = write_page(data, out)
        print(f"{out}: {data.status}, {size / 1024:.0f} KiB", file=log)
    return counts


def model_of(unit: str) -> str:
    """The model of a unit path ``model/question_set/question_id/run``."""
    return UnitKey.from_path(unit).model
