"""Deterministic answer parsing: a final answer text -> a canonical discrete label (or the null label).

The trajectory paper maps every generated answer to one label of a discrete answer space with a
deterministic parser, plus a null category for invalid or missing answers (its App. A.1). It gives no
parser; the rules below are ours. Each task has one parser; all return a *canonical label string* such
that equivalent answers share a label, and a label parses to itself (``parse_answer(label, task) ==
label``), so gold answers and continuation answers are compared as plain strings.

``gsm8k``, ``svamp``
    The answer is the number after the last answer anchor, in this priority: ``#### N``; ``\\boxed{N}``;
    "the (final) answer is N", "Answer: N", "**Answer:** N" (last occurrence). Without an anchor (and
    ``strict=False``) the last number of the text is taken, the usual "flexible extract" reading; with
    ``strict=True`` the result is null. Normalisation: thousands separators (commas, and the thin spaces
    of :func:`join_thousands`: ``4\\,000``, ``4\\ 000``, U+2009), a ``\\text{}`` wrapper
    (``\\boxed{\\text{42 dollars}}``), currency signs, units and
    words after the number, a trailing ``%`` and a trailing period are dropped; the value is read exactly
    (``fractions.Fraction``): ``18.00`` -> ``18``, ``-3.50`` -> ``-3.5``, ``1/2`` -> ``0.5``; a fraction
    without a terminating decimal stays ``p/q`` in lowest terms (``2/3``).
``arc``
    The choice letter ``A``-``E`` after an anchor (``\\boxed{B}``, also wrapped as ``\\boxed{\\textbf{C}}``,
    ``\\boxed{\\mathrm{C}}``, ``\\boxed{\\mathbf{(B)}}``; "the answer is (B)", "Answer: B", "**Answer:** (C)",
    "option B", "correct choice is B", "Therefore, B is correct." with a capital key at a sentence start or
    after a conclusion word, never "maybe A is correct"; the last one wins), else a final line that is a
    bold key (``**C**``, ``**(C)** text``; not ``**A** plant``), else a one-line answer that
    starts with a key (``B``, ``(B)``, ``B.``, ``B) text``; a multi-line text starting ``1.`` is a list, not
    an answer). Digit keys ``1``-``5`` map to ``A``-``E`` (about 2% of ARC items
    use digit keys). Without any of these the result is null: a bare capital A is too often the article.
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

import re
import threading
from fractions import Fraction
from functools import lru_cache

from ..answers import ANSWER_TASKS, digit_key, has_box, last_boxed

TASKS = ANSWER_TASKS

_NUMBER = r"[-+−]?\s*(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?|[-+−]?\.\d+"
_NUMBER_RE = re.compile(_NUMBER)
_ANSWER_ANCHORS = [
    r"####\s*",
    r"\banswer\s*(?:is\b\s*:?|=|:)\s*(?:\*\*)?\s*(?:\\\(|\$)?\s*",
    r"\*\*\s*(?:final\s+)?answer\s*:?\s*\*\*\s*:?\s*",
]


def parse_answer(text: str | None, task: str, *, strict: bool = False) -> str | None:
    """Parse a generated answer into the canonical label of ``task`` (None = the null label).

    Parameters
    ----------
    text : str or None
        The generated text (a continuation, a trace's answer part, or a gold answer).
    task : {"gsm8k", "svamp", "arc", "math"}
    strict : bool
        GSM8K/SVAMP only: require an answer anchor (no last-number fallback).

    Returns
    -------
    str or None
        The canonical label; None when no valid answer is found.

    Raises
    ------
    ValueError
        For an unknown task.

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
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}: expected one of {', '.join(TASKS)}")
    if text is None:
        return None
    if not isinstance(text, str):
        text = str(text)
    if len(text) <= CACHE_MAX_CHARS:
        return _parse_cached(text, task, strict)
    return _parse(text, task, strict)


#: Texts up to this many characters are cached (gold answers, answer parts, forced answers repeat); longer
#: ones (whole continuations, almost never repeated) are not, so the cache stays small.
CACHE_MAX_CHARS = 4096
#: The longest answer expression that gets a label, in characters: 12 times the longest MATH gold answer
#: (81). A longer one (a runaway box, a 100k-character line taken whole) is the null label, and math-verify,
#: whose own timeout works only in the main thread, never sees it.
MAX_ANSWER_CHARS = 1000
#: A final answer statement is looked for in the last this many characters of a text (no statement is
#: longer), which also bounds the sentence and math scans of a 100k-character text.
FINAL_TAIL_CHARS = 4000


def _parse(text: str, task: str, strict: bool) -> str | None:
    if task in ("gsm8k", "svamp"):
        return parse_number_answer(text, strict=strict)
    if task == "arc":
        return parse_choice_answer(text)
    return parse_math_answer(text, strict=strict)


_parse_cached = lru_cache(maxsize=8192)(_parse)

#: What a text cut at its last character could have gone on with: a digit, a decimal part, a fraction bar,
#: a thousands group (comma, thin space, space), a letter, an exponent, a closing brace or parenthesis.
CUT_CONTINUATIONS = ("7", ".7", "/7", ",777", "\\,777", " 777", "x", "^{7}", "}", ")")


def parse_cut_answer(text: str | None, task: str) -> str | None:
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
    label = parse_answer(text, task, strict=True)
    if label is None:
        return None
    for tail in CUT_CONTINUATIONS:
        if parse_answer(text + tail, task, strict=True) != label:
            return None
    return label


# ---------------------------------------------------------------- numbers (GSM8K, SVAMP)

def canonical_number(token: str) -> str | None:
    """Canonical label of a numeric token: exact value, integer or terminating decimal, else ``p/q``.

    >>> [canonical_number(t) for t in ["1,000", "18.00", "-3.50", "1/2", "2/4", "4/6", "$7", ".5"]]
    ['1000', '18', '-3.5', '0.5', '0.5', '2/3', '7', '0.5']
    """
    s = token.replace("−", "-").replace(",", "").replace("$", "").replace(" ", "")
    s = s.rstrip(".")
    try:
        if "/" in s:
            num, den = s.split("/", 1)
            value = Fraction(num) / Fraction(den)
        else:
            value = Fraction(s)
    except (ValueError, ZeroDivisionError):
        return None
    return _format_fraction(value)


def _format_fraction(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    den = value.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    if den != 1:
        return f"{value.numerator}/{value.denominator}"
    sign = "-" if value < 0 else ""
    value = abs(value)
    whole, rest = divmod(value.numerator, value.denominator)
    digits = []
    while rest:
        rest *= 10
        d, rest = divmod(rest, value.denominator)
        digits.append(str(d))
    return f"{sign}{whole}." + "".join(digits)


#: Separators of digit groups that models write inside numbers: LaTeX thin, medium and thick spaces
#: (``\\,`` ``\\:`` ``\\;``), a control space ``\\ ``, ``\\!``, ``~``, ``{,}``, ``,\\!``, ``\\thinspace``,
#: a small ``\\hspace``/``\\kern``, and Unicode thin, narrow no-break and no-break spaces.
_GROUP_SEP = (r"(?:\\[,;:! ]|\\thinspace\s*|\\(?:hspace|kern)\s*\{[^{}]{0,12}\}|~|\{,\}|,\\!"
              r"|[\u2009\u202f\u00a0])")
_THOUSANDS = re.compile(r"(?<!\d)\d{1,3}(?:" + _GROUP_SEP + r"\d{3})+(?!\d)")
_THOUSANDS_OR_SPACE = re.compile(r"(?<!\d)\d{1,3}(?:(?:" + _GROUP_SEP + r"| )\d{3})+(?!\d)")


def join_thousands(text: str, spaces: bool = False) -> str:
    """``text`` with the separators inside digit groups removed: ``4\\,000`` -> ``4000``.

    A group is 1-3 digits followed by groups of exactly three digits, each after a separator
    (:data:`_GROUP_SEP`; with ``spaces``, a plain space too: only for an answer expression already
    extracted, never for prose, where "day 4 100 people" is two numbers). math-verify reads ``4\\,000`` as
    the product ``4*0`` (``0``) and the number reader would stop at ``4``, so both see the joined digits.

    >>> join_thousands(r"\\boxed{4\\,000} and 1\\,000\\,000 and 3.141\\,592"), join_thousands("4 000", spaces=True)
    ('\\\\boxed{4000} and 1000000 and 3.141592', '4000')
    """
    rx = _THOUSANDS_OR_SPACE if spaces else _THOUSANDS
    return rx.sub(lambda m: re.sub(r"\D", "", m.group(0)), text)


_TEXT_OPEN = re.compile(r"\\(?:text|textbf|textrm|textnormal|mathrm|mathbf|mbox)\s*\{")


def _first_number(fragment: str) -> str | None:
    fragment = join_thousands(_TEXT_OPEN.sub("", fragment))
    fragment = fragment.replace("\\$", "$").replace("\\!", "").replace("{,}", ",")
    frac = re.match(r"\s*[$(]*\s*(-?)\s*\\d?frac\{(\d+)\}\{(\d+)\}", fragment)
    if frac:
        return canonical_number(f"{frac.group(1)}{frac.group(2)}/{frac.group(3)}")
    m = re.match(r"[\s$*(\\:]*(?:[A-Za-z]\s*=\s*)?\$?\s*(" + _NUMBER + ")", fragment)
    if m is None:
        return None
    return canonical_number(m.group(1))


def parse_number_answer(text: str, *, strict: bool = False) -> str | None:
    """The final number of a GSM8K/SVAMP answer, canonical (see the module docstring)."""
    hashes = list(re.finditer(r"####\s*", text))
    if hashes:
        value = _first_number(text[hashes[-1].end():])
        if value is not None:
            return value
    boxed = last_boxed(text)
    if boxed is not None:
        value = _first_number(join_thousands(boxed, spaces=True))
        if value is not None:
            return value
    candidates = []
    for pattern in _ANSWER_ANCHORS[1:]:
        for m in re.finditer(pattern, text, flags=re.IGNORECASE):
            value = _first_number(text[m.end():m.end() + 80])
            if value is not None:
                candidates.append((m.start(), value))
    if candidates:
        return max(candidates)[1]
    if strict:
        return None
    numbers = [m.group(0) for m in _NUMBER_RE.finditer(join_thousands(text).replace("\\$", "$"))]
    for token in reversed(numbers):
        value = canonical_number(token)
        if value is not None:
            return value
    return None


# ---------------------------------------------------------------- ARC choice letters

_KEY = r"\(?\s*\**\s*([A-Ea-e1-5])\s*\**\s*\)?"
#: LaTeX wrappers a model puts around a boxed choice key: ``\\boxed{\\textbf{C}}``, ``\\boxed{\\mathrm{C}}``,
#: ``\\boxed{\\mathbf{(B)}}``, ``\\boxed{\\text{(C)}}``.
_KEY_WRAP = r"(?:\\(?:text|textbf|textrm|textit|texttt|textsf|mathrm|mathbf|mathit|mathsf|mathtt|mbox)\s*\{\s*)*"
_ARC_ANCHORS = [
    re.compile(r"\\boxed\s*\{\s*" + _KEY_WRAP + r"\(?\s*([A-Ea-e1-5])\s*\)?(?=\s|[}).:,])"),
    re.compile(r"\b(?:answer|correct\s+(?:choice|option))\s*"
               r"(?:is\b\s*:?|would\s+be|should\s+be|=|:)\s*(?:\*\*)?\s*(?:option|choice)?\s*" + _KEY
               + r"(?![A-Za-z0-9])", re.IGNORECASE),
    re.compile(r"\*\*\s*(?:final\s+)?answer\s*:?\s*\*\*\s*:?\s*(?:option|choice)?\s*" + _KEY
               + r"(?![A-Za-z0-9])", re.IGNORECASE),
    re.compile(r"(?:option|choice)\s+" + _KEY + r"\s+is\s+(?:the\s+)?correct", re.IGNORECASE),
    # "Therefore, B is correct." / "So **(C)** is the correct answer.": a capital key asserted at the start of a
    # sentence or after a conclusion word (never "maybe A is correct", "check if D is correct")
    re.compile(r"(?:^|(?<=[.!?:\n])|\b(?i:therefore|thus|so|hence|finally|overall),?)[ \t]*(?i:the\s+)?"
               r"\**\(?([A-E])\)?\**\s+(?i:is|would\s+be)\s+(?i:the\s+)?(?i:correct|right)\b"),
]
#: A final line that is a bold key: ``**C**``, ``**(C)** text``, ``**C.** text``, ``**C**: text``, ``**C) Sunlight**``;
#: never ``**A** plant ...`` (a bold capital followed by words is an article, not a key).
_BOLD_KEY_LINE = re.compile(
    r"[#>\s-]*\*\*\s*(?:\(\s*([A-E1-5])\s*\)\s*[.:]?\s*\*\*.*"
    r"|([A-E1-5])\s*\*\*[\s.]*"
    r"|([A-E1-5])\s*[).:]\s*\*\*(?:\s.*)?"
    r"|([A-E1-5])\s*\*\*\s*[):](?:\s.*)?"
    r"|\(?([A-E1-5])\s*[).:]\s+[^*\n]+\*\*[\s.]*)")


def parse_choice_answer(text: str) -> str | None:
    """The ARC choice letter (digits 1-5 mapped to A-E), or None (see the module docstring)."""
    hits = []
    for pattern in _ARC_ANCHORS:
        for m in pattern.finditer(text):
            key = m.group(1)
            if key.islower() and not re.search(r"\(\s*" + key + r"\s*\)", m.group(0)):
                continue
            hits.append((m.start(), digit_key(key)))
    if hits:
        return max(hits)[1]
    stripped = text.strip()
    last_line = stripped.rsplit("\n", 1)[-1]
    bold = _BOLD_KEY_LINE.fullmatch(last_line)
    if bold:
        return digit_key(next(g for g in bold.groups() if g))
    if "\n" in stripped:
        return None
    whole = re.fullmatch(r"[\s*(\[]*([A-Ea-e1-5])\s*[).\]:*]*(?:\s+.*)?", stripped, flags=re.DOTALL)
    if whole and (len(stripped) <= 3 or re.match(r"[\s*(\[]*[A-Ea-e1-5]\s*[).:\]]", stripped)):
        return digit_key(whole.group(1))
    return None


# ---------------------------------------------------------------- MATH (algebra track)

_MATH_ANCHOR = re.compile(
    r"(?:final\s+answer\s*(?:is)?|the\s+answer\s+is|\banswer\s*:|\*\*\s*(?:final\s+)?answer\s*:?\s*\*\*\s*:?)\s*",
    re.IGNORECASE)
_DELIMITED = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\[(.+?)\\\]|\\\((.+?)\\\)", re.DOTALL)
_LATEX_GROUP = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|mbox|operatorname)\s*\{[^{}]*\}")
_PROSE_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")
_STATEMENT = re.compile(r"^\W*(?:thus|therefore|so|hence|finally|in\s+conclusion|overall|in\s+summary|this\s+gives|"
                        r"we\s+(?:get|find|have|obtain)|the\s+(?:final\s+)?(?:result|value|answer|solution|sum|"
                        r"product|total))\b", re.IGNORECASE)
_VERB = re.compile(r"\b(?:is|are|equals|was|becomes|gives)\b\s*:?\s*")
_SUPERLATIVES = r"(?:the\s+)?(?:largest|greatest|highest|smallest|lowest|fastest|slowest|most|least|best|biggest)\b"
_SUPERLATIVE = re.compile(
    r"^\W*(?:[^,.]{0,40},\s*)?(?:\\text\{)?([A-Z][a-z]+)\}?(?:'s(?:\s+[a-z]+){0,4})?\s+"
    r"(?:is|was|has|had)\s+" + _SUPERLATIVES)
_ALIGN_END = re.compile(r"\\begin\{(align\*?|eqnarray\*?|aligned)\}(.*)\\end\{\1\}[\s.]*$", re.DOTALL)
_NOT_NAMES = {"The", "This", "That", "It", "Its", "Thus", "So", "Therefore", "Hence", "Which", "What", "Answer"}


def _mask_latex(text: str) -> str:
    """``text`` with ``\\text{...}``-like groups and LaTeX commands blanked (same length), for prose search."""
    text = _LATEX_GROUP.sub(lambda m: " " * len(m.group(0)), text)
    return re.sub(r"\\[A-Za-z]+", lambda m: " " * len(m.group(0)), text)


def _bounded(rest: str) -> str | None:
    """The answer expression at the start of ``rest`` and nothing after it (no trailing prose).

    A math-delimited expression (``$...$``, ``\\(...\\)``, ``\\[...\\]``) or a bold ``**...**`` is taken
    whole; otherwise the first line up to the first prose word (two letters or more that are no LaTeX
    command and not inside ``\\text{}``), without trailing punctuation.

    >>> _bounded(" 12 because the sum is even."), _bounded(r" \\(\\frac{1}{2}\\), as shown"), _bounded("**9** ways")
    ('12', '\\\\frac{1}{2}', '9')
    """
    rest = rest.lstrip(" \t:")
    bold = re.match(r"\*\*\s*(.+?)\s*\*\*", rest)
    if bold:
        rest = bold.group(1)
    rest = rest.lstrip(" \t\n:")
    math = _DELIMITED.match(rest)
    if math:
        return next(g for g in math.groups() if g is not None).strip() or None
    line = rest.split("\n", 1)[0]
    prose = _PROSE_WORD.search(_mask_latex(line))
    expr = line[:prose.start()] if prose else line
    expr = re.sub(r"[\s.,;:!?*]+$", "", expr).strip()
    return expr or None


def _rhs(expr: str) -> str:
    """The right-hand side of the last top-level ``=`` (``d = 3\\sqrt{13}`` -> ``3\\sqrt{13}``)."""
    depth, cut = 0, -1
    for i, ch in enumerate(expr):
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        if ch == "=" and depth == 0:
            cut = i
    return expr[cut + 1:].strip() if cut >= 0 else expr.strip()


def _final_sentence(text: str) -> tuple[int, str]:
    """(offset, text) of the final sentence of the last paragraph, display math joined into it."""
    paragraphs = [m for m in re.finditer(r"\S(?:.|\n(?!\s*\n))*", text)]
    if not paragraphs:
        return len(text), ""
    para = paragraphs[-1]
    body = para.group(0)
    # a paragraph that is only display math belongs to the sentence before it ("... is:\n\n\\[ x \\]")
    if len(paragraphs) > 1 and re.fullmatch(r"\s*(?:\\\[.*?\\\]|\$\$.*?\$\$)\s*", body, re.DOTALL):
        para = paragraphs[-2]
        body = para.group(0) + " " + body
    flat = re.sub(r"\s*\n\s*", " ", body)
    starts = [0] + [m.end() for m in re.finditer(r"(?<=[.!?])\s+(?=[A-Z*\\])", _mask_math(flat))]
    start = starts[-1]
    if start and not flat[start:].strip(" .*"):
        start = starts[-2] if len(starts) > 1 else 0
    return para.start(), flat[start:].strip()


def _mask_math(text: str) -> str:
    """``text`` with math-delimited spans blanked, so that a ``.`` inside math ends no sentence."""
    return _DELIMITED.sub(lambda m: " " * len(m.group(0)), text)


def _statement_answer(sentence: str) -> str | None:
    """The answer of a final answer statement (see :func:`extract_math_answer`), or None."""
    bolds = [b for b in (_bounded(m.group(0)) for m in re.finditer(r"\*\*[^*]+\*\*", sentence))
             if b and re.search(r"\d", b) and not _PROSE_WORD.search(_mask_latex(b))]
    if bolds:
        return bolds[-1]
    name = _SUPERLATIVE.match(sentence)
    if name and name.group(1) not in _NOT_NAMES:
        return name.group(1)
    stated = _STATEMENT.match(sentence) is not None
    masked = _mask_math(sentence)
    math = list(_DELIMITED.finditer(sentence))
    for m in reversed(math):  # "... $b = 2015$ is the smallest value that works."
        if re.match(r"\s*(?:is|was)\s+" + _SUPERLATIVES, sentence[m.end():]):
            return _rhs(next(g for g in m.groups() if g is not None)) or None
    if math and not sentence[math[-1].end():].strip(" .").strip() and re.search(
            r"(?:\b(?:is|are|equals|be)|=|:)\s*$", sentence[:math[-1].start()]):
        return _rhs(next(g for g in math[-1].groups() if g is not None)) or None  # "... is \((3, \pi)\)."
    if stated or "=" in sentence:
        if math and stated:
            return _rhs(next(g for g in math[-1].groups() if g is not None)) or None
        if "=" in masked:
            tail = sentence[masked.rindex("=") + 1:]
            if not _DELIMITED.search(tail) and not _PROSE_WORD.search(_mask_latex(tail)):
                return _bounded(tail)
        if math:
            inner = next(g for g in math[-1].groups() if g is not None)
            if "=" in inner and not sentence[math[-1].end():].strip(" .").strip():
                return _rhs(inner) or None
    if stated:
        verbs = list(_VERB.finditer(masked))
        if verbs:
            got = _bounded(sentence[verbs[-1].end():])
            if got and re.search(r"[\d\\]", got):
                return got
    return None


def extract_math_answer(text: str, strict: bool = False) -> str | None:
    """The answer expression of a MATH solution or continuation (None: no stated answer).

    In order: the last ``\\boxed``/``\\fbox`` (an unterminated last box is None: the answer was cut);
    else the later of (a) the expression after the last answer anchor ("the final answer is", "the answer
    is", "Answer:", "**Final Answer:**") and (b) the answer of the final sentence when it is an answer
    statement: a bold final number ("196 has **9** divisors"), "Thus/Therefore/So ... is <expr>", a
    sentence ending in ``= <expr>``, the last math of a "Thus ..." sentence, or "<Name>'s ... is the
    largest" (a name answer); each bounded to the expression (no trailing prose). Else the whole text when
    it is one short line without prose (a bare gold answer). ``strict`` keeps only the box and the anchor
    (a continuation cut by its budget stated no final sentence).
    """
    if has_box(text):
        return last_boxed(text)
    found: list[tuple[int, str]] = []
    anchors = list(_MATH_ANCHOR.finditer(text))
    if anchors:
        got = _bounded(text[anchors[-1].end():])
        if got:
            found.append((anchors[-1].start(), got))
    if strict:
        return found[-1][1] if found else None
    stripped = text.strip()
    prose = re.search(r"(?<!\\)\b[A-Za-z]{2,}\s+[A-Za-z]{2,}\b", _strip_latex_words(stripped))
    if (not found and stripped and "\n" not in stripped and len(stripped) <= 80 and not prose
            and not _STATEMENT.match(stripped)):  # "So $x=5$." is a statement (below), not a bare answer
        return stripped.lstrip("= ") or None  # a bare answer (a gold answer, an equation), taken whole
    tail_start = max(0, len(text) - FINAL_TAIL_CHARS)
    text = text[tail_start:]  # a final statement, an align block: the end of the text (bounded scans)
    align = _ALIGN_END.search(text)
    if align:  # a derivation that ends the text: the right-hand side of its last row ("&= 6 & \text{...}")
        row = re.split(r"\\\\", align.group(2).strip())[-1]
        row = _LATEX_GROUP.sub(" ", row.replace("&", " "))
        got = _bounded(_rhs(row)) if "=" in row else None
        if got:
            found.append((tail_start + align.start(), got))
    offset, sentence = _final_sentence(text)
    if sentence:
        got = _statement_answer(sentence)
        if got:
            found.append((tail_start + offset, got))
    return max(found, key=lambda f: f[0])[1] if found else None


def _strip_latex_words(text: str) -> str:
    text = re.sub(r"\\(?:text|textbf|textrm|mathrm|mbox|operatorname)\s*\{[^{}]*\}", " ", text)
    return re.sub(r"\\[A-Za-z]+", " ", text)


def _normalise_string(answer: str) -> str:
    s = answer
    s = re.sub(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}", r"\1", s)
    s = re.sub(r"\\(?:left|right)(?![a-zA-Z])", "", s)
    s = s.replace("\\!", "").replace("\\,", "").replace("\\;", "").replace("$", "")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = re.sub(r"\s+", "", s)
    s = s.rstrip(".")
    return s.lower()


_PARSE_LOCK = threading.Lock()


def _sympy_label(answer: str) -> str | None:
    import sympy
    from math_verify import LatexExtractionConfig, parse

    timeout = 5 if threading.current_thread() is threading.main_thread() else None
    try:
        with _PARSE_LOCK:
            parsed = parse("$" + answer + "$", extraction_config=[LatexExtractionConfig(boxed_match_priority=0)],
                           parsing_timeout=timeout)
    except Exception:  # noqa: BLE001 - math-verify failing on one odd expression: the string label decides
        return None
    if not parsed or not isinstance(parsed[0], sympy.Basic):
        return None
    expr = parsed[0]
    if isinstance(expr, sympy.Equality) and isinstance(expr.lhs, sympy.Symbol):
        expr = expr.rhs
    if isinstance(expr, sympy.Symbol) and len(expr.name) > 1:
        return None
    try:
        expr = expr.doit()
        floats = {f: sympy.Rational(str(f)) for f in expr.atoms(sympy.Float)}
        if floats:
            expr = expr.xreplace(floats)
        if isinstance(expr, sympy.Expr) and not expr.free_symbols and not expr.is_number is False:
            expr = sympy.nsimplify(expr, rational=True) if expr.atoms(sympy.Float) else expr
        return sympy.latex(expr)
    except Exception:  # noqa: BLE001 - an unprintable value falls back to the string label
        return None


_NUM = r"-?\s*(?:\\?\$)?\s*\d+(?:\.\d+)?"
_TEXT_NUMBER_WORDS = re.compile(r"\\(?:text|textrm|textnormal|mbox|mathrm)\s*\{\s*(" + _NUM
                                + r")\s+([A-Za-z][A-Za-z.\s]*)\}")
_NUMBER_WORDS = re.compile(r"(" + _NUM + r")\s+([A-Za-z]{2,}[A-Za-z.\s]*)")
_MATH_WORDS = {"pi", "ln", "log", "sin", "cos", "tan", "sec", "csc", "cot", "exp", "sqrt", "mod"}


def _number_with_units(answer: str) -> str | None:
    """The number of an answer that is a number followed by unit words, the whole inside ``\\text{}``
    (``\\text{42 dollars}``) or without any macro (``42 dollars``); else None. ``42\\text{ dollars}`` needs
    no help: math-verify drops a ``\\text{}`` unit after a number, and the three must be one hypothesis.

    >>> _number_with_units(r"\\text{42 dollars}"), _number_with_units("42 dollars")
    ('42', '42')
    >>> _number_with_units(r"\\text{1:03 PM}") is None
    True
    """
    m = _TEXT_NUMBER_WORDS.fullmatch(answer) or _NUMBER_WORDS.fullmatch(answer)
    if m is None or m.group(2).split()[0].strip(".").lower() in _MATH_WORDS:
        return None
    return re.sub(r"[\s$\\]", "", m.group(1))


def parse_math_answer(text: str, strict: bool = False) -> str | None:
    """Canonical label of a MATH answer (see the module docstring); ``strict``: box or anchor only."""
    answer = extract_math_answer(text, strict=strict)
    if answer is None or len(answer) > MAX_ANSWER_CHARS:
        return None
    answer = answer.strip().strip("$").strip()
    answer = re.sub(r"\s*\\?%$|\s*\\text\{\s*\\?%\s*\}$", "", answer).strip()  # 5\% and 5: one label
    if not answer:
        return None
    answer = join_thousands(answer, spaces=True)  # guard: math-verify reads 4\,000 as 4*0
    answer = _number_with_units(answer) or answer
    word = _normalise_string(answer)
    if re.fullmatch(r"[a-z][a-z0-9]*", word) and re.search(r"[a-z]{2}", word):
        return word
    label = _sympy_label(answer)
    if label in ("\\text{True}", "\\text{False}") and "=" in answer:  # "1 \\times 2 = 2", an identity: its value
        label = _sympy_label(_rhs(answer))
    if label is not None:
        return label
    return _normalise_string(answer) or None
