"""Predictive states over answer labels: p_t from N parsed continuations, entropy, dominance, endpoint.

A *state* is a mapping label -> probability over the labels observed at one checkpoint, the null label
(``None``) included as a category of its own (the paper's null category for invalid outputs). Labels
with zero probability are simply absent; every function treats an absent label as probability 0.

p_t(a) = #{i : label_i = a} / N, the Monte Carlo estimate of the prefix-conditioned predictive
distribution from N independent continuations (paper App. A.1).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Hashable, Mapping, Sequence


Label = Hashable
State = Mapping[Any, float]

TIE_TOL = 1e-12


def _label_key(label: Any) -> tuple[int, str]:
    return (1, "") if label is None else (0, str(label))


def state_from_labels(labels: Sequence[str | None]) -> dict[str | None, float]:
    """Empirical distribution of N labels (None = null), ordered by decreasing mass, then label.

    >>> state_from_labels(["18", "18", None, "20"])
    {'18': 0.5, '20': 0.25, None: 0.25}

    Raises
    ------
    ValueError
        For an empty label list (no distribution can be estimated).
    """
    if len(labels) == 0:
        raise ValueError("no labels: a state needs at least one continuation")
    counts = Counter(labels)
    n = len(labels)
    return {label: counts[label] / n for label in sorted(counts, key=lambda a: (-counts[a], _label_key(a)))}


def entropy(state: State) -> float:
    """Shannon entropy H(p) = -sum_a p(a) ln p(a), in nats (null label counted as a category)."""
    return -sum(p * math.log(p) for p in state.values() if p > 0)


def entropy_profile(states: Sequence[State]) -> list[float]:
    """H(p_t) at every checkpoint: the entropy trajectory, a deterministic function of the states."""
    return [entropy(p) for p in states]


def effective_support(state: State, kind: str = "exp_entropy") -> float:
    """Effective number of answers: exp(H(p)) (``exp_entropy``, Hill number of order 1, our default)
    or 1 / sum_a p(a)^2 (``inverse_simpson``, order 2). Both are 1 for a point mass and k for a uniform
    distribution over k labels."""
    if kind == "exp_entropy":
        return math.exp(entropy(state))
    if kind == "inverse_simpson":
        return 1.0 / sum(p * p for p in state.values())
    raise ValueError(f"unknown effective-support kind {kind!r}: expected 'exp_entropy' or 'inverse_simpson'")


def dominant_set(state: State, tol: float = TIE_TOL) -> frozenset:
    """D(p) = argmax_a p(a), ties kept (every label within ``tol`` of the maximum). Includes the null
    label when it is maximal (an invalid-output majority is a dominant state of its own)."""
    if not state:
        return frozenset()
    top = max(state.values())
    return frozenset(a for a, p in state.items() if p >= top - tol)


def total_variation(p: State, q: State) -> float:
    """TV(p, q) = 1/2 sum_a |p(a) - q(a)| over the union of labels; in [0, 1].

    >>> total_variation({"a": 0.9, "b": 0.1}, {"a": 0.1, "b": 0.9})
    0.8
    """
    labels = set(p) | set(q)
    return round(0.5 * sum(abs(p.get(a, 0.0) - q.get(a, 0.0)) for a in labels), 12)


def endpoint_prediction(states: Sequence[State]) -> str | None | frozenset:
    """E(T): the dominant answer of the terminal state p_K (a frozenset when it is tied)."""
    if not states:
        raise ValueError("empty trajectory: no endpoint")
    dom = dominant_set(states[-1])
    if len(dom) == 1:
        return next(iter(dom))
    return dom


def trajectory_record_to_states(record: Mapping) -> list[dict[str | None, float]]:
    """The states p_t of a trace record (schema in :mod:`thinkprobe.trajectories`), in checkpoint order.

    Checkpoints are sorted by ``checkpoint_index``; a checkpoint with no labels (skipped: prefix over the
    context length, failed sampling) is left out.

    Raises
    ------
    ValueError
        When the record has no ``checkpoints`` list, or no checkpoint has labels; the message names the
        trace.
    """
    checkpoints = record.get("checkpoints")
    if not isinstance(checkpoints, list):
        raise ValueError(f"trace {_trace_name(record)}: no 'checkpoints' list")
    ordered = sorted(checkpoints, key=lambda c: c["checkpoint_index"])
    states = [state_from_labels(c["labels"]) for c in ordered if c.get("labels")]
    if not states:
        raise ValueError(f"trace {_trace_name(record)}: no checkpoint has sampled labels")
    return states


def _trace_name(record: Mapping) -> str:
    from ..units import unit_path  # on demand: `thinkprobe --help` imports this module (via dynamics)

    return unit_path(record, missing="?")
