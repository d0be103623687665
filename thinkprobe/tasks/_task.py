"""What a task declares (:class:`Task`), in a leaf module: the task files import it, and the registry
(:mod:`thinkprobe.tasks`) imports the task files, so no import goes in a circle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

#: A question's lettered options: ``(("A", "ice"), ("B", "steam"), ...)`` (None: the item has none).
Choices = Sequence[tuple[str, str]] | None
#: ``extract(text, strict, choices) -> label or None``: the canonical label of a generated answer.
Extractor = Callable[[str, bool, Choices], "str | None"]


@dataclass(frozen=True)
class Task:
    """One answer task (see :mod:`thinkprobe.tasks`).

    ``extract`` is None for questions whose answer is never labelled (``open``). ``choices`` says that the
    task's items carry lettered options (shown in the prompt, passed to ``extract``). ``trace_tokens`` is
    the planner's prior on a native reasoner's reasoning tokens per trace (``planning.trace_tokens_prior``;
    ours, docs/planning.md), replaced by observed lengths once traces exist.
    """

    name: str
    answer_format: str
    cot_final: str
    trace_tokens: int
    source: str
    extract: Extractor | None = None
    choices: bool = False

    @property
    def discrete(self) -> bool:
        """Whether answers of this task get a discrete label (the trajectory paper's answer space)."""
        return self.extract is not None
