"""MATH answers (the algebra track): the boxed or stated expression, parsed with math-verify and made canonical.

The forms are described in :mod:`thinkprobe.trajectories.parsing` (and tabulated on the answer-labels page).
Unicode spellings are normalised first (:func:`thinkprobe.tasks._text.normalise_unicode`), and a degree sign
after a number is dropped (``30°``, ``30^\\circ`` and ``30`` share a label).
"""

from __future__ import annotations

import re
import threading

from ..answers import has_box, last_boxed
from ._numbers import join_thousands
from ._text import FINAL_TAIL_CHARS, MAX_ANSWER_CHARS, normalise_unicode


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


#: A braced argument that is one number with comma thousands (``\\frac{47,250}{593,775}``): math-verify reads
#: ``1,000`` alone as 1000 but a fraction of such parts not at all (issue 33), so their commas are dropped.
_GROUPED_ARGUMENT = re.compile(r"(?<!\\)\{\s*(\d{1,3}(?:,\d{3})+(?:\.\d+)?)\s*\}")


def parse_math_answer(text: str, strict: bool = False) -> str | None:
    """Canonical label of a MATH answer (see the module docstring); ``strict``: box or anchor only."""
    answer = extract_math_answer(normalise_unicode(text), strict=strict)
    if answer is None or len(answer) > MAX_ANSWER_CHARS:
        return None
    answer = answer.strip().strip("$").strip()
    display = re.fullmatch(r"\\\[((?:(?!\\\]).)*)\\\]|\\\(((?:(?!\\\)).)*)\\\)", answer, re.DOTALL)
    if display:  # a bare answer that is one display, "\\[ \\frac{3}{4} \\]": its content, as "$...$" gives
        answer = next(g for g in display.groups() if g is not None).strip()
    braces = re.sub(r"\\[{}]", "", answer)
    if braces.count("{") != braces.count("}"):
        return None  # an expression cut short ("= \\frac{"): no value is stated
    answer = re.sub(r"(?<=\d)\s*(?:°|\^\s*\{?\\circ\}?)", "", answer)  # 30°, 30^\circ: 30
    answer = re.sub(r"\s*\\?%$|\s*\\text\{\s*\\?%\s*\}$", "", answer).strip()  # 5\% and 5: one label
    if not answer:
        return None
    answer = join_thousands(answer, spaces=True)  # guard: math-verify reads 4\,000 as 4*0
    answer = _GROUPED_ARGUMENT.sub(lambda m: "{" + m.group(1).replace(",", "") + "}", answer)
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
