"""Training and evaluation of the learned typer (:mod:`thinkprobe.learned_typer`; ``scripts/train_typer.py``;
docs/validity.md, "Two typers").

Data: LLM step labels (the ``step_labels`` format, :mod:`.formats.step_labels`), mapped to node types by the
mapping declared beforehand (``config/validity/step_labels.yaml``). Every trace runs through the pipeline under
the paper typer; the learned typer changes node types only, so its features (texts, final boundaries, edges,
embeddings) are read off those graphs.

Split by prompt: the record number is the prompt (the corpus's model files hold the same prompts in the same
rows), so all models' traces of one prompt fall in one part. A seeded permutation of the prompts gives the
train, tune and test parts (:func:`split_prompts`). The classifier is fitted on train for every setting of the
grid, the setting with the best tune kappa is refitted on train + tune, and test is read once, at the end.

Targets per Thought Unit: the majority, weighted by sentences, of its sentences' mapped types folded into
``CRT``, ``MET`` or neither (``""``); each unit is weighted by its typed sentences, so the fit serves the
per-sentence comparison that scores it (:mod:`.compare`). Scores are the comparison's: Cohen's kappa of the
8 node types per sentence, and precision and recall per type, for both typers on the same sentences.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..graph import NODE_TYPES, ThoughtGraph, classify_nodes
from ..learned_typer import CLASSES, FORMAT, Artifact, decide, feature_names, features, lexicon_hashes
from ..params import Params
from ..pipeline import analyze
from ..stats.agreement import sentence_atoms
from ..traces import Trace
from . import formats
from .annotation import AnnotatedTrace
from .compare import _containing, cohen_kappa
from .mapping import Mapping

PARTS = {"train": 0.60, "tune": 0.15, "test": 0.25}
GRID = tuple({"C": c, "class_weight": w} for c in (0.01, 0.1, 1.0) for w in (None, "balanced"))
METACOGNITIVE = ("CRT", "MET")


@dataclass
class Item:
    """One annotated trace with its paper-typer graph and, per compared sentence, ``(TU index, reference type)``."""

    trace_id: str
    row: int
    graph: ThoughtGraph
    sentences: list[tuple[int, str]]


def prompt_row(trace_id: str) -> int:
    """The prompt of a step-label trace id ``<model>/<record>``: its record number."""
    return int(trace_id.rsplit("/", 1)[1])


def split_prompts(rows: Iterable[int], seed: int) -> dict[int, str]:
    """Each prompt's part (:data:`PARTS`), from a permutation of the sorted prompts by ``default_rng(seed)``."""
    rows = sorted(set(rows))
    order = np.random.default_rng(seed).permutation(len(rows))
    n_train = round(PARTS["train"] * len(rows))
    n_tune = round(PARTS["tune"] * len(rows))
    part = {}
    for rank, k in enumerate(order):
        part[rows[k]] = "train" if rank < n_train else "tune" if rank < n_train + n_tune else "test"
    return part


def sentence_pairs(ann: AnnotatedTrace, graph: ThoughtGraph, mapping: Mapping) -> list[tuple[int, str]]:
    """Per sentence of the trace that both sides cover and the mapping types: the Thought Unit holding it and its
    reference type (the rule of :func:`.compare.score_trace`)."""
    u_starts, u_ends = [u.start for u in ann.units], [u.end for u in ann.units]
    tu_starts, tu_ends = [a for a, _ in graph.offsets], [b for _, b in graph.offsets]
    out = []
    for s, _ in sentence_atoms(ann.text):
        k, t = _containing(u_starts, u_ends, s), _containing(tu_starts, tu_ends, s)
        if k is None or t is None:
            continue
        rtype = mapping.node_type(ann.units[k].label)
        if rtype is not None:
            out.append((t, rtype))
    return out


def _cache_name(path: Path) -> str:
    import hashlib

    return f"{path.stem}-{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"


def load_items(paths: Iterable[str | Path], mapping: Mapping, params: Params, encoder: Any,
               cache: str | Path | None = None, log=print) -> tuple[list[Item], dict[str, int]]:
    """Every annotated trace of ``paths`` through the pipeline (paper typer); returns the items and the count of
    excluded traces by reason. ``cache``: a folder keeping each file's graphs (keyed by the file's sha256; for
    reruns with the same analysis code and parameters only; delete it after changing either)."""
    fmt = formats.get("step_labels")
    from collections import Counter

    items: list[Item] = []
    excluded: Counter[str] = Counter()
    for path in map(Path, paths):
        anns = []
        for a in fmt.read(path):
            if isinstance(a, AnnotatedTrace):
                anns.append(a)
            else:
                excluded[a.reason.split(":", 1)[0]] += 1
        graphs: list[ThoughtGraph | None]
        stored = Path(cache) / f"{_cache_name(path)}.json" if cache else None
        if stored is not None and stored.is_file():
            docs = json.loads(stored.read_text(encoding="utf-8"))
            embs = np.load(stored.with_suffix(".npz"))
            graphs = [None if d is None else ThoughtGraph.from_node_link(d, embs[f"g{k}"]) for k, d in enumerate(docs)]
        else:
            traces = [Trace(a.trace_id, a.text, source=a.source) for a in anns]
            graphs = [r.graph if r.exclusion is None else None for r in analyze(traces, params, encoder)]
            if stored is not None:
                from ..outputs import atomic_write_text

                stored.parent.mkdir(parents=True, exist_ok=True)
                np.savez(stored.with_suffix(".npz"), **{f"g{k}": g.embeddings for k, g in enumerate(graphs) if g is not None})
                atomic_write_text(stored, json.dumps([None if g is None else g.to_node_link() for g in graphs]))
        for a, g in zip(anns, graphs):
            if g is None:
                excluded["thinkprobe"] += 1
                continue
            items.append(Item(a.trace_id, prompt_row(a.trace_id), g, sentence_pairs(a, g, mapping)))
        log(f"{path.name}: {len(anns)} annotated traces, {sum(1 for g in graphs if g is not None)} graphs")
    return items, dict(excluded)


def _fold(t: str) -> str:
    return t if t in METACOGNITIVE else ""


def unit_table(items: list[Item]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, targets (index into :data:`CLASSES`) and weights (typed sentences) of every unit holding a
    compared sentence."""
    xs, ys, ws = [], [], []
    for it in items:
        g = it.graph
        votes: dict[int, dict[str, int]] = {}
        for t, r in it.sentences:
            v = votes.setdefault(t, {})
            v[_fold(r)] = v.get(_fold(r), 0) + 1
        if not votes:
            continue
        x = features(g.texts, g.boundaries, g.edges, g.embeddings)
        for t, v in sorted(votes.items()):
            best = max(CLASSES, key=lambda c: (v.get(c, 0), -CLASSES.index(c)))
            xs.append(x[t])
            ys.append(CLASSES.index(best))
            ws.append(sum(v.values()))
    return np.array(xs), np.array(ys), np.array(ws, dtype=float)


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, setting: dict[str, Any], dim: int) -> Artifact:
    """A multinomial logistic regression on standardised features (scikit-learn, lbfgs), as an :class:`Artifact`
    rounded to 6 significant digits (what is shipped is what is scored)."""
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    clf = LogisticRegression(C=setting["C"], class_weight=setting["class_weight"], max_iter=2000)
    clf.fit((x - mean) / scale, y, sample_weight=w)
    coef = np.zeros((len(CLASSES), x.shape[1]))
    intercept = np.full(len(CLASSES), -1e9)  # a class absent from the training data is never predicted
    for k, c in enumerate(clf.classes_):
        coef[c], intercept[c] = clf.coef_[k], clf.intercept_[k]
    r = lambda a: np.array([float(f"{v:.6g}") for v in np.ravel(a)]).reshape(np.shape(a))  # noqa: E731
    return Artifact(CLASSES, r(mean), r(scale), r(coef), r(intercept), dim, lexicon_hashes(), "(fitted)")


def typed(item: Item, params: Params, artifact: Artifact | None) -> list[str]:
    """The node types of ``item``'s graph under the paper typer (``artifact`` None) or the learned one."""
    g = item.graph
    decided = None if artifact is None else decide(g.texts, g.boundaries, g.edges, g.embeddings, artifact)
    return classify_nodes(g.boundaries, g.edges, g.embeddings, params.classification, decided)


def scores(items: list[Item], params: Params, artifact: Artifact | None) -> dict[str, Any]:
    """Per-sentence agreement of one typer with the reference: kappa, per-type precision/recall/shares, and the
    precision and recall of the metacognitive family (CRT or MET on both sides)."""
    pairs = []
    for it in items:
        types = typed(it, params, artifact)
        pairs += [(r, types[t]) for t, r in it.sentences]
    ref, hyp = [a for a, _ in pairs], [b for _, b in pairs]

    per_type = {}
    for t in NODE_TYPES:
        tp = sum(1 for a, b in pairs if a == t and b == t)
        n_h, n_r = hyp.count(t), ref.count(t)
        per_type[t] = {"precision": tp / n_h if n_h else None, "recall": tp / n_r if n_r else None,
                       "share": n_h / len(pairs) if pairs else None}
    fam = lambda x: x in METACOGNITIVE  # noqa: E731
    tp = sum(1 for a, b in pairs if fam(a) and fam(b))
    n_h, n_r = sum(map(fam, hyp)), sum(map(fam, ref))
    return {"n_traces": len(items), "n_sentences": len(pairs), "kappa": cohen_kappa(ref, hyp),
            "per_type": per_type,
            "metacognition_family": {"precision": tp / n_h if n_h else None, "recall": tp / n_r if n_r else None}}


def train(items: list[Item], params: Params, seed: int, log=print) -> tuple[Artifact, dict[str, Any]]:
    """Split by prompt, choose the grid setting on tune, refit on train + tune, score both typers on test."""
    part = split_prompts((it.row for it in items), seed)
    by = {p: [it for it in items if part[it.row] == p] for p in PARTS}
    dim = items[0].graph.embeddings.shape[1]
    x, y, w = unit_table(by["train"])
    grid = []
    for setting in GRID:
        art = fit(x, y, w, setting, dim)
        k = scores(by["tune"], params, art)["kappa"]
        grid.append({**setting, "tune_kappa": k})
        log(f"C={setting['C']} class_weight={setting['class_weight']}: tune kappa {k:.4f}")
    best = max(grid, key=lambda g: g["tune_kappa"])
    setting = {"C": best["C"], "class_weight": best["class_weight"]}
    x2, y2, w2 = unit_table(by["train"] + by["tune"])
    art = fit(x2, y2, w2, setting, dim)
    record = {
        "split": {"seed": seed, "parts": PARTS, "prompts": {p: sorted(r for r, q in part.items() if q == p) for p in PARTS},
                  "traces": {p: len(v) for p, v in by.items()}, "units_fitted": int(len(y2))},
        "grid": grid, "chosen": setting,
        "test": {"paper": scores(by["test"], params, None), "learned": scores(by["test"], params, art)},
    }
    return art, record


def artifact_json(art: Artifact, provenance: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    return {"format": FORMAT,
            "model": {"kind": "multinomial logistic regression (scikit-learn lbfgs) on standardised features",
                      "classes": list(art.classes), "embedding_dim": art.embedding_dim,
                      "features": feature_names(art.embedding_dim), "lexicons": art.lexicons,
                      "mean": art.mean.tolist(), "scale": art.scale.tolist(), "coef": art.coef.tolist(),
                      "intercept": art.intercept.tolist()},
            "provenance": provenance, "training": record}


def _defined(x: float) -> float | None:
    """``None`` for an undefined score (NaN: no sentence of that type), as JSON has no NaN."""
    return None if x != x else x


def slice_scores(path: str | Path, rows: list[int], mapping: Mapping, encoder: Any) -> dict[str, Any]:
    """Both typers' scores on the records ``rows`` of ``path``, end to end through :func:`.run.validate` (the
    pipeline with ``classification.typer`` set, the packaged artifact): what the recorded-scores test reruns."""
    import tempfile

    from .run import validate

    path = Path(path)
    records = json.loads(path.read_text(encoding="utf-8"))
    cut = [{**records[r], "record": r} for r in rows]
    out: dict[str, Any] = {"file": path.name, "rows": list(rows)}
    with tempfile.TemporaryDirectory() as tmp:
        cut_path = Path(tmp) / path.name  # the file name names the model (formats.step_labels)
        cut_path.write_text(json.dumps(cut), encoding="utf-8")
        for typer in ("paper", "learned"):
            params = Params.from_dict({"classification": {"typer": typer}})
            s = validate("step_labels", [cut_path], mapping, params, encoder, draws=1).summary
            nt = s["node_types"]
            out[typer] = {"n_compared": s["n_compared"], "n_sentences": nt["n_sentences"], "kappa": nt["kappa"],
                          "precision": {t: _defined(nt["per_type"][t]["precision"]) if t in nt["per_type"] else None
                                        for t in METACOGNITIVE}}
    return out
