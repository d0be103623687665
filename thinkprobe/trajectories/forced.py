"""The forced-answer estimator: end the reasoning at the prefix and sample only the short answer.

Full continuations (the paper's estimator) let the model finish its reasoning from each prefix, hundreds
of tokens per sample. The forced-answer estimator instead appends an *answer suffix* to the prefix and
samples only the answer, a few tokens:

* native reasoners: ``</think>`` (closing the reasoning), a blank line, then the task's answer cue;
* prompted chain of thought: the task's answer cue alone (the reasoning simply stops there).

The answer cue is per task: each task file declares its default (``Task.answer_cue``,
:func:`thinkprobe.tasks.answer_cues`) and ``trajectories.forced.answer_cues`` overrides it per task. The cue of
a batch's own task is resolved once, into its settings
(:class:`~thinkprobe.trajectories.sampling.SamplingConfig`), and passed here as text: this module, which is
the forced estimator's sampling code (its hash keys every forced batch), holds no cue and imports no task, so
editing a task's extraction relabels and never resamples. The label is parsed from ``cue + sampled text`` (so
"Therefore, the final answer is " + "42." reads as an anchored answer). It estimates a different quantity:
p(answer | prefix, stop now) instead of p(answer | prefix, continue reasoning). How far the two agree on the
same checkpoints, and at what cost, is measured by :func:`compare_estimators` (``bench/trajectory_bench.py``).
"""

from __future__ import annotations

from statistics import median
from typing import Any, Hashable, Sequence

from .stopping import _leaders, tv


def forced_suffix_text(cue: str, native: bool) -> str:
    """The text appended to a prefix: ``</think>\\n\\n`` + the cue for native reasoners, the cue otherwise.

    >>> forced_suffix_text("\\nTherefore, the final answer is ", native=True)
    '\\n</think>\\n\\nTherefore, the final answer is '
    """
    return ("\n</think>\n\n" + cue.lstrip("\n")) if native else cue


def forced_suffix_ids(tokenizer, cue: str, native: bool) -> tuple[int, ...]:
    """:func:`forced_suffix_text` in the model's token ids (what is appended to a prefix's ids)."""
    return tuple(tokenizer.encode(forced_suffix_text(cue, native), add_special_tokens=False))


def forced_answer_text(cue: str, sampled: str) -> str:
    """What the parser reads for a forced answer: the cue followed by the sampled text ("" for an empty one).

    >>> forced_answer_text("\\nTherefore, the answer is (", "B).")
    'Therefore, the answer is ( B).'
    """
    return cue.strip() + " " + sampled.lstrip() if sampled.strip() else ""


def compare_estimators(full: Sequence[Sequence[Hashable]], forced: Sequence[Sequence[Hashable]],
                       full_tokens: int, forced_tokens: int) -> dict[str, Any]:
    """Agreement and cost of the forced-answer estimator against full continuations, checkpoint by checkpoint.

    ``full[i]`` and ``forced[i]`` are the labels of the same checkpoint under each estimator; the token
    counts are the sampled (decode) tokens each spent. Returns the checkpoints compared, the median and mean
    TV between the two distributions, the share of checkpoints whose dominant sets (ties kept) are equal,
    and ``cost_ratio`` = forced tokens / full tokens.
    """
    pairs = [(list(a), list(b)) for a, b in zip(full, forced) if a and b]
    tvs = [tv(a, b) for a, b in pairs]
    same = [_leaders(a) == _leaders(b) for a, b in pairs]
    return {"checkpoints": len(pairs), "median_tv": median(tvs) if tvs else None,
            "mean_tv": (sum(tvs) / len(tvs)) if tvs else None,
            "dominant_agreement": (sum(same) / len(same)) if same else None,
            "full_tokens": full_tokens, "forced_tokens": forced_tokens,
            "cost_ratio": (forced_tokens / full_tokens) if full_tokens else None}
