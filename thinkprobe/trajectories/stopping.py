"""Sequential stopping: stop sampling a checkpoint once its leading answer is settled.

The paper samples a fixed N = 16 continuations at every checkpoint and names the estimation cost as its
own open problem. Most checkpoints late in a trace are near-unanimous, so most of those samples change
nothing. The rule here samples continuations in rounds and stops a checkpoint once its *leading label is
a settled majority*:

    after each round, with n labels so far, c of them the most frequent label (null counts as a label),
    stop when n >= min_n and  P(p_lead > threshold | c, n) >= 1 - alpha,

with ``p_lead`` the leading label's probability under a Jeffreys posterior, Beta(c + 1/2, n - c + 1/2);
otherwise sample another round, up to N. Defaults: rounds of 4, min_n = 4, threshold = 1/2, alpha = 0.05,
so 4 unanimous labels stop (P = 0.985), 3 of 4 do not (P = 0.84), 7 of 8 do (P = 0.98).

Why this rule: the dominant set, switches, gold dominance and the mechanisms depend on which label leads;
a settled majority fixes it. What it does not protect is the mass of minority labels (S_eff, TV), which is
estimated from fewer samples: :func:`stopping_error` measures the saving and the total-variation error
against fixed N on the same continuations, since the first n of N i.i.d. continuations are exactly a
sequential sample of size n.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from statistics import median
from typing import Any, Hashable, Sequence


@dataclass(frozen=True)
class StoppingRule:
    min_n: int = 4
    round_size: int = 4
    alpha: float = 0.05
    threshold: float = 0.5

    def __post_init__(self):
        if self.min_n < 1 or self.round_size < 1:
            raise ValueError("min_n and round_size must be >= 1")
        if not 0 < self.alpha < 1 or not 0 <= self.threshold < 1:
            raise ValueError("alpha must be in (0, 1) and threshold in [0, 1)")

    def lead_posterior(self, labels: Sequence[Hashable]) -> float:
        """P(p_lead > threshold) under Beta(c + 1/2, n - c + 1/2); 0 for no labels."""
        from scipy.stats import beta

        if not labels:
            return 0.0
        c = Counter(labels).most_common(1)[0][1]
        return float(beta.sf(self.threshold, c + 0.5, len(labels) - c + 0.5))

    def settled(self, labels: Sequence[Hashable]) -> bool:
        """True when the checkpoint may stop sampling.

        >>> r = StoppingRule()
        >>> r.settled(["4"] * 4), r.settled(["4", "4", "4", None]), r.settled(["4"] * 7 + ["5"])
        (True, False, True)
        """
        return len(labels) >= self.min_n and self.lead_posterior(labels) >= 1 - self.alpha

    def next_n(self, labels: Sequence[Hashable], n_max: int) -> int:
        """How many more continuations to sample at a checkpoint (0: done)."""
        if len(labels) >= n_max or self.settled(labels):
            return 0
        first = max(self.min_n, self.round_size) if not labels else self.round_size
        return min(first, n_max - len(labels))

    def as_dict(self) -> dict[str, Any]:
        return {"min_n": self.min_n, "round_size": self.round_size, "alpha": self.alpha, "threshold": self.threshold}


def simulate(labels: Sequence[Hashable], rule: StoppingRule, n_max: int | None = None) -> int:
    """The number of continuations the rule would have used, reading ``labels`` in sampling order."""
    n_max = len(labels) if n_max is None else min(n_max, len(labels))
    n = 0
    while True:
        more = rule.next_n(list(labels[:n]), n_max)
        if more == 0:
            return n
        n += more


def tv(p: Sequence[Hashable], q: Sequence[Hashable]) -> float:
    """Total variation between the empirical distributions of two label samples (null is a label)."""
    cp, cq = Counter(p), Counter(q)
    return 0.5 * sum(abs(cp[k] / len(p) - cq[k] / len(q)) for k in set(cp) | set(cq))


def _leaders(labels: Sequence[Hashable]) -> set:
    c = Counter(labels)
    top = max(c.values())
    return {k for k, v in c.items() if v == top}


def stopping_error(checkpoint_labels: Sequence[Sequence[Hashable]], rule: StoppingRule) -> dict[str, Any]:
    """Saving and error of sequential stopping against fixed N, on the same continuations.

    For each checkpoint with N labels (in sampling order) the rule's stopped sample is its first n labels.
    Returns the number of checkpoints, the continuations used by fixed N and by the rule, ``saving`` =
    1 - used/fixed, the median and maximum TV between the stopped and the full-N distributions, and the
    share of checkpoints whose dominant (leading, ties kept) set is unchanged.
    """
    rows = [list(ls) for ls in checkpoint_labels if ls]
    used = [simulate(ls, rule) for ls in rows]
    tvs = [tv(ls[:n], ls) for ls, n in zip(rows, used)]
    same = [_leaders(ls[:n]) == _leaders(ls) for ls, n in zip(rows, used)]
    fixed = sum(len(ls) for ls in rows)
    return {"checkpoints": len(rows), "continuations_fixed": fixed, "continuations_stopped": sum(used),
            "saving": (1 - sum(used) / fixed) if fixed else None,
            "median_tv": median(tvs) if tvs else None, "max_tv": max(tvs) if tvs else None,
            "dominant_unchanged": (sum(same) / len(same)) if same else None}
