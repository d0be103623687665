"""Prompt variants: how a question is posed to a model, and how each task asks for its final answer.

Split out of :mod:`thinkprobe.generate.questions` (which loads question sets and re-exports these names):
the loaders decide *what* is asked, this module *how*. The answer formats requested here are the forms
:mod:`thinkprobe.trajectories.parsing` reads, and each variant's stop strings for trajectory sampling are
:data:`thinkprobe.answers.DEFAULT_STOP`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..tasks import UnknownTask, answer_names, get, names  # noqa: F401

if TYPE_CHECKING:
    from .records import Question


def __getattr__(name: str):
    if name == "ANSWER_FORMATS":  # how each task asks for its final answer: the task files' (thinkprobe.tasks)
        return {t: get(t).answer_format for t in names()}
    raise AttributeError(name)


#: Prompt variants, chosen by name in config. ``{question}`` is the question as posed (an ARC question
#: with its lettered options, one per line); ``{answer_format}`` is the task's ``answer_format`` (:mod:`thinkprobe.tasks`)
#: (empty for open questions, whose answer is never parsed).
#:
#: ``native``
#:     For native reasoners that think inside ``<think>`` on their own (the paper's setting): the question
#:     as is, followed by the answer-format sentence for benchmark tasks. No instruction about reasoning.
#: ``plain``
#:     The question only, nothing added, even for benchmarks.
#: ``cot``
#:     Prompted chain of thought for models that are not native reasoners (e.g. SmolLM2 in the embedded
#:     default): asks for step-by-step thinking inside ``<think>...</think>`` and then the final answer in
#:     the task's format (for open questions: a considered final answer). Traces collected this way are
#:     prompted, not native, reasoning, and must be labelled so.
PROMPT_VARIANTS: dict[str, str] = {
    "native": "{question}{answer_suffix}",
    "plain": "{question}",
    "cot": (
        "{question}\n\n"
        "Think it through step by step before answering. Write all of your reasoning inside "
        "<think> and </think> tags: explore different possibilities, check your steps and revise them "
        "if needed. After </think>, {final}"
    ),
}

def question_text(q: "Question") -> str:
    """The question as posed: its text, and for ARC its options as ``A. text`` lines."""
    if not q.choices:
        return q.text
    return q.text + "\n" + "\n".join(f"{label}. {text}" for label, text in q.choices)


def format_prompt(q: "Question", variant: str) -> str:
    """The user prompt for ``q`` under a named variant of :data:`PROMPT_VARIANTS`.

    >>> from thinkprobe.generate.questions import Question
    >>> q = Question("arc-x", "arc", "arc", "Which is a gas?", gold="B", choices=(("A", "ice"), ("B", "steam")))
    >>> print(format_prompt(q, "native"))
    Which is a gas?
    A. ice
    B. steam
    <BLANKLINE>
    Give the letter of the correct option on the last line, in the form: The answer is X.
    """
    if variant not in PROMPT_VARIANTS:
        raise ValueError(f"unknown prompt variant {variant!r} (one of {', '.join(PROMPT_VARIANTS)})")
    try:
        task = get(q.task)
    except UnknownTask as e:
        raise ValueError(f"question {q.id!r}: {e}") from None
    fmt = task.answer_format
    return PROMPT_VARIANTS[variant].format(
        question=question_text(q),
        answer_suffix=f"\n\n{fmt}" if fmt else "",
        final=task.cot_final,
    )
