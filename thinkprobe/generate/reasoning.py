"""Separating the reasoning from the answer, and detecting degenerate looping (paper section 4.3).

The paper extracts the ``<think>`` block verbatim and discards the final answer; thinkprobe keeps the
answer too, in a separate field (the answer-distribution trajectories need it), never in place of the
reasoning.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


@dataclass(frozen=True)
class Split:
    """A response cut into reasoning and answer.

    ``closed`` is False when the reasoning never ended (no ``</think>``; typically the token limit), in
    which case ``answer`` is empty. ``reasoning`` is ``None`` when the response holds no reasoning at all.
    """

    reasoning: str | None
    answer: str
    closed: bool


def split_reasoning(text: str, opened: bool = False, reasoning_field: str | None = None) -> Split:
    """The reasoning and the answer of one response.

    Parameters
    ----------
    text
        The completion text (the HTTP ``content``, or the offline engine's raw output).
    opened
        The prompt already opened the ``<think>`` block (a chat template that ends in ``<think>``, or a
        prompted model whose assistant turn was prefilled with it): the text starts inside the reasoning.
    reasoning_field
        The server's separate reasoning (``reasoning_content``/``reasoning``), when it gave one: it is the
        reasoning and ``text`` is the answer.

    Notes
    -----
    Rules, in order: a non-empty ``reasoning_field`` wins; else the first ``<think>`` opens the reasoning
    (text before it is ignored) and the first ``</think>`` after it closes it; else, when ``opened``, the
    reasoning runs from the start to the first ``</think>``; else a lone ``</think>`` closes a reasoning that
    the template opened; else there is no reasoning (``reasoning=None``). The reasoning is returned
    verbatim except for the surrounding whitespace.

    >>> split_reasoning("<think>\\nA then B.\\n</think>\\nB.")
    Split(reasoning='A then B.', answer='B.', closed=True)
    >>> split_reasoning("Just an answer.")
    Split(reasoning=None, answer='Just an answer.', closed=True)
    >>> split_reasoning("still thinking", opened=True)
    Split(reasoning='still thinking', answer='', closed=False)
    """
    if reasoning_field is not None and reasoning_field.strip():
        return Split(reasoning_field.strip(), text.strip(), True)
    start = text.find(THINK_OPEN)
    if start >= 0:
        body = text[start + len(THINK_OPEN):]
    elif opened or THINK_CLOSE in text:
        body = text
    else:
        return Split(None, text.strip(), True)
    end = body.find(THINK_CLOSE)
    if end < 0:
        return Split(body.strip() or None, "", False)
    return Split(body[:end].strip() or None, body[end + len(THINK_CLOSE):].strip(), True)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def normalise_line(line: str) -> str:
    """A line reduced to what makes two lines 'the same': NFKC, case-folded, words only, single spaces.

    >>> normalise_line("  **Step 2:** Check   the SUM!  ")
    'step 2 check the sum'
    """
    line = unicodedata.normalize("NFKC", line).casefold()
    return " ".join(_NON_WORD.sub(" ", line).split())


def _lines(text: str) -> list[tuple[int, str]]:
    """(character offset, normalised text) of each line, long lines cut at sentence ends."""
    out = []
    pos = 0
    for raw in text.splitlines(keepends=True):
        offset = pos
        pos += len(raw)
        parts = _SENTENCE_END.split(raw)
        local = 0
        for part in parts:
            at = raw.find(part, local)
            local = at + len(part)
            norm = normalise_line(part)
            if norm:
                out.append((offset + at, norm))
    return out


@dataclass(frozen=True)
class Loop:
    """A degenerate repetition: ``count`` occurrences of a ``window``-line segment; truncate at ``cut``."""

    cut: int
    count: int
    segment: str


def find_loop(text: str, window: int = 3, min_repeats: int = 3, min_chars: int = 8) -> Loop | None:
    """Degenerate looping by repeated normalised line hashing, or ``None``.

    Every line (long lines are cut at sentence ends, so a paragraph that repeats one sentence counts too)
    is normalised (:func:`normalise_line`) and lines shorter than ``min_chars`` characters (``---``,
    ``Wait,``) are skipped. Each run of ``window`` consecutive remaining lines is hashed; a trace loops
    when one such segment occurs ``min_repeats`` times or more (occurrences may overlap, so one line said
    ``window + min_repeats - 1`` times in a row loops too). ``cut`` is the character offset where the looping
    segment that recurs first occurs for the second time: truncating there keeps its first occurrence and
    drops the loop.

    Notes
    -----
    The paper (section 4.3) names the method, not its constants; ``window=3`` and ``min_repeats=3`` are
    our reading (config ``collection.loop_detection``): a three-line block said three times is degenerate,
    while a single repeated line ("Let me check.") is ordinary reasoning.

    >>> text = "Intro line here.\\n" + "The answer is five apples.\\n" * 9
    >>> loop = find_loop(text)
    >>> loop.count, text[:loop.cut]
    (7, 'Intro line here.\\nThe answer is five apples.\\n')
    >>> find_loop("First idea is good.\\nSecond idea is better.\\nThird idea wins.") is None
    True
    """
    lines = [(off, norm) for off, norm in _lines(text) if len(norm) >= min_chars]
    if len(lines) < window + min_repeats - 1:
        return None
    seen: dict[str, list[int]] = {}
    for i in range(len(lines) - window + 1):
        key = hashlib.blake2b("\n".join(n for _, n in lines[i:i + window]).encode(), digest_size=12).hexdigest()
        seen.setdefault(key, []).append(i)
    first: tuple[int, int, int] | None = None  # (index of second occurrence, count, first index)
    for starts in seen.values():
        if len(starts) >= min_repeats and (first is None or starts[1] < first[0]):
            first = (starts[1], len(starts), starts[0])
    if first is None:
        return None
    second, count, start = first
    return Loop(cut=lines[second][0], count=count, segment=" / ".join(n for _, n in lines[start:start + window]))
