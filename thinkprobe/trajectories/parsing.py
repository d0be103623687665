"""Deterministic answer parsing: a final answer text -> a canonical discrete label (or the null label).

The trajectory paper maps every generated answer to one label of a discrete answer space with a
deterministic parser, plus a null category for invalid or missing answers (its App. A.1). It gives no
parser; the rules below are ours. Each task has one parser; all return a *canonical label string* such
that equivalent answers share a label, and a label parses to itself (``parse_answer(label, task) ==
label``), so gold answers and continuation answers are compared as plain strings.

Each task's extraction lives in its own file of :mod:`thinkprobe.tasks` (the registry: ``arc``, ``choice``,
``gsm8k``, ``math``, ``svamp``); this module reads it, caches it and adds the cut-answer rule. A task the
registry does not know is an error naming the known ones, never another task's parser. Every reader first
normalises Unicode spellings (:func:`thinkprobe.tasks._text.normalise_unicode`: minus signs, primes, curly
quotes, thin and no-break spaces, full-width digits).

``gsm8k``, ``svamp``
    (:mod:`thinkprobe.tasks._numbers`) The answer is the number after the last answer anchor (the result
    of an expression closed by ``= N`` when the anchor is followed by one: "The answer is 7 + 5 = 12" is
    ``12``), in this priority: ``#### N``; ``\\boxed{N}`` (a last box that is no number: null);
    "the (final) answer is N", "Answer: N", "**Answer:** N" (last occurrence). Without an anchor (and
    ``strict=False``) the number the text's final statement states (a bare number line, or a finished result
    sentence that is no hedge, negation, question or plan: :func:`thinkprobe.tasks._numbers.final_statement_number`;
    since issue 33, never the last number of a text whose end states none); with ``strict=True`` the result
    is null. Normalisation: thousands separators (commas, and the thin spaces
    of :func:`join_thousands`: ``4\\,000``, ``4\\ 000``, U+2009), a ``\\text{}`` wrapper
    (``\\boxed{\\text{42 dollars}}``), currency signs, units and
    words after the number, a trailing ``%`` and a trailing period are dropped; the value is read exactly
    (``fractions.Fraction``): ``18.00`` -> ``18``, ``-3.50`` -> ``-3.5``, ``1/2`` -> ``0.5``; a fraction
    without a terminating decimal stays ``p/q`` in lowest terms (``2/3``). A comma that is no thousands
    separator (``3,5``, ``1.250,5``: a decimal comma or a list) is ambiguous: null. Every LaTeX fraction
    form (``\\frac``, ``\\tfrac``, ``\\dfrac``, ``\\frac12``, ``\\frac{-3}{4}``, ``-\\frac{3}{4}``, a mixed
    ``2\\frac{1}{2}``) is one number wherever a number is read, a box, an anchor or a prose final statement
    (:func:`thinkprobe.tasks._numbers.latex_fractions`); one of no numbers (``\\frac{x}{2}``) is none.

``arc``, ``choice``
    See :mod:`thinkprobe.tasks._choices` (issue 33: the forms real reasoning models write, the last committed
    statement wins, a key outside the item's choices is null, digits are keys only where the choices are
    digits). The rules before issue 33, still read: the choice letter ``A``-``E`` after an anchor (``\\boxed{B}``, also wrapped as ``\\boxed{\\textbf{C}}``,
    ``\\boxed{\\mathrm{C}}``, ``\\boxed{\\mathbf{(B)}}``; "the answer is (B)", "Answer: B", "**Answer:** (C)",
    "option B", "correct choice is B", "Therefore, B is correct." with a capital key at a sentence start or
    after a conclusion word, never "maybe A is correct"; the last one wins), else a final line that is a
    bold key (``**C**``, ``**(C)** text``; not ``**A** plant``), else a one-line answer that
    starts with a key (``B``, ``(B)``, ``B.``, ``B) text``; a multi-line text starting ``1.`` is a list, not
    an answer). Without any of these the result is null: a bare capital A is too often the article.
``math``
    The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``, ``\\boxed 5``; :func:`thinkprobe.answers.last_boxed`,
    the gold loaders' reader too), braces nested to any depth; an unterminated last box (an answer cut inside
    its box) is null. Without a box, the later of the expression after the last answer anchor ("the final
    answer is", "the answer is", "Answer:", "**Final Answer:**") and the answer of the final sentence when it
    is an answer statement (bold final number, "Thus/Therefore ... is <expr>", "... = <expr>" at the end, a
    final ``align`` row, "<Name>'s ... is the largest"), bounded to the expression: no trailing prose ("The
    answer is 12 because ..." gives 12). A whole text that is one short line without prose and that does
    not open like a statement ("So", "Thus", ...: ``So $x=5$.`` is the statement ``5``) is taken whole
    (a bare gold answer such as ``\\frac{1}{2}`` or ``65 \\text{ tickets}``). The final sentence and a final
    ``align`` are looked for in the last :data:`FINAL_TAIL_CHARS` characters. ``strict`` keeps only box and
    anchor. An answer longer than :data:`MAX_ANSWER_CHARS` is null. A trailing ``\\%`` is dropped (``5\\%``
    and ``5`` share a label). Digit groups are joined (:func:`join_thousands`, plain spaces included:
    math-verify reads ``4\\,000`` as ``4*0``); a number followed by unit words, inside ``\\text{}`` or bare
    (``\\text{42 dollars}``, ``42 dollars``), is its number, as math-verify already reads
    ``42\\text{ dollars}``. An identity (``7 \\cdot 6 = 42``, which sympy evaluates to True) is its right-hand
    side. The extracted LaTeX is parsed
    with ``math-verify`` (``latex2sympy2``), which normalises ``\\frac12``, ``\\dfrac``, ``1/2``, ``0.5``,
    ``\\left(``/``\\right)``, spaces, ``\\text{}`` units and ``\\$``. The sympy value is then made canonical:
    ``x = v`` with a symbol on the left becomes ``v``; percentages and other unevaluated numbers are
    evaluated; floats become exact rationals; the label is ``sympy.latex`` of the result, so ``\\frac12``,
    ``1/2`` and ``0.5`` all give ``\\frac{1}{2}``. Symbolic expressions are not simplified beyond sympy's
    automatic canonical ordering (``2+3x`` and ``3x+2`` share a label, ``(x+1)^2`` and ``x^2+2x+1`` do not:
    MATH grades the requested form). Word answers (``\\text{Evelyn}``, ``\\text{June 20}``: letters and
    digits with at least two consecutive letters, once normalised) and answers math-verify cannot parse
    become a normalised string: whitespace, ``\\left``/``\\right``, ``\\!``, ``\\,``, ``\\text{}`` wrappers, ``$`` and
    a trailing period removed; lower-cased.

Parsing is deterministic: the same text always gives the same label, and any text gets a label or null in
bounded time (no scan is quadratic in the text; the expressions math-verify sees are at most
:data:`MAX_ANSWER_CHARS` long; an exception inside math-verify falls back to the string label).
math-verify's per-expression timeout (5 s, only active in the main thread) could in principle turn a
pathological expression into null on a slow machine; no MATH gold answer comes near it. Results are cached
per (text, task) for texts up to :data:`CACHE_MAX_CHARS` characters.

A continuation cut off by the token budget or the context is read with :func:`parse_cut_answer` (a
complete answer statement only; :mod:`thinkprobe.trajectories.labelling` decides which reader applies):
the non-strict GSM8K/SVAMP fallback would otherwise read its last intermediate number. Every form above,
with its label and the reason, is tabulated in the documentation page on answer labels.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from ..tasks import UnknownTask, answer_names, get, names  # noqa: F401
from ..answers import last_boxed  # noqa: F401 - re-exported: the gold reader
from ..tasks._choices import parse_choice_answer  # noqa: F401 - re-exported
from ..tasks._math import extract_math_answer, parse_math_answer  # noqa: F401 - re-exported
from ..tasks._numbers import canonical_number, join_thousands, parse_number_answer  # noqa: F401 - re-exported
from ..tasks._text import FINAL_TAIL_CHARS, MAX_ANSWER_CHARS  # noqa: F401 - re-exported


def __getattr__(name: str):
    if name == "TASKS":  # the labelled tasks, from the registry (read when asked: the registry loads lazily)
        return tuple(answer_names())
    raise AttributeError(name)


def parse_answer(text: str | None, task: str, *, strict: bool = False,
                 choices: Sequence[tuple[str, str]] | None = None) -> str | None:
    """Parse a generated answer into the canonical label of ``task`` (None = the null label).

    Parameters
    ----------
    text : str or None
        The generated text (a continuation, a trace's answer part, or a gold answer).
    task : str
        A labelled task of :mod:`thinkprobe.tasks` (``thinkprobe.tasks.answer_names()``).
    strict : bool
        GSM8K/SVAMP/MATH: require an answer anchor or a box (no last-number or final-sentence fallback).
    choices : sequence of (key, text), optional
        The item's options (multiple-choice tasks): keys outside them are null, their texts are matched.

    Returns
    -------
    str or None
        The canonical label; None when no valid answer is found.

    Raises
    ------
    thinkprobe.tasks.UnknownTask
        For a task the registry does not know (the message names the known ones), or one without labels.

    Examples
    --------
    >>> parse_answer("so she makes $18.\\n#### 18", "gsm8k")
    '18'
    >>> parse_answer("The answer is 1,250 dollars.", "svamp")
    '1250'
    >>> parse_answer("Therefore the answer is (B).", "arc")
    'B'
    >>> parse_answer("so $x = \\\\boxed{\\\\dfrac12}$", "math") == parse_answer("0.5", "math") == "\\\\frac{1}{2}"
    True
    """
    t = get(task)
    if t.extract is None:
        raise UnknownTask(f"task {task!r} has no answer labels: labelled tasks are "
                                 f"{', '.join(answer_names())}")
    if text is None:
        return None
    if not isinstance(text, str):
        text = str(text)
    key = tuple((str(k), str(v)) for k, v in choices) if choices else None
    if len(text) <= CACHE_MAX_CHARS:
        return _parse_cached(text, task, strict, key)
    return _parse(text, task, strict, key)


#: Texts up to this many characters are cached (gold answers, answer parts, forced answers repeat); longer
#: ones (whole continuations, almost never repeated) are not, so the cache stays small.
CACHE_MAX_CHARS = 4096


def _parse(text: str, task: str, strict: bool, choices) -> str | None:
    return get(task).extract(text, strict, choices)


_parse_cached = lru_cache(maxsize=8192)(_parse)

#: What a text cut at its last character could have gone on with: a digit, a decimal part, a fraction bar,
#: a thousands group (comma, thin space, space), a letter, an exponent, a closing brace or parenthesis.
CUT_CONTINUATIONS = ("7", ".7", "/7", ",777", "\\,777", " 777", "x", "^{7}", "}", ")")


def parse_cut_answer(text: str | None, task: str, choices: Sequence[tuple[str, str]] | None = None) -> str | None:
    """The label of a text cut off by the token budget or the context: only a complete answer statement.

    The trajectory paper labels the answer sequence a continuation generates (App. A.1, section 3); a text
    cut before its end generated one only if it had already stated its answer in full. So the label is the
    strict one (a box or an answer anchor, never the last number or a final sentence), and it is kept only
    when the statement is complete: appending any of :data:`CUT_CONTINUATIONS` at the cut leaves it
    unchanged (``"The answer is 18"`` could have gone on as ``"180"``: null; ``"The answer is 18 apples"``
    and ``"\\boxed{18} and"`` are complete: ``18``). A later revision the cut hid cannot be seen; the
    share of cut continuations per checkpoint is reported beside the labels for that reason.

    >>> parse_cut_answer("so 9 * 2 = 1", "gsm8k") is None, parse_cut_answer("The answer is 1", "gsm8k") is None
    (True, True)
    >>> parse_cut_answer("The answer is 18. Let me double", "gsm8k"), parse_cut_answer("\\\\boxed{B} since", "arc")
    ('18', 'B')
    """
    label = parse_answer(text, task, strict=True, choices=choices)
    if label is None:
        return None
    for tail in CUT_CONTINUATIONS:
        if parse_answer(text + tail, task, strict=True, choices=choices) != label:
            return None
    return label
