"""Success and failure mechanisms from gold-answer dominance (paper section 4, Fig. 2).

Input: the gold-dominance sequence g_0, ..., g_K (g_t = the gold answer is in the dominant set D_t, ties
included) and the endpoint correctness c of the realized trace (its own parsed answer equals gold).
The paper names four mechanisms for correct traces and four complementary ones for incorrect traces,
with escape and failed rescue "moving away from a state in which the correct answer was dominant" and
detour success "a temporary degradation". Our definitions partition every sequence (length >= 1) and
both outcomes: each (g, c) gets exactly one mechanism. Write T for g_t = True, F for False.

Correct endpoint (c = True)
    ``stable_success``   g_t = T for every t (T...T): gold dominant throughout.
    ``rescue``           g_0 = F, and once gold becomes dominant it stays to the end (F...F T...T, at
                         least one F and one T): reasoning finds the gold answer and keeps it.
    ``detour_success``   g_K = T, and some T is followed later by an F (gold lost at least once, then
                         regained): T F T, F T F T, ... ; a temporary degradation.
    ``fragile_success``  g_K = F: the realized answer is correct, yet gold is not dominant at the final
                         checkpoint (the continuations from the full reasoning mostly disagree with it).

Incorrect endpoint (c = False), the mirror images
    ``stable_failure``   g_t = F for every t: gold never dominant.
    ``escape``           g_0 = T, and once gold stops being dominant it never returns (T...T F...F, at
                         least one T and one F): reasoning moves away from an initially correct state.
    ``failed_rescue``    g_K = F, and some F is followed later by a T that is itself followed by an F
                         (gold gained after being absent, then lost by the end): F T F, T F T F, ...
    ``fragile_failure``  g_K = T: the realized answer is wrong although gold is dominant at the final
                         checkpoint.

For c = True the four cases split on g_K (F: fragile) and, for g_K = T, on the number of T->F
transitions (0 with g_0 = T: stable; 0 with g_0 = F: rescue; >= 1: detour). For c = False the split is the
same with T and F exchanged (g_K = T: fragile; 0 F->T transitions with g_0 = F: stable; with g_0 = T:
escape; >= 1: failed rescue). A one-checkpoint trajectory (K = 0) is stable or fragile.
"""

from __future__ import annotations

from typing import Sequence

SUCCESS_MECHANISMS = ("stable_success", "rescue", "detour_success", "fragile_success")
FAILURE_MECHANISMS = ("stable_failure", "escape", "failed_rescue", "fragile_failure")
MECHANISMS = SUCCESS_MECHANISMS + FAILURE_MECHANISMS


def _transitions(g: Sequence[bool], start: bool) -> int:
    return sum(1 for a, b in zip(g, g[1:]) if a == start and b != start)


def mechanism(gold_dominant: Sequence[bool], correct: bool) -> str:
    """The mechanism of a trace (definitions in the module docstring).

    Parameters
    ----------
    gold_dominant : sequence of bool
        g_t for t = 0..K: is the gold answer in the dominant set at checkpoint t (ties included).
    correct : bool
        Is the realized trace's own final answer correct.

    Returns
    -------
    str
        One of :data:`MECHANISMS`.

    Raises
    ------
    ValueError
        For an empty sequence.

    Examples
    --------
    >>> mechanism([False, False, True, True], True)
    'rescue'
    >>> mechanism([True, False, True], True)
    'detour_success'
    >>> mechanism([True, True, False], False)
    'escape'
    >>> mechanism([False, True, False], False)
    'failed_rescue'
    """
    g = [bool(x) for x in gold_dominant]
    if not g:
        raise ValueError("empty gold-dominance sequence: a mechanism needs at least one checkpoint")
    if correct:
        if not g[-1]:
            return "fragile_success"
        if _transitions(g, True) == 0:
            return "stable_success" if g[0] else "rescue"
        return "detour_success"
    if g[-1]:
        return "fragile_failure"
    if _transitions(g, False) == 0:
        return "stable_failure" if not g[0] else "escape"
    return "failed_rescue"
