"""A whole annotated set through the pipeline and the comparison: the per-trace rows, the exclusions and the
pooled summary that ``thinkprobe validate`` writes and its page shows (docs/validity.md).

Every trace of the set ends as one row: ``ok`` with its boundary scores, or ``excluded`` with the reason
(the reader's: offsets that do not match the trace text, no annotations; the mapping's: labels outside it;
the pipeline's: a trace thinkprobe itself excludes). One bad trace never stops the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .. import __version__
from ..graph import NODE_TYPES
from ..pipeline import analyze
from ..stats.agreement import SCORES
from ..traces import Trace
from . import DRAWS, SEED, TOLERANCE, formats
from .annotation import AnnotatedTrace, Skipped
from .compare import cohen_kappa, outcome_draws, score_trace
from .mapping import Mapping, outside


@dataclass
class Validation:
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    pairs: list[tuple[str, str]] = field(default_factory=list)


def _row(trace_id: str, source: str, status: str, reason: str = "", **scores: Any) -> dict[str, Any]:
    return {"trace_id": trace_id, "source": source, "status": status, "reason": reason, **scores}


def _rate(num: float, den: float) -> float:
    return float(num / den) if den else float("nan")


def validate(fmt_name: str, paths: Iterable[str | Path], mapping: Mapping, params: Any, encoder: Any, *,
             tolerance: int = TOLERANCE, draws: int = DRAWS, seed: int = SEED, limit: int | None = None) -> Validation:
    """Compare the annotated traces in ``paths`` (format ``fmt_name``) with their Thought Graphs.

    ``limit``: the first ``limit`` traces of each path only. ``draws`` random position-matched sets per
    scored set, from ``numpy.random.default_rng(seed)`` (the outcome analysis; :mod:`.compare`)."""
    fmt = formats.get(fmt_name)
    if mapping.format != fmt.name:
        raise ValueError(f"{mapping.source}: the mapping is for format {mapping.format!r}, not {fmt.name!r}")
    rows: list[dict[str, Any]] = []
    annotated: list[AnnotatedTrace] = []
    paths = [str(p) for p in paths]
    for path in paths:
        for k, item in enumerate(fmt.read(Path(path))):
            if limit is not None and k >= limit:
                break
            if isinstance(item, Skipped):
                rows.append(_row(item.trace_id, item.source, "excluded", item.reason))
                continue
            bad = outside(mapping, [u.label for u in item.units], [e.label for e in item.edges])
            if bad:
                rows.append(_row(item.trace_id, item.source, "excluded", f"labels outside the mapping: {', '.join(bad)}"))
                continue
            annotated.append(item)
    traces = [Trace(a.trace_id, a.text, source=a.source) for a in annotated]
    rng = np.random.default_rng(seed)
    pairs: list[tuple[str, str]] = []
    edges: dict[str, dict[str, int]] = {}
    within = 0
    outcome: dict[str, dict[str, Any]] = {}
    for ann, res in zip(annotated, analyze(traces, params, encoder)):
        if res.exclusion is not None:
            rows.append(_row(ann.trace_id, ann.source, "excluded", f"thinkprobe: {res.exclusion.reason}"))
            continue
        s = score_trace(ann, res.graph, mapping, tolerance)
        if s.boundaries["n_sentences"] < 2:
            rows.append(_row(ann.trace_id, ann.source, "excluded", f"{s.boundaries['n_sentences']} sentence(s)"))
            continue
        rows.append(_row(ann.trace_id, ann.source, "ok", "", n_units=len(ann.units), n_tus=res.graph.n,
                         n_typed_sentences=len(s.type_pairs), **s.boundaries))
        pairs.extend(s.type_pairs)
        for t, c in s.edges.items():
            acc = edges.setdefault(t, {"tp": 0, "n_hyp": 0, "n_ref": 0})
            for key in acc:
                acc[key] += c[key]
        within += s.edges_within_one_tu
        if s.outcome is not None:
            for name in sorted(s.outcome["sets"]):
                n, hits, random_hits = outcome_draws(s.outcome, name, rng, draws)
                acc = outcome.setdefault(name, {"n": 0, "hits": 0, "random": np.zeros(draws, dtype=np.int64)})
                acc["n"] += n
                acc["hits"] += hits
                acc["random"] += random_hits
    summary = summarize(fmt.name, paths, mapping, rows, pairs, edges, within, outcome,
                        tolerance=tolerance, draws=draws, seed=seed, limit=limit)
    return Validation(rows, summary, pairs)


def summarize(fmt: str, paths: list[str], mapping: Mapping, rows, pairs, edges, within, outcome, *,
              tolerance: int, draws: int, seed: int, limit: int | None) -> dict[str, Any]:
    ok = [r for r in rows if r["status"] == "ok"]
    reasons: dict[str, int] = {}
    for r in rows:
        if r["status"] == "excluded":
            head = r["reason"].split(":", 1)[0]
            reasons[head] = reasons.get(head, 0) + 1
    boundaries = {}
    for key in (*SCORES, "n_units", "n_tus"):
        vals = np.array([r[key] for r in ok], dtype=float)
        vals = vals[np.isfinite(vals)]
        boundaries[key] = {"mean": float(vals.mean()) if len(vals) else float("nan"),
                           "sd": float(vals.std(ddof=1)) if len(vals) > 1 else float("nan"), "n": int(len(vals))}
    ref_types = sorted({a for a, _ in pairs}, key=NODE_TYPES.index)
    labels = [t for t in NODE_TYPES if t in {x for p in pairs for x in p}]
    confusion = [[sum(1 for a, b in pairs if a == r and b == h) for h in labels] for r in labels]
    per_type = {}
    for t in labels:
        tp = sum(1 for a, b in pairs if a == t and b == t)
        n_ref, n_hyp = sum(1 for a, _ in pairs if a == t), sum(1 for _, b in pairs if b == t)
        per_type[t] = {"precision": _rate(tp, n_hyp), "recall": _rate(tp, n_ref),
                       "ref_share": _rate(n_ref, len(pairs)), "hyp_share": _rate(n_hyp, len(pairs))}
    edge_scores = {t: {**c, "precision": _rate(c["tp"], c["n_hyp"]), "recall": _rate(c["tp"], c["n_ref"])}
                   for t, c in sorted(edges.items())}
    outcome_scores = None
    if outcome:
        outcome_scores = {}
        for name, acc in sorted(outcome.items()):
            n, hits, rnd = acc["n"], acc["hits"], acc["random"]
            outcome_scores[name] = {"n": n, "hits": hits, "rate": _rate(hits, n),
                                    "random_rate": _rate(float(rnd.mean()), n),
                                    "p": float((1 + int((rnd >= hits).sum())) / (len(rnd) + 1))}
    return {
        "thinkprobe": __version__, "format": fmt, "inputs": paths, "limit": limit,
        "mapping": {"file": mapping.source, "nodes": mapping.nodes, "edges": mapping.edges},
        "tolerance": tolerance, "draws": draws, "seed": seed,
        "n_traces": len(rows), "n_compared": len(ok), "n_excluded": len(rows) - len(ok),
        "exclusions": dict(sorted(reasons.items())),
        "boundaries": boundaries,
        "node_types": {"labels": labels, "reference_types": ref_types, "confusion": confusion,
                       "n_sentences": len(pairs), "kappa": cohen_kappa([a for a, _ in pairs], [b for _, b in pairs]),
                       "per_type": per_type},
        "edges": edge_scores, "edges_within_one_tu": within,
        "outcome": outcome_scores,
    }


def write_outputs(result: Validation, out: str | Path | None, page_path: str | Path | None,
                  title: str | None) -> None:
    """What ``thinkprobe validate`` and the workflow's ``validate_set`` write (one home for both): under ``out``
    the pooled ``summary.json`` and ``traces.csv`` (one row per trace, exclusions with their reason), and the
    run's Markdown page at ``page_path`` (:func:`thinkprobe.validity.run_page.write`)."""
    import pandas as pd

    from ..outputs import atomic_write_text, write_json
    from . import run_page

    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "summary.json", result.summary)
        atomic_write_text(out / "traces.csv", pd.DataFrame(result.rows).to_csv(index=False))
    if page_path:
        run_page.write(page_path, result.summary, title, None if out is None else str(out))
