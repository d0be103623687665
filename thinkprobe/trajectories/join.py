"""Structure x dynamics: do answer switches and motion concentrate where the Thought Graph revises?

The Thought Graph pipeline (:mod:`thinkprobe.pipeline`) runs on the same realized reasoning the
checkpoints were cut from (the decoded reasoning tokens, so character offsets agree exactly). Each
checkpoint j carries the character offset c_j of its prefix in that text. The *interval* t (t = 1..T-1)
is the reasoning read between consecutive sampled checkpoints, characters [c_{t-1}, c_t); its motion is
TV(p_{t-1}, p_t) and it is a *switch* when the dominant set (ties kept) changes.

An interval is flagged with a marker when a Thought Unit of that kind overlaps it, i.e. the model wrote
(part of) such a unit in that stretch of reasoning:

* ``BACK``: a unit with an outgoing BACK edge (it revises an earlier unit);
* ``CRT``: a critique node; ``SYN``: a synthesis node;
* ``ANY``: any of the three.

Our reading of "answer switches and motion concentrate after BACK/CRT/SYN units": per model and marker,
``motion_share`` = flagged motion / all motion and ``interval_share`` = flagged intervals / all intervals;
their ratio ``concentration`` is > 1 when motion concentrates in flagged intervals (1 = no relation);
``switch_rate_flagged`` vs ``switch_rate_other`` compare the probability of a switch. Intervals of traces
the pipeline excludes (e.g. too short) are not counted; the exclusion is recorded per trace.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..units import unit_path

MARKERS = ("BACK", "CRT", "SYN", "ANY")


def unit_markers(nodes: Sequence[Mapping[str, Any]], edges: Iterable[Mapping[str, Any]]) -> list[set[str]]:
    """The markers of every node of a node-link graph (``BACK``, ``CRT``, ``SYN``)."""
    back = {int(e["source"]) for e in edges if e.get("edge_type") == "BACK"}
    out = []
    for node in nodes:
        m = {t for t in ("CRT", "SYN") if node.get("node_type") == t}
        if int(node["id"]) in back:
            m.add("BACK")
        out.append(m)
    return out


def unit_at(nodes: Sequence[Mapping[str, Any]], offset: int) -> int | None:
    """The id of the unit holding the last character read at ``offset`` (None before any unit)."""
    for node in nodes:
        if node["start"] <= offset - 1 < node["end"]:
            return int(node["id"])
    before = [n for n in nodes if n["end"] <= offset]
    return int(max(before, key=lambda n: n["end"])["id"]) if before else None


def join_trace(record: Mapping[str, Any], offsets: Mapping[int, int], graph: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per interval of one trace: motion, switch, the unit reached and the markers overlapped.

    ``record`` is a labelled trajectory record; ``offsets`` maps checkpoint_index -> character offset;
    ``graph`` is the node-link Thought Graph of the reasoning text.
    """
    from .distributions import dominant_set, state_from_labels, total_variation

    cps = sorted((c for c in record["checkpoints"] if c.get("labels")), key=lambda c: c["checkpoint_index"])
    nodes = sorted(graph["nodes"], key=lambda n: n["id"])
    markers = unit_markers(nodes, graph.get("edges", graph.get("links", [])))
    rows = []
    for prev, cur in zip(cps[:-1], cps[1:]):
        a, b = offsets[prev["checkpoint_index"]], offsets[cur["checkpoint_index"]]
        p, q = state_from_labels(prev["labels"]), state_from_labels(cur["labels"])
        hit: set[str] = set()
        for node, m in zip(nodes, markers):
            if node["start"] < b and node["end"] > a:
                hit |= m
        unit = unit_at(nodes, b)
        row = {"model": record.get("model"), "question_set": record.get("question_set"),
               "question_id": record.get("question_id"), "run": record.get("run"),
               "checkpoint_index": cur["checkpoint_index"], "prefix_tokens": cur.get("prefix_tokens"),
               "char_start": a, "char_end": b, "tv": total_variation(p, q),
               "switch": dominant_set(p) != dominant_set(q), "unit": unit,
               "unit_type": nodes[unit]["node_type"] if unit is not None else None}
        for mk in ("BACK", "CRT", "SYN"):
            row[mk] = mk in hit
        row["ANY"] = bool(hit)
        rows.append(row)
    return rows


def join_table(intervals) -> "Any":
    """Per model and marker: intervals, shares, concentration and switch rates (see the module docstring)."""
    import pandas as pd

    columns = ["model", "marker", "intervals", "flagged", "interval_share", "motion", "motion_share",
               "concentration", "switches", "switch_rate_flagged", "switch_rate_other"]
    df = pd.DataFrame(list(intervals)) if not isinstance(intervals, pd.DataFrame) else intervals
    rows = []
    if df.empty:
        return pd.DataFrame(columns=columns)
    for model, g in df.groupby("model", sort=True):
        total = float(g["tv"].sum())
        for mk in MARKERS:
            f = g[g[mk]]
            o = g[~g[mk]]
            ishare = len(f) / len(g)
            mshare = float(f["tv"].sum()) / total if total > 0 else None
            rows.append({"model": model, "marker": mk, "intervals": len(g), "flagged": len(f),
                         "interval_share": ishare, "motion": total, "motion_share": mshare,
                         "concentration": (mshare / ishare) if (mshare is not None and ishare > 0) else None,
                         "switches": int(g["switch"].sum()),
                         "switch_rate_flagged": float(f["switch"].mean()) if len(f) else None,
                         "switch_rate_other": float(o["switch"].mean()) if len(o) else None})
    return pd.DataFrame(rows, columns=columns)


def graphs_for(docs: Sequence[Mapping[str, Any]], analysis: Mapping[str, Any], min_words: int | None = None
               ) -> list[dict[str, Any] | str]:
    """Run the Thought Graph pipeline on the reasoning of each continuation document.

    Returns, per document, the node-link graph or the reason it has none (excluded by the pipeline or by
    the sampling stage). ``min_words`` overrides ``analysis.input.min_words`` for these traces.
    """
    from ..encoder import load_encoder
    from ..params import Params
    from ..pipeline import analyze
    from ..traces import Trace

    data = {k: dict(v) for k, v in analysis.items()}
    if min_words is not None:
        data.setdefault("input", {})["min_words"] = min_words
    params = Params.from_dict(data)
    out: list[Any] = [None] * len(docs)
    todo = []
    for i, d in enumerate(docs):
        if d.get("status") != "ok":
            out[i] = f"excluded at sampling: {d.get('reason')}"
        else:
            u = d["unit"]
            todo.append((i, Trace(unit_path(u),
                                  d["reasoning"]["text"], u["model"], u["question_id"], str(u["run"]))))
    if todo:
        encoder = load_encoder(params.encoder)
        for (i, _), res in zip(todo, analyze([t for _, t in todo], params, encoder, layers="full")):
            out[i] = res.exclusion.reason if res.exclusion else res.graph.to_node_link()
    return out


def join_intervals(docs: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]],
                   graphs: Sequence[Mapping[str, Any] | str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Interval rows of every trace, and one status row per trace (joined, or why not)."""
    rows, status = [], []
    for d, rec, g in zip(docs, records, graphs):
        ids = {k: d["unit"][k] for k in ("model", "question_set", "question_id", "run")}
        if isinstance(g, str):
            status.append({**ids, "joined": False, "reason": g})
            continue
        if rec.get("status") != "ok":
            status.append({**ids, "joined": False, "reason": rec.get("reason")})
            continue
        offsets = {c["checkpoint_index"]: c["char_offset"] for c in d["checkpoints"]}
        got = join_trace(rec, offsets, g)
        rows += got
        status.append({**ids, "joined": True, "reason": None, "intervals": len(got), "units": len(g["nodes"])})
    return rows, status


def pd_max(values) -> float:
    finite = [float(v) for v in values if v is not None and v == v]
    return max(finite) if finite else 1.0


def join_figure(table, out_path: str, provenance: str = "") -> str:
    """Concentration of motion (bars) per model and marker; 1 = no concentration."""
    from .figures import _pyplot, _save

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    models = sorted(table["model"].unique()) if len(table) else []
    colours = {"BACK": "#0072B2", "CRT": "#E69F00", "SYN": "#009E73", "ANY": "#777777"}
    width = 0.8 / len(MARKERS)
    for k, mk in enumerate(MARKERS):
        vals = [table[(table.model == m) & (table.marker == mk)]["concentration"].iloc[0] for m in models]
        ax.bar([i + k * width for i in range(len(models))], [v if v == v and v is not None else 0 for v in vals],
               width, label=mk, color=colours[mk])
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    top = pd_max(table["concentration"]) if len(table) else 1.0
    ax.set_ylim(0, max(1.2, 1.15 * top))
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(models))], models)
    ax.set_ylabel("motion share / interval share")
    ax.set_title("Answer motion in intervals overlapping BACK / CRT / SYN units\n(dashed: no concentration; "
                 "no bar: no flagged interval)", fontsize=10)
    ax.legend(frameon=False, ncol=4, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    return _save(fig, out_path, provenance)
