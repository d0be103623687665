"""Aggregate stages: the metrics and exclusions tables, the 5D-CP table, and HTML tables for the report."""

from __future__ import annotations

import pandas as pd

from ..codedeps import code_modules
from ..vocabulary import METRIC_NAMES
from ..outputs import atomic_write_text, provenance, read_table_metadata, sha256_file, write_table
from ..profile import model_profiles, trace_profiles
from ..units import unit_path
from .unitfiles import UnitFileError, read_unit, unit_from_file

ID_COLUMNS = ["trace_id", "model", "question_set", "question_id", "run", "domain", "record_id"]
EXCLUSION_COLUMNS = ["trace_id", "model", "question_set", "question_id", "run", "stage", "reason", "source"]


def aggregate(metric_paths: list[str], problems: list[dict[str, str]], out_metrics: str,
              out_exclusions: str) -> tuple[int, int]:
    """One row per analysed unit (ids + 19 metrics); one row per excluded or missing unit and input problem.
    Units ``absent`` from their question set's grid are in neither table.

    ``trace_id`` is the unit's path (its file-safe ids); ``model``, ``question_id``, ``run`` and
    ``record_id`` are the ids as the input states them.
    """
    rows, excluded = [], []
    for path in metric_paths:
        try:
            doc = read_unit(path, outdate=True)
        except UnitFileError as exc:  # unreadable or altered: that unit is excluded, the tables go on
            unit = unit_from_file(path)
            excluded.append({"trace_id": unit_path(unit), **unit, "stage": "aggregate", "reason": str(exc),
                             "source": ""})
            continue
        ids = {**doc["unit"], **doc.get("ids", {})}
        unit_id = unit_path(doc["unit"])
        if doc["status"] == "absent":  # outside its question set's grid: no unit of the study
            continue
        if doc["status"] == "ok":
            rows.append({"trace_id": unit_id, **{c: ids.get(c, "") for c in ID_COLUMNS[1:]}, **doc["metrics"]})
        else:
            excluded.append({"trace_id": unit_id, **{c: ids[c] for c in ("model", "question_set", "question_id",
                                                                        "run")},
                             "stage": doc.get("stage") or "", "reason": doc.get("reason") or "",
                             "source": ids.get("source", "")})
    for p in problems:
        excluded.append({"trace_id": p["trace_id"], "model": "", "question_set": p.get("question_set", ""),
                         "question_id": "", "run": "",
                         "stage": p.get("stage", "input"), "reason": p["reason"], "source": p.get("source", "")})
    prov = provenance(code_modules(aggregate), {}, metric_paths)
    write_table(out_metrics, pd.DataFrame(rows, columns=ID_COLUMNS + list(METRIC_NAMES)), prov)
    write_table(out_exclusions, pd.DataFrame(excluded, columns=EXCLUSION_COLUMNS), prov)
    return len(rows), len(excluded)


def profiles_stage(metrics_path: str, out_path: str, analysis: dict) -> pd.DataFrame:
    """Rule ``profiles``: :func:`profiles_table` with the dimension map of the config's ``analysis.profile``
    (read through :class:`~thinkprobe.params.Params`, so its default and validation are the library's)."""
    from ..params import Params

    return profiles_table(metrics_path, out_path, dimensions=Params.from_dict(dict(analysis)).profile.dimensions)


def profiles_table(metrics_path: str, out_path: str, exclude: tuple[str, ...] = (),
                   dimensions: str | dict | None = None) -> pd.DataFrame:
    """The 5D-CP per trace (``level = trace``) and per model (``level = model``), in one table.

    ``dimensions`` is the dimension map (``analysis.profile.dimensions``: ``table2``, ``app_g`` or a mapping).
    """
    metrics = pd.read_parquet(metrics_path)
    prov = provenance(code_modules(profiles_stage), {"excluded_metrics": list(exclude), "dimensions": dimensions or "table2"},
                      [metrics_path],
                      source_provenance=read_table_metadata(metrics_path))
    if metrics.empty:
        table = pd.DataFrame(columns=["level", "trace_id", "model", "n_traces"])
    else:
        traces, stats = trace_profiles(metrics, exclude, dimensions)
        traces.insert(0, "level", "trace")
        models = model_profiles(traces)
        models.insert(0, "level", "model")
        table = pd.concat([traces, models], ignore_index=True)
        prov["zscore"] = {m: {"mean": float(stats.loc[m, "mean"]), "sd": float(stats.loc[m, "sd"])}
                          for m in stats.index}
    write_table(out_path, table, prov)
    return table


def html_table(table_path: str, out_path: str, title: str, max_rows: int = 5000,
               links: dict[str, str] | None = None) -> None:
    """A self-contained, sortable and filterable HTML page of a Parquet table with its provenance, for the
    Snakemake report (:func:`thinkprobe.view.tables.table_page`); ``links`` maps unit ids to trace pages."""
    from ..view.tables import table_page

    df = pd.read_parquet(table_path)
    atomic_write_text(out_path, table_page(df, title, read_table_metadata(table_path), links, max_rows,
                                           source=(table_path, sha256_file(table_path))))
