"""What the trajectory rules do (rules/trajectories.smk), so that their scripts stay a dozen lines (the
batches themselves are planned in :mod:`thinkprobe.trajectories.batches`).

* :func:`sample_batch` (GPU): collected trace units -> one continuation document per trace, written as one
  batch file; resumable through the :class:`~thinkprobe.trajectories.sampling.ContinuationStore`.
* :func:`label_batch` (CPU): continuation documents -> trajectory records (labels parsed, gold attached).
* :func:`build_tables` (CPU): all records -> per-trace and per model x task tables, variance
  decomposition, exclusions, and the trajectory figures.
* :func:`join_batches` (CPU): the structure x dynamics join.

Every per-trace failure becomes that trace's ``excluded`` status with its stage and reason; a job fails
only for a fault of the job itself (e.g. the engine does not start).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .. import integrity, protect
from ..codedeps import code_modules
from ..outputs import provenance, write_json, write_table
from ..generate.defaults import TRAJECTORY_DEFAULTS
from ..units import unit_path
from ..generate.modelspec import ModelSpec
from ..trajectories.batches import batch_identity, sampling_config
from ..trajectories.checkpoints import RealizedTrace, TraceError, realized_from_unit
from ..trajectories.labelling import label_document
from ..trajectories.sampling import SamplingConfig, sample_traces
from ..trajectories.store import FinishedDocuments
from .unitfiles import read_unit


def _unit_of(path: str) -> dict[str, str]:
    parts = Path(path).with_suffix("").parts[-4:]
    return dict(zip(("model", "question_set", "question_id", "run"), parts))


def _batch_key(path: str | Path) -> str:
    """What a batch file is stored under: its stage folder, model, question set and batch (its path's tail)."""
    return "/".join(Path(path).parts[-4:])


def write_batch(path: str | Path, doc: Mapping[str, Any]) -> None:
    """Write a continuation or label batch, sealed with the digest of its content and key
    (:mod:`thinkprobe.integrity`), so the rules that read it can verify it."""
    write_json(path, integrity.seal(doc, _batch_key(path)))


class BatchFileError(ValueError):
    """A batch file failed verification; the message names it and what the next run does."""


def read_batch(path: str | Path) -> dict[str, Any]:
    """A batch file, verified: one altered after it was written (or copied under another batch's name) is
    moved aside with a warning and :class:`BatchFileError` is raised, so the job fails naming it and the next
    run rebuilds it (a continuation batch from the store: no engine; a label batch from its continuations).
    A batch without a digest (its block deleted, or written before digests) is refused the same way (issue 37,
    item 4): every batch this release writes is sealed, and a rebuild costs no GPU time where the store holds
    its continuations."""
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    why = integrity.problem(doc, _batch_key(path), required=True)
    if why is not None:
        message = integrity.refused(path, why, integrity.quarantine(path),
                                    "the next run rebuilds it from what it was made of")
        print(message, file=sys.stderr, flush=True)
        raise BatchFileError(message)
    return integrity.unsealed(doc)


def sample_batch(trace_paths: Sequence[str], out_path: str, model: ModelSpec | Mapping[str, Any],
                 traj: Mapping[str, Any], questions: Mapping[str, Mapping[str, Any]], store: str,
                 log: Callable[[str], None] = print,
                 prefixes_per_call: int = TRAJECTORY_DEFAULTS["prefixes_per_call"]) -> dict[str, Any]:
    """Sample every trace of a batch; ``questions`` maps question_id -> {task, gold}.

    A trace whose sampling already finished (its document in the store's :class:`FinishedDocuments`, under
    the same trace bytes, settings, model and gold) is taken from there; the engine starts only when some
    trace still needs it, so a rerun whose continuations are all stored starts no engine (issue 19, item 7).
    """
    from ..generate.engine import engine_for_work

    spec = ModelSpec.of(model)  # the model parsed once (the job's param: the entry as stated)
    cfg = sampling_config(traj)
    ident = batch_identity(cfg, spec)
    finished = FinishedDocuments(store, log=log)
    t0 = time.perf_counter()
    docs: list[dict[str, Any] | None] = [None] * len(trace_paths)
    usable: list[tuple[int, Any]] = []
    keys: dict[int, str] = {}
    units = [_unit_of(path) for path in trace_paths]
    for i, (path, unit) in enumerate(zip(trace_paths, units)):
        q = questions.get(unit["question_id"], {})
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
            doc = read_unit(path, outdate=True)  # verified: an altered trace unit is never sampled
        except (OSError, ValueError) as exc:
            docs[i] = _excluded(unit, q, f"cannot read the trace unit {path}: {exc}", cfg)
            continue
        keys[i] = FinishedDocuments.key(raw, ident, q, cfg.decoding)
        docs[i] = finished.get(unit, keys[i])
        if docs[i] is None:
            usable.append((i, (doc, q)))
    stats: dict[str, Any] = {}
    reused = len(keys) - len(usable)
    engine_seconds = 0.0
    if not usable:
        log(f"all {reused} readable traces of the batch already sampled (store): no engine started")
    else:
        log(f"{reused} traces already sampled (store), {len(usable)} to assemble or sample")
        # the engine starts at its first generate: a batch rebuilt from intact parts starts none (issue 37)
        engine = engine_for_work(spec, log)
        engine_seconds = time.perf_counter() - t0
        log(f"engine {engine.backend} {engine.version} for {engine.model}"
            + (": not started until a prefix needs sampling" if getattr(engine, "started", True) is False else "")
            + f": {engine_seconds:.1f} s")
        try:
            tok = engine.tokenizer()
            traces: list[tuple[int, RealizedTrace]] = []
            for i, (doc, q) in usable:
                try:
                    traces.append((i, realized_from_unit(doc, tok, q.get("task"), q.get("gold"))))
                except TraceError as exc:
                    docs[i] = _excluded(units[i], q, str(exc), cfg)
                    finished.put(units[i], keys[i], docs[i])  # decided by the model's tokenizer
            if traces:
                out, stats = sample_traces(engine, [t for _, t in traces], cfg, store, int(prefixes_per_call), log,
                                           identity=ident)
                for (i, _), d in zip(traces, out):
                    docs[i] = d
                    finished.put(units[i], keys[i], d)
        finally:
            engine.close()
        if getattr(engine, "started", True) is False:
            log("every checkpoint of the batch was in the store: no engine started")
        engine_seconds += getattr(engine, "start_seconds", None) or 0.0
        stats["engine_started"] = getattr(engine, "started", True)
    stats.update(engine_seconds=engine_seconds, job_seconds=time.perf_counter() - t0, documents_reused=reused)
    write_batch(out_path, {"documents": docs, "stats": stats,
                           "provenance": provenance(code_modules(sample_traces), cfg.as_dict(),
                                                    [p for p in trace_paths if Path(p).exists()],
                                                    model=spec.as_stated(), sampling_code_sha256=ident["code_sha256"])})
    protect.record(out_path, ident)  # checked before a rerun overwrites it
    return stats


def _excluded(unit: Mapping[str, str], q: Mapping[str, Any], reason: str, cfg: SamplingConfig) -> dict[str, Any]:
    return {"unit": dict(unit), "task": q.get("task"), "gold": q.get("gold"), "estimator": cfg.estimator,
            "sampling": cfg.as_dict(), "status": "excluded", "stage": "trajectory_sample", "reason": reason,
            "checkpoints": []}


def label_batch(cont_path: str, out_path: str, questions: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """Parse every continuation of a batch into labels: one trajectory record per trace."""
    batch = read_batch(cont_path)
    records = []
    for doc in batch["documents"]:
        q = questions.get(str(doc["unit"]["question_id"]), {})
        rec = label_document(doc, q.get("task") or doc.get("task"), q.get("gold", doc.get("gold")),
                             choices=q.get("choices"))  # the item's options: keys outside them are null
        records.append(rec)
    write_batch(out_path, {"records": records, "provenance": provenance(code_modules(label_batch), {}, [cont_path])})
    return {"ok": sum(r["status"] == "ok" for r in records), "excluded": sum(r["status"] != "ok" for r in records)}


def load_records(paths: Sequence[str]) -> list[dict[str, Any]]:
    return [r for p in paths for r in read_batch(p)["records"]]


def build_tables(label_paths: Sequence[str], outputs: Mapping[str, str], tau: float, support: str,
                 comparisons: Sequence[Mapping[str, Any]] = (), group_fraction: float = 0.25,
                 confidence: float = 0.95, disagreement_grid: int = 11, max_cut_share: float = 0.1,
                 log: Callable[[str], None] = print) -> dict[str, Any]:
    """Per-trace table, exclusions, model x task conditions, variance decomposition, the paper's groups
    (top ``group_fraction`` of model-task pairs), matched comparisons (``trajectories.comparisons``, with
    ``confidence`` t intervals; empty table when none is declared; changes standardised by the SD of the
    default-decoding traces), cross-model disagreement per model pair and item (on ``disagreement_grid``
    relative positions; empty with one model), figures. Returns the counts (traces, excluded, incomplete
    trajectories, continuations cut) and a warning per model and task whose share of continuations cut by
    the budget or the context exceeds ``max_cut_share`` (each also passed to ``log``)."""
    import pandas as pd

    from ..trajectories import aggregates as agg
    from ..trajectories import figures
    from ..trajectories.distributions import trajectory_record_to_states

    records = load_records(label_paths)
    prov = provenance(code_modules(build_tables), {"tau": tau, "support": support, "group_fraction": group_fraction,
                                      "confidence": confidence, "disagreement_grid": disagreement_grid}, label_paths)
    traces, excluded = agg.trace_table(records, tau=tau, support=support)
    write_table(outputs["traces"], traces, prov)
    write_table(outputs["exclusions"], excluded, prov)
    # model x task conditions, variance, groups and disagreement: the default decoding (the paper's setting);
    # the other decodings enter the matched comparisons only
    base = traces[traces["decoding"].fillna("default") == "default"] if "decoding" in traces else traces
    if len(base):
        conditions = agg.condition_table(base)
        variance = agg.variance_decomposition(base)
    else:
        conditions, variance = pd.DataFrame(), pd.DataFrame()
    if len(conditions) and "model" not in conditions.columns:
        conditions = conditions.reset_index()
    write_table(outputs["conditions"], conditions, prov)
    write_table(outputs["variance"], variance, prov)
    groups = agg.group_profiles(conditions, fraction=group_fraction)[0] if len(conditions) else pd.DataFrame()
    write_table(outputs["groups"], groups, prov)
    default = {"decoding": "default"} if len(traces) and "decoding" in traces.columns else None
    summary = (agg.matched_comparisons(traces, comparisons, default=default, confidence=confidence)[0]
               if comparisons and len(traces) else pd.DataFrame(columns=["comparison", "metric", "mean", "low",
                                                                         "high", "n"]))
    write_table(outputs["comparisons"], summary, {**prov, "comparisons": list(comparisons)})
    disagreement = agg.disagreement([r for r in records if r.get("status") == "ok"
                                     and r.get("decoding", "default") in (None, "default")], grid=disagreement_grid)
    if disagreement.empty:
        disagreement = pd.DataFrame(columns=["model_a", "model_b", "task", "question_id", "run",
                                             "dominant_disagreement", "entropy_gap",
                                             "gold_dominance_disagreement", "mechanism_disagreement"])
    write_table(outputs["disagreement"], disagreement, prov)
    tag = f"thinkprobe trajectories, tau={tau}, {len(traces)} traces"
    if len(traces) and traces["mechanism"].notna().any():
        figures.mechanism_shares(traces, outputs["mechanisms_figure"], provenance=tag)
    else:
        _empty_figure(outputs["mechanisms_figure"], "no trace with a gold answer: no mechanisms")
    ok = [r for r in records if r.get("status") == "ok" and any(c.get("labels") for c in r["checkpoints"])]
    if ok:  # the example: the trace with the most sampled checkpoints
        r = max(ok, key=lambda rec: sum(bool(c.get("labels")) for c in rec["checkpoints"]))
        cps = sorted((c for c in r["checkpoints"] if c.get("labels")), key=lambda c: c["checkpoint_index"])
        figures.trajectory_plot(trajectory_record_to_states(r), [c["prefix_tokens"] for c in cps],
                                outputs["example_figure"], gold=r.get("gold"),
                                title=f"{r['model']} {r['question_set']}/{r['question_id']} run {r['run']}",
                                provenance=tag)
    else:
        _empty_figure(outputs["example_figure"], "no sampled trajectory")
    if len(groups):
        figures.group_profiles_plot(groups, [m for m in agg.PROFILE_METRICS if m in groups.columns],
                                    outputs["groups_figure"], provenance=tag)
    else:
        _empty_figure(outputs["groups_figure"], "no model-task pair: no group profiles")
    if len(summary):
        figures.forest_plot(summary, outputs["forest_figure"], provenance=tag)
    else:
        _empty_figure(outputs["forest_figure"], "no matched comparison declared (trajectories.comparisons)")
    warnings = cut_warnings(conditions, max_cut_share) if len(conditions) else []
    for w in warnings:
        log(f"WARNING: {w}")
    return {"traces": len(traces), "excluded": len(excluded),
            "incomplete": int(traces["incomplete"].sum()) if "incomplete" in traces else 0,
            "continuations": int(traces["n_continuations"].sum()) if "n_continuations" in traces else 0,
            "cut_budget": int(traces["n_cut_budget"].sum()) if "n_cut_budget" in traces else 0,
            "cut_context": int(traces["n_cut_context"].sum()) if "n_cut_context" in traces else 0,
            "warnings": warnings}


def cut_warnings(conditions, max_cut_share: float) -> list[str]:
    """One message per model and task whose continuations were cut (budget or context) more often than
    ``max_cut_share``: their null labels then measure the budget, not the model."""
    out = []
    if "share_cut" not in conditions:
        return out
    for _, row in conditions.iterrows():
        share = row["share_cut"]
        if share == share and share > max_cut_share:
            out.append(f"model {row['model']} task {row['task']}: {share:.0%} of {int(row['n_continuations'])} "
                       f"continuations were cut (budget {row['share_cut_budget']:.0%}, context "
                       f"{row['share_cut_context']:.0%}; more than trajectories.max_cut_share = {max_cut_share}): "
                       "their labels are null for want of tokens; raise sampling.max_tokens (null: to the context's "
                       "end) or the model's max_model_len")
    return out


def _empty_figure(path: str, message: str) -> None:
    from ..trajectories.figures import _pyplot, _save

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4, 1.5))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    _save(fig, path, "")


def join_batches(cont_paths: Sequence[str], label_paths: Sequence[str], outputs: Mapping[str, str],
                 analysis: Mapping[str, Any], min_words: int) -> dict[str, int]:
    """The structure x dynamics join over all batches: intervals, per-trace status, per-model table, figure."""
    import pandas as pd

    from ..trajectories.join import graphs_for, join_figure, join_intervals, join_table

    docs = [d for p in cont_paths for d in read_batch(p)["documents"]]
    records = load_records(label_paths)
    by_key = {unit_path(r): r for r in records}
    recs = [by_key.get(unit_path(d["unit"]),
                       {"status": "excluded", "reason": "no record"}) for d in docs]
    graphs = graphs_for(docs, analysis, min_words)
    rows, status = join_intervals(docs, recs, graphs)
    table = join_table(rows)
    prov = provenance(code_modules(join_batches), {"analysis": dict(analysis), "min_words": min_words}, [*cont_paths, *label_paths])
    write_table(outputs["intervals"], pd.DataFrame(rows), prov)
    write_table(outputs["status"], pd.DataFrame(status), prov)
    write_table(outputs["table"], table, prov)
    if len(table):
        join_figure(table, outputs["figure"], f"thinkprobe structure x dynamics join, {len(rows)} intervals")
    else:
        _empty_figure(outputs["figure"], "no trace could be joined (see trajectory_join_status.parquet)")
    return {"intervals": len(rows), "joined": sum(s["joined"] for s in status), "traces": len(status)}
