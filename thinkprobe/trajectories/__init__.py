"""Answer-distribution trajectories: parsing, distributions, dynamics, mechanisms, aggregates.

Follows "Answer-Distribution Trajectories: A Stochastic-Dynamics View of LLM Reasoning" (Gonzàlez i
Català et al., 2026). A realized reasoning trace is cut into prefixes at checkpoints; at each checkpoint
N continuations are sampled and their final answers parsed into discrete labels; the empirical
distribution over labels (plus the null label for invalid or missing answers) is the checkpoint's
*state*; the sequence of states is the trajectory, summarised by :func:`dynamics` and :func:`mechanism`.

Everything here is pure, engine-free analysis: no module of this subpackage imported by this
``__init__`` imports vLLM, torch or Snakemake. Sampling modules (checkpoints, continuation sampling,
forced-answer estimator, sequential stopping) live beside it and import their engines lazily.

Public interface
----------------
``parse_answer(text: str, task: str, *, strict: bool = False) -> str | None``
    Task in ``gsm8k``, ``svamp``, ``arc``, ``math``. ``None`` is the null label. Equivalent answers map
    to the same canonical label string, and a label parses to itself, so the gold label is
    ``parse_answer(question.gold, task)`` (see :mod:`thinkprobe.trajectories.parsing`; the box reader,
    digit keys and task list are :mod:`thinkprobe.answers`). A text cut off by the token budget or the
    context is read with ``parse_cut_answer`` (a complete answer statement only, else None).
``dynamics(states: Sequence[Mapping[str | None, float]], tau: float = 0.8, positions=None) -> dict``
    Trajectory metrics (see :mod:`thinkprobe.trajectories.dynamics`): ``s_eff`` (mean over checkpoints
    of exp(entropy)), ``s_eff_profile``, ``entropy_profile``, ``switches``, ``recurrence``,
    ``path_length``, ``tv_steps``, ``motion_concentration``, ``motion_center``, ``r_direct``,
    ``t_commit`` (in ``positions`` units), ``dominant_sets``, ... ; ``None`` where undefined.
``mechanism(gold_dominant: Sequence[bool], correct: bool) -> str``
    One of ``stable_success``, ``rescue``, ``detour_success``, ``fragile_success``,
    ``stable_failure``, ``escape``, ``failed_rescue``, ``fragile_failure``.
``trajectory_record_to_states(record: Mapping) -> list[dict[str | None, float]]``
    The states p_t of a trace record (schema below), one per checkpoint, in checkpoint order.
``trace_summary(record: Mapping, tau: float = 0.8) -> dict``
    One flat row per trace: the ids and other scalar fields of the record, ``gold``, ``endpoint_label``,
    ``correct`` (endpoint_label == gold), ``gold_dominant`` sequence, ``mechanism`` (None without a gold
    answer), ``cot_tokens``, and every scalar of :func:`dynamics` (``t_commit`` in prefix tokens).
    Tables, groups, matched comparisons and disagreement: :mod:`thinkprobe.trajectories.aggregates`;
    figures: :mod:`thinkprobe.trajectories.figures` (matplotlib, imported only there).

Record schema (the data contract with the sampling side)
--------------------------------------------------------
One trace record (a JSON object)::

    {
      "model": str, "question_set": str, "question_id": str, "run": int | str,
      "task": "gsm8k" | "svamp" | "arc" | "math",
      "gold": str | None,              # canonical gold label (parse_answer(gold, task)); None if unknown
      "endpoint_label": str | None,    # label parsed from the realized trace's own final answer
      "checkpoints": [                 # ascending checkpoint_index; 0 = empty prefix, last = K
        {
          "checkpoint_index": int,     # position in J = {0, s, 2s, ..., K}, i.e. 0, 1, 2, ...
          "prefix_tokens": int,        # number of reasoning tokens in the prefix (0, s, 2s, ..., K)
          "labels": [str | None, ...], # N parsed labels of the continuations (None = null label)
          ...                          # free: token counts, cached tokens, estimator, status
        },
        ...
      ],
      "cot_tokens_realized": int,      # optional: K of the realized trace (reasoning tokens)
      "incomplete": bool,              # optional: the final checkpoint (K) has no labels
      "decoding": str, "temperature": float, ...   # optional: the decoding condition sampled
      ...                              # free: provenance, status, exclusion reason
    }

A checkpoint may also carry ``n_cut_budget``, ``n_cut_context``, ``n_cut_labelled`` and ``n_null``
(continuations cut by the budget or the context, cut ones labelled from a complete answer statement, and
null labels), which ``trace_summary`` sums. An incomplete record
(:func:`~thinkprobe.trajectories.labelling.trajectory_incomplete`: its final checkpoint, at K, has no
labels) gets no K-dependent or cumulative measure (:data:`~thinkprobe.trajectories.aggregates.K_DEPENDENT`).

Labels in ``labels`` must already be canonical (output of :func:`parse_answer`); the analysis does not
re-parse. A checkpoint with an empty ``labels`` list (skipped, e.g. prefix longer than the context) is
left out of the states and recorded in ``trace_summary`` as ``n_checkpoints_skipped``.
"""

from __future__ import annotations

# The public names, imported on first use (PEP 562): importing a submodule (the CLI's, the workflow's) must
# not pull pandas and every analysis module in through this package, and a rule's code hash
# (thinkprobe.codedeps) must not include modules it never runs.
from thinkprobe.trajectories.dynamics import dynamics  # eager: the function shares its submodule's name (light)

_EXPORTS = {
    "MECHANISMS": "mechanisms",
    "mechanism": "mechanisms",
    "parse_answer": "parsing",
    "trace_summary": "aggregates",
    "trajectory_record_to_states": "distributions",
}

__all__ = sorted([*_EXPORTS, "dynamics"])


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
