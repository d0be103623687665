"""The one home of the answer formats shared by the gold loaders and the continuation parser.

:mod:`thinkprobe.generate.questions` reads gold answers out of benchmark files and
:mod:`thinkprobe.trajectories.parsing` reads generated answers; both need the same box reader, the same
digit-to-letter map of ARC keys (the tasks themselves are :mod:`thinkprobe.tasks`), or a gold answer and a
generated one written alike would be read differently (before this module the two ``last_boxed`` disagreed
on ``\\boxed{3} then \\boxed 5``). This module imports nothing heavy, so the question loaders stay cheap.

Stop strings (:data:`DEFAULT_STOP`) end a continuation where a model that is not a native reasoner starts
to invent a follow-up question ("Question: ... The answer is ..."): the invented answer must never decide
the label. The sampler passes them to the engine, and the labeller cuts a stored text at the same strings
(so continuations sampled before the stop strings existed are read the same way).
"""

from __future__ import annotations

import re
from typing import Sequence

#: ARC keys written as digits (about 2% of ARC items) and the letters they stand for.
DIGIT_KEYS = {"1": "A", "2": "B", "3": "C", "4": "D", "5": "E"}

#: Default stop strings per prompt style (prompt variant of :mod:`thinkprobe.generate.prompts`): a base or
#: prompted model that starts a new "Question:"/"Problem:" line has finished its answer and is inventing
#: the next item. Native reasoners get none by default: their answer follows ``</think>`` and a stop string
#: inside the reasoning would cut a continuation before it reached its answer.
DEFAULT_STOP: dict[str, tuple[str, ...]] = {
    "native": (),
    "plain": ("\nQuestion:", "\nProblem:"),
    "cot": ("\nQuestion:", "\nProblem:"),
}

_BOX = re.compile(r"\\(?:boxed|fbox)")


def digit_key(key: str) -> str:
    """An ARC choice key as a letter: digits 1-5 -> A-E, letters upper-cased.

    >>> digit_key("2"), digit_key("c")
    ('B', 'C')
    """
    key = str(key).strip()
    return DIGIT_KEYS.get(key, key.upper())


def has_box(text: str) -> bool:
    """Whether ``text`` contains a ``\\boxed`` or ``\\fbox`` macro at all (terminated or not)."""
    return _BOX.search(text) is not None


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` / ``\\fbox{...}`` / ``\\boxed x`` of ``text``; None if none.

    The LAST macro decides, whichever form it has. Braces are balanced (escaped ``\\{`` ``\\}`` are literal
    braces of the answer), so nested groups stay whole. A last box that is not closed (an answer cut by the
    token budget inside its box) gives None: the answer was never stated, and an earlier box is not it.

    >>> last_boxed(r"so $\\boxed{1}$, then $x = \\boxed{\\frac{a}{\\sqrt{b}}}$.")
    '\\\\frac{a}{\\\\sqrt{b}}'
    >>> last_boxed(r"\\boxed{3} then \\boxed 5"), last_boxed(r"\\boxed 5 then \\boxed{3}")
    ('5', '3')
    >>> last_boxed(r"\\boxed{1} and \\boxed{\\frac{1}{2") is None, last_boxed("no box") is None
    (True, True)
    >>> last_boxed(r"$\\boxed{(-\\infty, 3] \\cup \\{5\\}}$")
    '(-\\\\infty, 3] \\\\cup \\\\{5\\\\}'
    """
    hits = list(_BOX.finditer(text))
    if not hits:
        return None
    i = hits[-1].end()
    if i < len(text) and text[i] == " " and text[i + 1:i + 2] not in ("{", " "):
        j = i + 1
        while j < len(text) and text[j] not in "$ \n":
            j += 1
        return text[i + 1:j].strip() or None
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text) or text[i] != "{":
        return None
    depth = 0
    j = i
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2  # an escaped character (\{, \}, \\) never opens or closes a group
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
        j += 1
    return None


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """``text`` up to the first occurrence of any stop string (what the engine would have returned).

    >>> cut_at_stop("x = 4. The answer is 4.\\nQuestion: what is 2+3? The answer is 5.", ["\\nQuestion:"])
    'x = 4. The answer is 4.'
    """
    cut = len(text)
    for s in stop:
        if s:
            pos = text.find(s)
            if 0 <= pos < cut:
                cut = pos
    return text[:cut]
