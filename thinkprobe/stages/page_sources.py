"""What a trace page shows, gathered from a results folder (by unit id) or from one trace file.

:func:`page_from_results` reads the workflow's per-unit files of one unit (``results/graphs/<unit>.json``,
``results/metrics/<unit>.json``), the study's metrics table for the z-score reference, and, when the unit
has an answer-distribution trajectory, its labelled record (``results/trajectories/<model>/<qset>/*.json``)
and continuation document (``results/continuations/...``, for the checkpoints' character offsets).
:func:`page_from_trace` analyses one trace of a trace file on the fly (the full pipeline) and shows it
against the bundled reference.

Both return a :class:`PageData`; :mod:`thinkprobe.view.trace_page` turns it into HTML. The structure x dynamics
intervals are computed with :func:`thinkprobe.trajectories.join.join_trace` on the graph the page shows,
so what the page flags is what the join counts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from ..boundedjson import read_json_bounded
from ..units import UnitKey, unit_path
from ..view.pagedata import PageData
from ..view.reference import bundled_reference, study_reference


class ShowError(ValueError):
    """The unit or trace cannot be shown; the message names the file or id."""


def _read_json(path: Path) -> dict[str, Any]:
    from .unitfiles import MAX_UNIT_BYTES

    try:
        return read_json_bounded(path, MAX_UNIT_BYTES)
    except (OSError, ValueError) as exc:
        raise ShowError(f"{path}: cannot read: {exc}") from exc


def _read_unit(path: Path) -> dict[str, Any]:
    """A unit file the page shows, verified before it is shown (its digest: :mod:`thinkprobe.integrity`): an
    altered graph or metrics file is an error naming it, never a page of what someone wrote into it."""
    from .unitfiles import UnitFileError, read_unit

    try:
        return read_unit(path)
    except UnitFileError as exc:
        raise ShowError(str(exc)) from exc


MAX_UNIT_PARTS = 24  # an id as written with more '/' than this is not looked for (C(23, 3) = 1,771 readings)


def resolve_unit(results: str | Path, unit: str) -> UnitKey:
    """The unit of a results folder named by ``unit``: its file-safe path, or its ids as written joined by
    ``/`` (``Modell ä/demo/q1/1``, ``org/model/demo/q1/1``).

    An id as written may hold ``/`` itself, so every way of reading ``unit`` as four ids is tried; each is
    turned into file names with :func:`~thinkprobe.traces.safe_id` (injective) and kept when the results
    folder has that unit's graph file. One match is the unit; none, or more than one, is a :class:`ShowError`
    naming the candidates.
    """
    from itertools import combinations

    from ..traces import safe_id

    results = Path(results)
    parts = unit.split("/")
    if len(parts) < 4 or len(parts) > MAX_UNIT_PARTS:
        raise ShowError(f"{unit!r}: a unit id is model/question_set/question_id/run, the ids as written or as "
                        "file names (or give a trace file)")
    keys: list[UnitKey] = []
    if len(parts) == 4 and all(parts):  # the file-safe path as given (a name safe_id would change, e.g. a long one)
        keys.append(UnitKey(*parts))
    for cut in combinations(range(1, len(parts)), 3):
        bounds = list(zip((0, *cut), (*cut, len(parts))))
        ids = ["/".join(parts[a:b]) for a, b in bounds]
        if all(ids):
            keys.append(UnitKey(*(safe_id(i) for i in ids)))
    found = list(dict.fromkeys(k for k in keys if (results / "graphs" / f"{k.path}.json").is_file()))
    if len(found) == 1:
        return found[0]
    if found:
        raise ShowError(f"{unit!r} names {len(found)} units of {results} (ids that hold '/'): "
                        + ", ".join(k.path for k in found) + "; give one of these file-safe paths")
    raise ShowError(f"{unit!r}: no graph file of this unit in {results} (tried "
                    + ", ".join(str(results / "graphs" / f"{k.path}.json") for k in list(dict.fromkeys(keys))[:4])
                    + (", ..." if len(set(keys)) > 4 else "") + "; is it a thinkprobe results folder, and the unit "
                    "in its study?)")


def find_trajectory(results: Path, key: UnitKey) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The labelled trajectory record and the continuation document of a unit, or None when it has none."""
    folder = results / "trajectories" / key.model / key.question_set
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        for rec in _read_json(path).get("records", []):
            if unit_path(rec, missing="None") == key.path:
                cont = results / "continuations" / key.model / key.question_set / path.name
                for doc in _read_json(cont).get("documents", []) if cont.exists() else []:
                    if doc and unit_path(doc["unit"]) == key.path:
                        return rec, doc
                raise ShowError(f"{cont}: no continuation document of {key.path} (its record is in {path})")
    return None


def trajectory_view(record: Mapping[str, Any], doc: Mapping[str, Any], graph: Mapping[str, Any] | None,
                    tau: float = 0.8) -> dict[str, Any]:
    """The trajectory part of a page: checkpoints (position, character offset, distribution), gold,
    t_commit, mechanism (:func:`thinkprobe.trajectories.aggregates.trace_summary`) and the structure x
    dynamics intervals flagged by a BACK, CRT or SYN unit (:func:`thinkprobe.trajectories.join.join_trace`)."""
    from ..trajectories.aggregates import trace_summary
    from ..trajectories.distributions import state_from_labels
    from ..trajectories.join import join_trace

    view: dict[str, Any] = {"status": record.get("status"), "reason": record.get("reason"),
                            "gold": record.get("gold"), "task": record.get("task"), "checkpoints": [],
                            "intervals": [], "tau": tau}
    if record.get("status") != "ok":
        return view
    offsets = {c["checkpoint_index"]: c.get("char_offset") for c in doc.get("checkpoints", [])}
    for c in sorted(record["checkpoints"], key=lambda c: c["checkpoint_index"]):
        if c.get("labels"):
            view["checkpoints"].append({"index": c["checkpoint_index"], "prefix_tokens": c.get("prefix_tokens"),
                                        "char_offset": offsets.get(c["checkpoint_index"]),
                                        "state": {("" if k is None else str(k)): v
                                                  for k, v in state_from_labels(c["labels"]).items()}})
    try:
        row = trace_summary(record, tau=tau)
    except ValueError as exc:
        view["reason"] = str(exc)
        return view
    view.update({k: row.get(k) for k in ("mechanism", "t_commit", "t_commit_index", "committed_answer",
                                         "correct", "endpoint_label", "switches", "path_length", "cot_tokens")})
    if graph is not None and all(o is not None for o in offsets.values()):
        view["intervals"] = [{"checkpoint_index": r["checkpoint_index"], "char_start": r["char_start"],
                              "char_end": r["char_end"], "tv": r["tv"], "switch": r["switch"],
                              "markers": [m for m in ("BACK", "CRT", "SYN") if r[m]]}
                             for r in join_trace(record, offsets, graph)]
    return view


def graph_matches_text(graph: Mapping[str, Any], text: str) -> bool:
    """Whether every node's offsets point at its own text in ``text`` (so checkpoint offsets align)."""
    return all(text[n["start"]:n["end"]] == n["text"] for n in graph["nodes"])


def analyse_text(trace, params, encoder=None) -> tuple[dict[str, Any] | None, dict[str, float], str | None]:
    """The full pipeline on one :class:`~thinkprobe.traces.Trace`: (node-link graph, metrics, exclusion reason)."""
    from ..encoder import load_encoder
    from ..pipeline import analyze

    encoder = encoder or load_encoder(params.encoder)
    res = next(iter(analyze([trace], params, encoder, layers="full")))
    if res.exclusion:
        return None, {}, res.exclusion.reason
    return res.graph.to_node_link(), dict(res.metrics), None


def results_reference(results: str | Path) -> dict[str, Any]:
    """The z-score reference of a results folder: its metrics table, else the bundled reference."""
    table = Path(results) / "tables" / "metrics.parquet"
    return study_reference(table) if table.exists() else bundled_reference()


def page_from_results(results: str | Path, unit: str, tau: float = 0.8, params=None,
                      analyse: Callable | None = None, reference: Mapping[str, Any] | None = None) -> PageData:
    """The page of one unit of a results folder (``reference``: :func:`results_reference`, when the caller
    makes many pages of one folder; else read here).

    When the unit has a trajectory whose reasoning text is not the text the workflow's graph was built on
    (offsets would not align), the graph of the trajectory's reasoning is built on the fly (``params``: the
    analysis parameters, default the paper's) so that checkpoints, units and flagged intervals agree.
    """
    results = Path(results)
    key = resolve_unit(results, unit)
    gpath, mpath = results / "graphs" / f"{key.path}.json", results / "metrics" / f"{key.path}.json"
    gdoc = _read_unit(gpath)
    mdoc = _read_unit(mpath) if mpath.exists() else {}
    ids = dict(gdoc.get("ids") or key.as_dict())
    page = PageData(title="/".join(str(ids.get(k) or v) for k, v in key.as_dict().items()), unit=key.path,
                    status=mdoc.get("status", gdoc["status"]), reason=mdoc.get("reason", gdoc.get("reason")),
                    ids=ids, graph=gdoc.get("graph"),
                    metrics=dict(mdoc.get("metrics") or {}),
                    reference=dict(reference) if reference is not None else results_reference(results),
                    provenance={"graph": gdoc.get("provenance", {}), "metrics": mdoc.get("provenance", {})})
    found = find_trajectory(results, key)
    if found:
        record, doc = found
        text = (doc.get("reasoning") or {}).get("text")
        graph = page.graph
        if isinstance(text, str) and (graph is None or not graph_matches_text(graph, text)):
            from ..params import Params
            from ..traces import Trace

            graph, metrics, reason = (analyse or analyse_text)(
                Trace(key.path, text, key.model, key.question_id, key.run), params or Params())
            page.graph, page.metrics = graph, metrics or page.metrics
            page.provenance["note"] = ("graph and metrics of the trajectory's realized reasoning, analysed when "
                                       "the page was built" + (f" (excluded: {reason})" if reason else ""))
            if reason:
                page.status, page.reason = "excluded", reason
        page.trajectory = trajectory_view(record, doc, graph, tau)
        page.provenance["trajectory"] = {"record": record.get("provenance", {}), "sampling": doc.get("sampling", {})}
    return page


def page_from_trace(path: str | Path, trace_id: str | None = None, params=None, encoder=None) -> PageData:
    """The page of one trace of a trace file (the first, or ``trace_id``: the id as the file writes it, or its
    file-safe form), analysed now."""
    from ..outputs import provenance
    from ..params import Params
    from ..traces import Exclusion, read_traces, safe_id

    params = params or Params()
    traces = list(read_traces([path], require_think=params.input.require_think))
    chosen = traces if trace_id is None else ([t for t in traces if getattr(t, "record_id", "") == trace_id]
                                              or [t for t in traces if t.trace_id in (trace_id, safe_id(trace_id))])
    if not chosen:
        ids = ", ".join(repr(getattr(t, "record_id", "") or t.trace_id) for t in traces[:10])
        raise ShowError(f"{path}: no trace {trace_id!r} (traces: {ids or 'none'})")
    trace = chosen[0]
    if isinstance(trace, Exclusion):
        return PageData(title=trace_id or trace.trace_id, unit=trace.trace_id, status="excluded",
                        reason=trace.reason, reference=bundled_reference())
    graph, metrics, reason = analyse_text(trace, params, encoder)
    return PageData(title=trace.record_id or trace.trace_id, unit=trace.trace_id,
                    status="excluded" if reason else "ok", reason=reason,
                    ids=trace.ids(), graph=graph, metrics=metrics, reference=bundled_reference(),
                    provenance={"analysis": provenance(page_modules(), params.to_dict(), [path])})


def page_modules() -> list[str]:
    """The thinkprobe modules behind a page and the package files they read (its templates, style sheet and
    script, the bundled reference), derived from the imports (:mod:`thinkprobe.codedeps`)."""
    from ..codedeps import code_modules
    from ..view.trace_page import render_page

    return code_modules(page_from_results, page_from_trace, render_page)
