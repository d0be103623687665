"""The scores of one annotated trace against its Thought Graph (docs/validity.md).

Both sides are read over one common sentence sequence (:func:`thinkprobe.stats.agreement.sentence_atoms`);
a character offset belongs to the sentence that contains it.

Boundaries
    The annotator's units and thinkprobe's Thought Units each start segments; boundary precision, recall and
    F1 within +-t sentences, Pk and WindowDiff (:mod:`thinkprobe.stats.agreement`; paper App. H).
Node types, per sentence
    A sentence's reference type is the mapped label of the annotated unit that contains its start; its
    thinkprobe type is the type of the Thought Unit that contains it (§3.3's priority rules). Sentences that
    no unit covers, or whose label maps to ``null`` or is missing, are not compared. Pooled over traces into
    a confusion matrix and Cohen's kappa (:func:`cohen_kappa`).
Edges, per type
    An annotated edge joins the Thought Units that contain the starts of its two units; a thinkprobe semantic
    edge (not SEQ) joins two Thought Units. Pairs are unordered (the formats point premise -> conclusion,
    thinkprobe's BACK points from the later unit to the earlier, §3.4) and an edge inside one Thought Unit
    is not comparable (counted apart). For each mapped type T: precision = |A_T & H_T| / |H_T|, recall =
    |A_T & H_T| / |A_T|, with A_T the annotated pairs mapped to T and H_T thinkprobe's pairs of type T
    (``ANY``: of every semantic type).
Where the outcome moves
    Where the annotation carries a per-unit outcome measure (Thought Anchors' resampling importance), the
    units that move it are those whose absolute value is in the trace's top quarter (at or above its 75th
    percentile, and non-zero). A set of units (those where a Thought Unit starts; where a TU of type T starts;
    those an annotator labelled L) is scored by the share of its units that move the outcome, against random
    sets of the same size drawn with the same count in each tenth of the trace (early units move the answer
    more, so position is held fixed): :func:`outcome_draws`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..graph import ThoughtGraph
from ..stats.agreement import agreement, segmentation_from_starts, sentence_atoms
from .annotation import AnnotatedTrace
from .mapping import ANY, Mapping

POSITION_BINS = 10
MOVE_QUANTILE = 0.75


def cohen_kappa(a: list[str], b: list[str]) -> float:
    """Cohen's kappa of two label sequences: ``(p_o - p_e) / (1 - p_e)``, ``p_e`` from the two sides'
    marginal shares (Cohen 1960). NaN when ``p_e = 1`` (as scikit-learn's ``cohen_kappa_score``).

    >>> round(cohen_kappa(["x", "x", "y", "y"], ["x", "y", "y", "y"]), 4)
    0.5
    """
    if len(a) != len(b):
        raise ValueError(f"label sequences of different lengths: {len(a)} and {len(b)}")
    if not a:
        return float("nan")
    labels = sorted(set(a) | set(b))
    idx = {x: i for i, x in enumerate(labels)}
    m = np.zeros((len(labels), len(labels)))
    for x, y in zip(a, b):
        m[idx[x], idx[y]] += 1
    n = m.sum()
    po = np.trace(m) / n
    pe = float((m.sum(1) / n) @ (m.sum(0) / n))
    return float("nan") if pe >= 1.0 else float((po - pe) / (1 - pe))


def _containing(starts: list[int], ends: list[int], offset: int) -> int | None:
    j = int(np.searchsorted(starts, offset, side="right")) - 1
    return j if j >= 0 and offset < ends[j] else None


@dataclass
class TraceScores:
    boundaries: dict[str, Any]
    type_pairs: list[tuple[str, str]]  # (reference type, thinkprobe type) per compared sentence
    edges: dict[str, dict[str, int]]  # type -> {"tp", "n_hyp", "n_ref"}
    edges_within_one_tu: int
    outcome: dict[str, Any] | None  # the sets' moving flags and positions, for outcome_draws


def score_trace(ann: AnnotatedTrace, graph: ThoughtGraph, mapping: Mapping, tolerance: int) -> TraceScores:
    text = ann.text
    atoms = sentence_atoms(text)
    firsts = [a for a, _ in atoms]
    ref = segmentation_from_starts([u.start for u in ann.units], atoms)
    tu_starts = [a for a, _ in graph.offsets]
    tu_ends = [b for _, b in graph.offsets]
    hyp = segmentation_from_starts(tu_starts, atoms)
    boundaries = agreement(ref, hyp, tolerance)

    u_starts, u_ends = [u.start for u in ann.units], [u.end for u in ann.units]
    pairs = []
    for s in firsts:
        k, t = _containing(u_starts, u_ends, s), _containing(tu_starts, tu_ends, s)
        if k is None or t is None:
            continue
        rtype = mapping.node_type(ann.units[k].label)
        if rtype is not None:
            pairs.append((rtype, graph.node_types[t]))

    def tu_of(offset: int) -> int | None:
        return _containing(tu_starts, tu_ends, offset)

    ref_pairs: dict[str, set] = {}
    within = 0
    for e in ann.edges:
        etype = mapping.edge_type(e.label)
        if etype is None:
            continue
        a, b = tu_of(ann.units[e.source].start), tu_of(ann.units[e.target].start)
        if a is None or b is None:
            continue
        if a == b:
            within += 1
            continue
        ref_pairs.setdefault(etype, set()).add(frozenset((a, b)))
    hyp_pairs: dict[str, set] = {}
    for s, t, etype in graph.semantic_edges():
        if s != t:
            hyp_pairs.setdefault(etype, set()).add(frozenset((s, t)))
            hyp_pairs.setdefault(ANY, set()).add(frozenset((s, t)))
    edges = {}
    for etype in sorted(set(v for v in mapping.edges.values() if v is not None)):
        r, h = ref_pairs.get(etype, set()), hyp_pairs.get(etype, set())
        edges[etype] = {"tp": len(r & h), "n_hyp": len(h), "n_ref": len(r)}

    outcome = None
    if ann.outcome is not None:
        outcome = _outcome_sets(ann, graph, atoms)
    return TraceScores(boundaries, pairs, edges, within, outcome)


def _outcome_sets(ann: AnnotatedTrace, graph: ThoughtGraph, atoms) -> dict[str, Any] | None:
    """Per unit: does it move the outcome, its position bin, and the sets of units to score."""
    values = np.asarray(ann.outcome, dtype=float)
    keep = np.flatnonzero(np.isfinite(values))
    keep = keep[keep > 0]  # the first unit opens every trace: no boundary can fall there
    if len(keep) < 2:
        return None
    mag = np.abs(values[keep])
    cut = np.quantile(mag, MOVE_QUANTILE)
    moves = (mag >= cut) & (mag > 0)
    n = len(ann.units)
    bins = np.minimum((keep * POSITION_BINS) // n, POSITION_BINS - 1)
    firsts = [a for a, _ in atoms]

    def sentence(offset: int) -> int:
        return int(np.searchsorted(firsts, offset, side="right")) - 1

    unit_sentence = {sentence(ann.units[k].start): j for j, k in enumerate(keep)}
    sets: dict[str, list[int]] = {"TU starts": []}
    for t, (a, _) in enumerate(graph.offsets):
        j = unit_sentence.get(sentence(a))
        if j is None or t == 0:
            continue
        sets["TU starts"].append(j)
        sets.setdefault(f"TU type {graph.node_types[t]}", []).append(j)
    for j, k in enumerate(keep):
        label = ann.units[k].label
        if label is not None:
            sets.setdefault(f"annotated {label}", []).append(j)
    return {"moves": moves, "bins": bins, "sets": {k: sorted(set(v)) for k, v in sets.items()}}


def outcome_draws(outcome: dict[str, Any], name: str, rng: np.random.Generator, draws: int) -> tuple[int, int, np.ndarray]:
    """For the set ``name`` of one trace: its size, how many of its units move the outcome, and the same count
    for ``draws`` random sets of its size with the same number of units in each position bin."""
    members = outcome["sets"].get(name, [])
    moves, bins = outcome["moves"], outcome["bins"]
    hits = int(moves[members].sum()) if members else 0
    random_hits = np.zeros(draws, dtype=np.int64)
    if members:
        for b, count in zip(*np.unique(bins[members], return_counts=True)):
            pool = np.flatnonzero(bins == b)
            flags = moves[pool].astype(np.int64)
            # ``count`` of the bin's units without replacement, ``draws`` times: the first ``count`` of a permutation
            keys = rng.random((draws, len(pool)))
            chosen = np.argsort(keys, axis=1)[:, :count]
            random_hits += flags[chosen].sum(axis=1)
    return len(members), hits, random_hits
