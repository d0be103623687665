"""Numbers (the GSM8K and SVAMP tasks): the final number of an answer, read exactly and made canonical.

See :mod:`thinkprobe.trajectories.parsing` for the forms, tabulated on the answer-labels page. What a reader
of numbers adds to the earlier rules (issue 33): the result of an expression after an answer anchor
(``The answer is 7 + 5 = 12`` is ``12``, never its first number), a decimal comma read as ambiguous
(``3,5`` and ``1.250,5`` are null: a thousands separator or a decimal comma, no reader can tell), every
LaTeX fraction (``\\frac``, ``\\tfrac``, ``\\dfrac``, ``\\frac12``, a sign inside or before it; after an anchor, in a box
and in a final statement alike: :func:`latex_fractions`), and
Unicode spellings normalised first (:func:`thinkprobe.tasks._text.normalise_unicode`).
"""

from __future__ import annotations

import re
from fractions import Fraction

from ..answers import last_boxed
from ._text import FINAL_TAIL_CHARS, MAX_ANSWER_CHARS, normalise_unicode

#: A number token as written: digits with comma groups of any length (validated by :func:`canonical_number`:
#: groups of exactly three are thousands, anything else is a decimal comma, ambiguous), a decimal part, a
#: fraction bar.
_NUMBER = (r"[-+−]?\s*\d+(?:,\d+)*(?:\.\d+)?(?:,\d+)*(?:\s*/\s*\d+(?:\.\d+)?)?|[-+−]?\.\d+")
_NUMBER_RE = re.compile(_NUMBER)
_VALID_GROUPS = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+(?:\.\d+)?)?|[-+]?\.\d+")
_ANSWER_ANCHORS = [
    r"####\s*",
    r"\banswer\s*(?:is\b\s*:?|=|:)\s*(?:\*\*)?\s*(?:\\\(|\$)?\s*",
    r"\*\*\s*(?:final\s+)?answer\s*:?\s*\*\*\s*:?\s*",
]
#: An arithmetic expression closed by its result: ``7 + 5 = 12``, ``3 \\times 4 = 12``, ``$20 - 8 = $12``.
_OPERAND = r"[$(]*\s*\d[\d,.]*!?\s*\)*"
_OPERATOR = r"(?:[-+*/x×÷^]|\\times|\\cdot|\\div)"
_EXPRESSION = re.compile(r"\s*(?:\\\$|\$)?\s*" + _OPERAND + r"(?:\s*(?:\\\$|\$)?\s*" + _OPERATOR + r"\s*(?:\\\$|\$)?\s*"
                         + _OPERAND + r")+\s*=\s*(?:\\\$|\$)?\s*(?=[-\d.])")

def canonical_number(token: str) -> str | None:
    """Canonical label of a numeric token: exact value, integer or terminating decimal, else ``p/q``.

    >>> [canonical_number(t) for t in ["1,000", "18.00", "-3.50", "1/2", "2/4", "4/6", "$7", ".5", "3,5", "1.250,5"]]
    ['1000', '18', '-3.5', '0.5', '0.5', '2/3', '7', '0.5', None, None]
    """
    if len(token) > MAX_ANSWER_CHARS:  # a runaway line of digits is no answer (and no label of a megabyte)
        return None
    s = token.replace("−", "-").replace("$", "").replace(" ", "")
    s = s.rstrip(".")
    if "," in s and not _VALID_GROUPS.fullmatch(s):
        return None  # 3,5 / 1.250,5: a decimal comma or a list, ambiguous
    s = s.replace(",", "")
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


#: One part of a LaTeX fraction: a braced group (``{14}``, ``{-3}``, ``{47,250}``, ``{4\\,000}``) or TeX's one-digit
#: argument (``\\frac12``, ``\\frac 3 4``).
_FRAC_ARG = r"(?:\{([^{}]{1,40})\}|(\d))"
#: A LaTeX fraction (the macro and its two arguments), and what may stand right before it: the sign written
#: before it or the whole number of a mixed number (``2\\frac{1}{2}``; a fraction right after any other digit,
#: ``x2\\frac12`` or a runaway line of digits, is no number of ours).
_LATEX_FRACTION = re.compile(r"\\[dtc]?frac\s*" + _FRAC_ARG + r"\s*" + _FRAC_ARG)
_BEFORE_FRACTION = re.compile(r"(?:(?<![\w.,^_])(\d{1,15}) ?|([-+])\s*)$")
_FRAC_NUMBER = re.compile(r"([-+]?)\s*((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)")


#: A LaTeX fraction :func:`latex_fractions` leaves as written (no number: ``\\frac{x}{2}``, ``\\frac{1}{0}``): in a
#: final statement it is an expression, never the number its denominator holds.
_OTHER_FRACTION = re.compile(r"\\[dtc]?frac\s*(?:\{[^{}]*\}|[^\s{}])\s*(?:\{[^{}]*\}|[^\s{}])")


def latex_fractions(text: str) -> str:
    """``text`` with every LaTeX fraction of two numbers written as the plain fraction ``p/q`` (issue 33).

    Models end number answers with a fraction in every LaTeX spelling, boxed or in prose ("... is
    \\( \\frac{14}{33} \\)."): ``\\frac``, ``\\dfrac``, ``\\tfrac``, ``\\cfrac``, TeX's one-digit arguments
    (``\\frac12``), a sign inside either part or before the macro (``\\frac{-3}{4}``, ``-\\frac{3}{4}``), digit
    groups in a part (``\\frac{47,250}{593,775}``); a whole number right before it is a mixed number
    (``2\\frac{1}{2}`` is 5/2, as math-verify reads it). Written as ``p/q`` (a space after it, so that nothing
    that follows joins the denominator) every reader of numbers below reads the fraction as one number: after an
    anchor, in a box, as an expression's result, in a final statement, as the last number of a sentence. Before
    this the prose reading took ``\\frac{14}{33}`` for its denominator ``33`` (held-out-2, 18 answers). A
    fraction whose parts are no numbers (``\\frac{\\text{favourable}}{\\text{total}}``, ``\\frac{x}{2}``) and a zero
    denominator are left as written. The trajectory paper maps each answer to one label with a deterministic
    parser (its App. A.1): one value, one label, however the fraction is spelt.

    >>> latex_fractions(r"is \\( \\frac{14}{33} \\)."), latex_fractions(r"\\dfrac12, -\\tfrac{3}{4}, \\frac{3}{-4}, 2\\frac{1}{2}")
    ('is \\\\( 14/33  \\\\).', '1/2 , -3/4 , -3/4 , 5/2 ')
    >>> latex_fractions(r"\\frac{x}{2} and \\frac{1}{0}")
    '\\\\frac{x}{2} and \\\\frac{1}{0}'
    """
    if "frac" not in text:
        return text
    out, done = [], 0
    for m in _LATEX_FRACTION.finditer(text):
        before = _BEFORE_FRACTION.search(text, max(done, m.start() - 24), m.start())
        start = before.start() if before else m.start()
        plain = _plain_fraction(m, *(before.groups() if before else (None, None)))
        if plain is None or (before is None and m.start() and text[m.start() - 1].isdigit()):
            continue
        out += [text[done:start], plain]
        done = m.end()
    return "".join(out) + text[done:]


def _plain_fraction(m: re.Match, whole: str | None, outer: str | None) -> str | None:
    """The plain ``p/q`` of one :data:`_LATEX_FRACTION` match (the sign ``outer`` before it folded in; with the
    ``whole`` number before it, a mixed number as its value), or None when a part is no number or the denominator
    is zero."""
    num_braced, num_digit, den_braced, den_digit = m.groups()
    signs, digits = [], []
    for part in (num_braced or num_digit, den_braced or den_digit):
        number = _FRAC_NUMBER.fullmatch(join_thousands(part).replace("{,}", ",").strip())
        if number is None:
            return None
        signs.append(number.group(1) == "-")
        digits.append(number.group(2).replace(",", ""))
    if Fraction(digits[1]) == 0 or (whole is not None and any(signs)):
        return None
    if whole is not None:
        value = int(whole) + Fraction(digits[0]) / Fraction(digits[1])
        return f"{value.numerator}/{value.denominator} "
    negative = signs[0] ^ signs[1] ^ (outer == "-")
    sign = "-" if negative else ("+" if outer else "")
    return f"{sign}{digits[0]}/{digits[1]} "


def _first_number(fragment: str) -> str | None:
    """The number at the start of ``fragment`` (after an anchor; LaTeX fractions already written as ``p/q`` by
    :func:`latex_fractions`): the result of an expression closed by ``= N``, else the first number."""
    fragment = join_thousands(_TEXT_OPEN.sub("", fragment))
    fragment = fragment.replace("\\$", "$").replace("\\!", "").replace("{,}", ",")
    expr = _EXPRESSION.match(fragment)
    if expr:  # "7 + 5 = 12": the result (the last "= N" of a chain "2 * 3 = 6 + 6 = 12" too)
        return _first_number(fragment[expr.end():])
    m = re.match(r"[\s$*(\\:]*(?:[A-Za-z]\s*=\s*)?\$?\s*(" + _NUMBER + ")", fragment)
    if m is None:
        return None
    return canonical_number(m.group(1))


_STATED = re.compile(r"\b(?:is|are|was|equals|comes\s+to)\s+(?:approximately\s+|about\s+|exactly\s+|roughly\s+)?")


def _stated_number(sentence: str) -> str | None:
    """The number after the first "is"/"equals" of the sentence that follows an answer anchor, when the anchor
    is followed by prose rather than a number ("**Answer:** The smallest product is 31,943,257, ...")."""
    sentence = re.split(r"(?<=[.!?])\s|\n", sentence, maxsplit=1)[0]
    m = _STATED.search(sentence)
    return _first_number(sentence[m.end():]) if m else None


def parse_number_answer(text: str, *, strict: bool = False) -> str | None:
    """The final number of a GSM8K/SVAMP answer, canonical (see :mod:`thinkprobe.trajectories.parsing`).

    >>> parse_number_answer("The answer is 7 + 5 = 12."), parse_number_answer("The answer is 3,5 km.")
    ('12', None)
    >>> parse_number_answer("The answer is \\\\tfrac{3}{4}."), parse_number_answer("Answer: \u22124")
    ('0.75', '-4')
    """
    text = latex_fractions(normalise_unicode(text))
    hashes = list(re.finditer(r"####\s*", text))
    if hashes:
        value = _first_number(text[hashes[-1].end():])
        if value is not None:
            return value
    boxed = last_boxed(text)
    boxed_at = -1
    if boxed is not None:
        value = _first_number(join_thousands(boxed, spaces=True))
        if value is not None:
            return value
        boxed_at = text.rfind("\\boxed")  # a boxed answer that is no number: only a later statement may decide
    candidates = []
    for pattern in _ANSWER_ANCHORS[1:]:
        for m in re.finditer(pattern, text, flags=re.IGNORECASE):
            value = _first_number(text[m.end():m.end() + 80])
            if value is None:  # "**Answer:** The probability is 2/5525, or about 0.04%": the number it states
                value = _stated_number(text[m.end():m.end() + 160])
            if value is not None and m.start() > boxed_at:
                candidates.append((m.start(), value))
    if candidates:
        return max(candidates)[1]
    if strict or boxed_at >= 0:  # \boxed{\dfrac{48}{52 \times 51}}: the answer is stated, and it is no number
        return None
    return _final_statement(text)


#: Lines that only close a display or a block (dropped before the final line is read).
_CLOSER_LINE = re.compile(r"(?:\\\]|\\\)|\$\$|\]|\)|\*\*|-{3,}|`{3}|\\end\{[a-z*]+\})")
#: A final statement that is no commitment: a condition, a hedge, a negation, a question, a plan.
_NOT_A_RESULT = re.compile(r"\b(?:if|whether|maybe|perhaps|might|unless|suppose|supposing|assuming|not|no|cannot"
                           r"|let's|let\s+us)\b|n't\b|\?", re.IGNORECASE)
#: A negation word (blanked where it describes what was asked: :func:`_question_words_blanked`).
_NEGATION = re.compile(r"\b(?:not|no|cannot)\b|n't\b", re.IGNORECASE)
#: The complement of a result statement's subject, up to the last verb of its clause that states the result: "the
#: probability of getting no pairs when dealt 5 cards [is]", "the chance that it doesn't rain [is]".
_SUBJECT_COMPLEMENT = re.compile(r"\bthe\s+(?:[a-z]+\s+){0,2}?(?:of|that)\s+[^,;]*(?=\s(?:is|are|was|equals|comes\s+to)\s|\s=)",
                                 re.IGNORECASE)
#: A condition that opens a conclusion, up to the last comma before its main clause: "Therefore, if you look at a
#: cube from the front, top, and right side, [you can see a total of 18 faces]".
_CONCLUDING_CONDITION = re.compile(r"^\W*(?:so|thus|therefore|hence|overall|in\s+conclusion|in\s+summary)\s*,?\s+"
                                   r"(?:if|when)\b.*,", re.IGNORECASE)
_CONDITION_WORDS = re.compile(_NEGATION.pattern + r"|\b(?:if|when)\b", re.IGNORECASE)
#: How a finished final statement ends: a sentence end, a closed display or emphasis, or a number.
_FINISHED = re.compile(r"(?:[.!]|\\\)|\\\]|\$|\*\*|__|\d|%|[A-Za-z])[\s*_]*$")
#: A final line that is a number alone (with emphasis, a display, a currency sign, a unit of up to three words).
_BARE_LINE = re.compile(r"[\s#>*_$:(\[\\]*(?:\\\(|\\\[|\$)?\s*(?:\*\*)?\s*\$?(" + _NUMBER + r")\s*(?:\*\*|__)?"
                        r"\s*(?:\\\)|\\\]|\$)?\s*%?(?:\s*[A-Za-z]+){0,3}\s*[.!]?[\s*_]*")
#: What states a result in a final sentence: "is", "are", "equals", "comes to" (:data:`_STATED`) or "=".
_RESULT_CUE = re.compile(_STATED.pattern + r"|=\s*")
#: A number that opens an expression which is not closed by its result ("is 3^{27}", "is 2 \times 5"): no value.
_OPENS_EXPRESSION = re.compile(r"\s*(?:\^|\\times|\\cdot|[*×x]\s*\d|!)")


def _question_words_blanked(sentence: str) -> str:
    """``sentence`` with the negations and conditions that restate the question blanked (same length), so that
    :data:`_NOT_A_RESULT` reads only the words that qualify the result (issue 33, held-out-2).

    A final statement often repeats what was asked before it states the result, and the question's own words
    hold "no", "not" or "if": "So, the probability of getting no pairs when dealt 5 cards is approximately
    0.5072", "the probability of not eating any chocolate with nuts ... is \\( \\frac{91}{228} \\)", "Therefore, if
    you look at a cube from the front, top, and right side, you can see a total of 18 faces". A careful reader
    commits to these: the negation belongs to the event the subject names, the condition to the question's
    set-up. Two spans are such restatements: the complement of the result's subject (:data:`_SUBJECT_COMPLEMENT`:
    "the <noun> of/that ..." up to its "is / are / equals / comes to / ="; only negations are blanked there, a
    hedge inside still qualifies the result), and a condition opening a conclusion ("So/Thus/Therefore, if ...,"
    up to the comma before the main clause: :data:`_CONCLUDING_CONDITION`; its "if"/"when" and negations). A
    negation of the statement itself ("there are no perfect squares ...", "there's no valid equation that equals
    24", "the answer is not 5"), a condition without a conclusion word ("If you find one, ...") and every hedge,
    question and plan stay.

    >>> _question_words_blanked("the probability of getting no pairs is 0.5").strip()
    'the probability of getting    pairs is 0.5'
    >>> _question_words_blanked("there are no squares, as the next square is 100")
    'there are no squares, as the next square is 100'
    """
    chars = list(sentence)

    def blank(start: int, end: int, words: re.Pattern) -> None:
        for w in words.finditer(sentence, start, end):
            chars[w.start():w.end()] = " " * (w.end() - w.start())

    for m in _SUBJECT_COMPLEMENT.finditer(sentence):
        blank(m.start(), m.end(), _NEGATION)
    condition = _CONCLUDING_CONDITION.match(sentence)
    if condition:
        blank(condition.start(), condition.end(), _CONDITION_WORDS)
    return "".join(chars)


def final_statement_number(text: str) -> str | None:
    """The number of an answer without any anchor, read from its final statement only (issue 33).

    The number tasks used to take the last number of the whole text, which gives a number to a text cut
    mid-computation ("16 + 4 = 20 \\"), to one that says "there's no valid equation ... that equals **24**"
    and to a list item ("Let's consider the fractions \\(\\frac{8}{9}\\)"): on the development set
    (``tests/data/answer_labels_heldout.jsonl``) 4 of the 7 answers that state no number got one, and none
    of the 5 answers without an anchor got its label. A careful reader commits only where the text ends in a
    result, so this reads the final line (its last sentence; lines that only close a display are skipped):

    * a line that is a number alone (``10,000``, ``**3**``, ``\\[ 979 \\]``, ``$18 dollars.``) is that number;
    * a finished statement (ending with a sentence end, a closed display or emphasis, or a number/word: not a
      text cut inside a formula, nor one with an unclosed brace or ``\\(``) that is no condition, hedge, negation,
      question or plan (:data:`_NOT_A_RESULT`: "if", "maybe", "not", "no", "let's", "?"; a negation or condition
      that only restates the question, "the probability of getting no pairs is ...", does not count:
      :func:`_question_words_blanked`) and states a number: the number after its first "is / are /
      equals / comes to / =" when that is a value (the last such statement: "9 * 2 = 18, so the total is 18"; not
      the base of an unclosed expression such as ``3^{27}``: "is 64, which is 8^2" gives 64; "is approximately
      0.0095 or 0.95%" gives 0.0095, the value stated), else its last number ("So she makes $18 every day."
      gives 18);
    * anything else is null.

    >>> final_statement_number("So she makes $18 every day."), final_statement_number("Step 2: \\\\( 16 + 4 = 20 \\\\")
    ('18', None)
    >>> final_statement_number("there's no valid equation that equals **24**. If you find one, feel free to share!")
    >>> final_statement_number("So the probability is approximately 0.0095 or 0.95%.")
    '0.0095'
    >>> final_statement_number("So, the probability of not eating any with nuts is \\\\( \\\\frac{91}{228} \\\\).")
    '91/228'

    LaTeX fractions are read as one number (:func:`latex_fractions`); one whose parts are no numbers
    (``\\frac{x}{2}``) is an expression here, never its denominator.
    """
    return _final_statement(latex_fractions(text[-FINAL_TAIL_CHARS:]))


def _final_statement(text: str) -> str | None:
    """:func:`final_statement_number` of a text whose LaTeX fractions are already plain (:func:`latex_fractions`)."""
    tail = _OTHER_FRACTION.sub(" expression ", text[-FINAL_TAIL_CHARS:])
    tail = join_thousands(tail).replace("\\$", "$")
    lines = [line.strip() for line in tail.strip().splitlines() if line.strip()]
    while lines and _CLOSER_LINE.fullmatch(lines[-1]):
        lines.pop()
    if not lines:
        return None
    line = lines[-1]
    bare = _BARE_LINE.fullmatch(line)
    if bare:
        return canonical_number(bare.group(1))
    sentence = re.split(r"(?<=[.!?])\s+(?=[^a-z])", line)[-1]
    if not _FINISHED.search(sentence) or sentence.count("{") > sentence.count("}") \
            or sentence.count("\\(") > sentence.count("\\)"):  # cut inside a formula: "\\( 15/36 + \\frac{1"
        return None
    if _NOT_A_RESULT.search(_question_words_blanked(sentence)):
        return None
    for m in reversed(list(_RESULT_CUE.finditer(sentence))):
        after = sentence[m.end():]
        value = _first_number(after)
        token = re.match(r"[\s$*(\\:]*(?:\\\(|\\\[)?\s*\$?\s*" + "(?:" + _NUMBER + ")", after)
        if value is not None and not (token and _OPENS_EXPRESSION.match(after, token.end())):
            return value
    for token in reversed(_NUMBER_RE.findall(sentence)):
        value = canonical_number(token)
        if value is not None:
            return value
    return None

