"""One summary page per model for the report: its 5D-CP, its trajectory mechanisms, its exclusions by reason.

The profile is the model's row of ``results/tables/profiles.parquet`` (the mean 5D-CP of its traces, paper
§3.5 eq. 1), drawn on the same fixed-scale radar as a trace page; the mechanism shares are those of its
traces in ``results/trajectories/traces.parquet`` (paper App. B), when the study has trajectories; the
exclusions are its rows of ``results/tables/exclusions.parquet`` counted by reason (the stage and the
reason's text before its first colon, so that "missing: ..." units group together). The markup is the
template ``model_summary.html.j2`` (:mod:`thinkprobe.view.templating`).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..vocabulary import DIMENSIONS
from .svg import radar
from .tables import format_number
from .templating import render


def _names(model: str | Iterable[str]) -> list[str]:
    return [model] if isinstance(model, str) else list(model)


def exclusion_reasons(exclusions, model: str | Iterable[str]):
    """A model's exclusions (``model``: its id, or its ids as written and file-safe) counted by stage and reason
    (the reason's text up to its first colon)."""
    import pandas as pd

    rows = exclusions[exclusions["model"].isin(_names(model))]
    if rows.empty:
        return pd.DataFrame(columns=["stage", "reason", "units"])
    kind = rows["reason"].fillna("").map(lambda r: r.split(":", 1)[0].strip() or "(no reason)")
    out = rows.assign(kind=kind).groupby(["stage", "kind"], sort=True).size().rename("units").reset_index()
    return out.rename(columns={"kind": "reason"}).sort_values("units", ascending=False, kind="stable")


def mechanism_shares(traces, model: str | Iterable[str]) -> dict[str, float]:
    """Share of each mechanism among a model's trajectory traces that have one (empty without)."""
    if traces is None or traces.empty or "mechanism" not in traces.columns:
        return {}
    mech = traces.loc[traces["model"].isin(_names(model)), "mechanism"].dropna()
    return {} if mech.empty else {str(k): float(v) for k, v in mech.value_counts(normalize=True).sort_index().items()}


def _rows(table) -> list[list[tuple[bool, Any]]]:
    """Each cell as (is a number, what to write): numbers rounded (:func:`format_number`), the rest as is."""
    return [[(True, format_number(v)) if isinstance(v, (int, float)) else (False, v) for v in rec]
            for rec in table.itertuples(index=False, name=None)]


def model_ids(file_names: Sequence[str], *tables) -> dict[str, str]:
    """The id as written of each model file name (:func:`~thinkprobe.traces.safe_id` of it), from the ``model``
    columns of ``tables``; a file name no row writes otherwise stands for itself.

    The study's tables hold the ids as the inputs state them (``Modell ä``, ``org/model``); the pages' file
    names are their file-safe forms. ``safe_id`` is injective, so each file name has at most one id as written.

    >>> import pandas as pd
    >>> model_ids(["Modell_a-4e37e74406", "m"], pd.DataFrame({"model": ["Modell ä", "m", ""]}))
    {'Modell_a-4e37e74406': 'Modell ä', 'm': 'm'}
    """
    from ..traces import safe_id

    written: dict[str, str] = {}
    for table in tables:
        if table is None or "model" not in getattr(table, "columns", ()):
            continue
        for value in table["model"].dropna().unique():
            if str(value):
                written.setdefault(safe_id(str(value)), str(value))
    return {name: written.get(name, name) for name in file_names}


def model_page(model: str, profiles, exclusions, traces=None, pages: Mapping[str, str] | None = None,
               dimensions: Sequence[str] = tuple(DIMENSIONS), file_name: str | None = None) -> str:
    """The summary page of one model (see the module docstring).

    ``model`` is the model's id as written, what the tables' ``model`` columns hold and what the page shows;
    ``file_name`` its file-safe name (default :func:`~thinkprobe.traces.safe_id` of it), what the unit paths of
    ``pages`` start with. A row whose ``model`` is the file name itself (a ``missing`` unit has no id as
    written) counts too.
    """
    from ..traces import safe_id

    file_name = file_name or safe_id(model)
    names = {model, file_name}
    prof = profiles[(profiles["level"] == "model") & (profiles["model"] == model)] if len(profiles) else profiles
    profile = None
    if len(prof):
        row = prof.iloc[0]
        scores = {d: (float(row[d]) if d in row and row[d] == row[d] else None) for d in dimensions}
        profile = {"n_traces": int(row["n_traces"]), "radar": radar(scores)}
    reasons = exclusion_reasons(exclusions, names)
    return render("model_summary.html.j2", model=model, profile=profile,
                  mechanisms=[(k, f"{v:.0%}") for k, v in mechanism_shares(traces, names).items()],
                  excluded=int(reasons["units"].sum()) if len(reasons) else 0,
                  reasons=[] if reasons.empty else _rows(reasons),
                  pages=[(u, href) for u, href in (pages or {}).items() if u.split("/")[0] == file_name])


def write_model_pages(models: Sequence[str], outputs: Sequence[str], profiles_path: str, exclusions_path: str,
                      traces_path: str | None = None, pages: Mapping[str, str] | None = None) -> int:
    """Write the summary page of each model (its file-safe name in ``models``) to the matching output."""
    import pandas as pd

    from ..outputs import atomic_write_text

    profiles, exclusions = pd.read_parquet(profiles_path), pd.read_parquet(exclusions_path)
    traces: Any = pd.read_parquet(traces_path) if traces_path else None
    written = model_ids(models, profiles, exclusions, traces)
    for model, out in zip(models, outputs):
        atomic_write_text(out, model_page(written[model], profiles, exclusions, traces, pages, file_name=model))
    return len(outputs)
