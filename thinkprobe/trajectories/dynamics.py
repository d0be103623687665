"""Trajectory metrics: exploration, revision, motion, commitment (paper section 4).

A trajectory is a sequence of states p_0, ..., p_K (one per checkpoint, p_0 = the empty prefix, p_K =
the full reasoning; K here counts checkpoints, not tokens). The paper names the metrics without formulas;
the definitions below are ours and are listed in docs/trajectories.md ("Definitions").

Exploration
    H_t = -sum_a p_t(a) ln p_t(a) (nats; null is a category). S_eff,t = exp(H_t), the Hill number of
    order 1 ("the effective number of plausible answers"). ``s_eff`` is its mean over the checkpoints;
    ``s_eff_profile`` the sequence; ``s_eff_max`` its maximum.
Revision
    D_t = argmax_a p_t(a) with ties kept (null included when maximal). ``switches`` = #{t >= 1 : D_t !=
    D_{t-1}}. ``recurrence`` = #{(t, a) : a in D_t, a not in D_{t-1}, a in D_u for some u < t-1}: a
    formerly dominant answer that had left the dominant set returns (``recurrent`` = recurrence > 0).
    ``n_dominant_answers`` = |union_t D_t|.
Motion
    TV_t = TV(p_{t-1}, p_t) = 1/2 sum_a |p_t(a) - p_{t-1}(a)|, t = 1..K; ``path_length`` L = sum_t TV_t,
    undefined (None) for a single checkpoint (K = 0: no step, as the paper says), so it is left out of means.
    Steps are weighted by their token length w_t = j_t - j_{t-1} (the checkpoint positions; the last step,
    K_tokens - last multiple of the stride, is usually shorter than the stride s = max_t w_t):
    ``motion_concentration`` = sum_t (TV_t / L)^2 * s / w_t, the Herfindahl index of the motion shares over
    stride-sized bins (a shorter step is a partial bin): 1 when all motion happens in one full step, about
    s / K_tokens when it is spread evenly over the tokens (a little above 1 only when all motion falls in a
    final step shorter than the stride); undefined (None) for L = 0 or K = 0. ``motion_center`` = sum_t
    (TV_t / L) * (j_t - j_0) / (j_K - j_0), where in the trace (0 = start, 1 = end, in tokens) motion happens
    on average; None for L = 0. Without positions every step has width 1 (the plain Herfindahl index and t/K). ``r_direct`` = TV(p_0, p_K) / L in [0, 1] (triangle inequality): 1 for a
    straight move, small for back-and-forth; None for L = 0 (the paper's "undefined for zero motion").
Commitment
    ``t_commit`` = the first checkpoint t such that one non-null answer a has p_u(a) >= tau for every u >= t
    (from t on, inclusive, to the end); None if no answer holds >= tau at the end. Reported in the units of
    ``positions`` (prefix token counts when given, else checkpoint indices), with ``t_commit_index`` the
    checkpoint index and ``committed_answer`` the answer. The null label cannot commit (it is no hypothesis).

Undefined values are None and are left out of summaries (means skip them), as the paper does.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from thinkprobe.trajectories.distributions import (
    dominant_set,
    effective_support,
    entropy_profile,
    total_variation,
)

State = Mapping[Any, float]

SCALAR_METRICS = (
    "s_eff", "s_eff_max", "entropy_mean", "switches", "recurrence", "n_dominant_answers", "path_length",
    "motion_concentration", "motion_center", "r_direct", "t_commit",
)


def switches(dominant: Sequence[frozenset]) -> int:
    """Number of checkpoints whose dominant set differs from the previous one.

    >>> switches([frozenset("a"), frozenset("b"), frozenset("b"), frozenset("a")])
    2
    """
    return sum(1 for prev, cur in zip(dominant, dominant[1:]) if cur != prev)


def recurrence(dominant: Sequence[frozenset]) -> int:
    """Number of returns of a formerly dominant answer after it had left the dominant set.

    >>> recurrence([frozenset("a"), frozenset("b"), frozenset("a"), frozenset("b")])
    2
    """
    count = 0
    seen: set = set()
    for t in range(1, len(dominant)):
        if t >= 2:
            seen |= dominant[t - 2]
        count += sum(1 for a in dominant[t] if a not in dominant[t - 1] and a in seen)
    return count


def commitment(states: Sequence[State], tau: float = 0.8) -> tuple[int | None, Any]:
    """(first checkpoint index from which one non-null answer keeps p >= tau to the end, that answer).

    >>> commitment([{"a": 0.5, "b": 0.5}, {"a": 0.9, "b": 0.1}, {"a": 0.8, "b": 0.2}])
    (1, 'a')
    >>> commitment([{"a": 0.9, "b": 0.1}, {"a": 0.5, "b": 0.5}])
    (None, None)
    """
    if not states:
        return None, None
    final = [a for a, p in states[-1].items() if a is not None and p >= tau]
    best: tuple[int | None, Any] = (None, None)
    for a in sorted(final, key=str):
        t = len(states) - 1
        while t > 0 and states[t - 1].get(a, 0.0) >= tau:
            t -= 1
        if best[0] is None or t < best[0]:
            best = (t, a)
    return best


def dynamics(states: Sequence[State], tau: float = 0.8, positions: Sequence[float] | None = None,
             support: str = "exp_entropy") -> dict:
    """All trajectory metrics of one trajectory (formulas in the module docstring).

    Parameters
    ----------
    states : sequence of mappings label -> probability
        p_0, ..., p_K in checkpoint order (at least one).
    tau : float
        Commitment threshold (paper: 0.8).
    positions : sequence of numbers, optional
        The checkpoint positions (prefix token counts); ``t_commit`` is reported in these units.
        Defaults to the checkpoint indices 0..K.
    support : {"exp_entropy", "inverse_simpson"}
        Effective-support definition.

    Returns
    -------
    dict
        Scalars ``s_eff``, ``s_eff_max``, ``entropy_mean``, ``switches``, ``recurrence``,
        ``n_dominant_answers``, ``path_length``, ``motion_concentration``, ``motion_center``, ``r_direct``,
        ``t_commit``, ``t_commit_index``, ``committed_answer``, ``n_checkpoints``; sequences
        ``entropy_profile``, ``s_eff_profile``, ``tv_steps``, ``dominant_sets`` (sorted lists). None where
        undefined.

    Raises
    ------
    ValueError
        For no states, a length mismatch with ``positions``, or a state that is not a distribution
        (empty, negative, or not summing to 1 within 1e-6), naming the checkpoint.

    Examples
    --------
    A switch from b to a that then commits (TV steps 0.8 and 0):

    >>> d = dynamics([{"a": 0.1, "b": 0.9}, {"a": 0.9, "b": 0.1}, {"a": 0.9, "b": 0.1}])
    >>> d["switches"], d["path_length"], d["r_direct"], d["t_commit"]
    (1, 0.8, 1.0, 1)
    """
    if len(states) == 0:
        raise ValueError("empty trajectory: dynamics needs at least one state")
    k = len(states) - 1
    if positions is None:
        positions = list(range(k + 1))
    if len(positions) != len(states):
        raise ValueError(f"{len(positions)} positions for {len(states)} states")
    for t, p in enumerate(states):
        total = sum(p.values())
        if not p or min(p.values()) < 0 or abs(total - 1.0) > 1e-6:
            raise ValueError(f"state {t} is not a probability distribution (sum {total:.6g}): {dict(p)!r:.200}")
    entropies = entropy_profile(states)
    s_eff_profile = [effective_support(p, support) for p in states]
    dominant = [dominant_set(p) for p in states]
    steps = [total_variation(states[t - 1], states[t]) for t in range(1, k + 1)]
    length = sum(steps)
    moving = length > 0
    widths = [positions[t] - positions[t - 1] for t in range(1, k + 1)]
    full = max(widths) if widths else 0
    if moving and min(widths) <= 0:
        raise ValueError(f"positions must increase: {list(positions)}")
    span = positions[-1] - positions[0]
    t_index, answer = commitment(states, tau)
    return {
        "n_checkpoints": k + 1,
        "s_eff": sum(s_eff_profile) / len(s_eff_profile),
        "s_eff_max": max(s_eff_profile),
        "entropy_mean": sum(entropies) / len(entropies),
        "switches": switches(dominant),
        "recurrence": recurrence(dominant),
        "n_dominant_answers": len(frozenset().union(*dominant)),
        "path_length": length if k else None,
        "motion_concentration": (sum((s / length) ** 2 * full / w for s, w in zip(steps, widths)) if moving
                                 else None),
        "motion_center": (sum(s / length * (positions[t + 1] - positions[0]) / span for t, s in enumerate(steps))
                          if moving else None),
        "r_direct": total_variation(states[0], states[-1]) / length if moving else None,
        "t_commit": positions[t_index] if t_index is not None else None,
        "t_commit_index": t_index,
        "committed_answer": answer,
        "entropy_profile": entropies,
        "s_eff_profile": s_eff_profile,
        "tv_steps": steps,
        "dominant_sets": [sorted(d, key=lambda a: (a is None, str(a))) for d in dominant],
    }
