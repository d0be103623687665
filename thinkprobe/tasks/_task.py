"""What a task declares (:class:`Task`), in a leaf module: the task files import it, and the registry
(:mod:`thinkprobe.tasks`) imports the task files, so no import goes in a circle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

#: A question's lettered options: ``(("A", "ice"), ("B", "steam"), ...)`` (None: the item has none).
Choices = Sequence[tuple[str, str]] | None
#: ``extract(text, strict, choices) -> label or None``: the canonical label of a generated answer.
Extractor = Callable[[str, bool, Choices], "str | None"]


class BadRecord(ValueError):
    """A question record that a task's loader cannot read; the message names the field and the problem (the
    question loader, :mod:`thinkprobe.generate.questions`, skips the record with it and goes on)."""


@dataclass(frozen=True)
class Item:
    """What a task's loader reads from one question record: the question id (with the task's prefix, stable
    across loads), the question text, the canonical raw gold answer (None: the task has none), the lettered
    options (``((key, text), ...)``) and a domain (open questions)."""

    id: str
    text: str
    gold: str | None = None
    choices: tuple[tuple[str, str], ...] = ()
    domain: str | None = None


#: ``reader(options) -> read``: a fresh record reader for one load (``options``: the question-set spec's keys
#: that :attr:`Task.options` declares, defaults filled in); ``read(record) -> Item``, or None to leave the record
#: out (MATH's records of another subject), or raise :class:`BadRecord`.
Reader = Callable[[Mapping[str, Any]], Callable[[Mapping[str, Any]], "Item | None"]]


@dataclass(frozen=True)
class Task:
    """One answer task (see :mod:`thinkprobe.tasks`).

    ``extract`` is None for questions whose answer is never labelled (``open``). ``choices`` says that the
    task's items carry lettered options (shown in the prompt, passed to ``extract``). ``trace_tokens`` is
    the planner's prior on a native reasoner's reasoning tokens per trace (``planning.trace_tokens_prior``;
    ours, docs/planning.md), replaced by observed lengths once traces exist. ``read`` is the question-set
    loader of the task's records (a question set names it as ``source: <task>``; :data:`Reader`), ``options``
    the spec keys it reads with their defaults (MATH's ``math_type``), ``id_prefix`` what its question ids
    start with (a set's ``ids`` may leave it out). ``answer_cue`` is the forced-answer estimator's default cue
    for the task (:mod:`thinkprobe.trajectories.forced`; None: the task has none, and a forced run of it needs
    ``trajectories.forced.answer_cues`` in config): the text appended after a prefix, after which the sampled
    answer is read. It is a setting of the batches of this task only (a forced batch's settings hold its own
    task's cue, :meth:`thinkprobe.trajectories.sampling.SamplingConfig.as_dict`), so editing it resamples the
    forced batches of this task and nothing else.
    """

    name: str
    answer_format: str
    cot_final: str
    trace_tokens: int
    read: Reader
    extract: Extractor | None = None
    choices: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)
    id_prefix: str = ""
    answer_cue: str | None = None

    @property
    def discrete(self) -> bool:
        """Whether answers of this task get a discrete label (the trajectory paper's answer space)."""
        return self.extract is not None
