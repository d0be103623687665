"""Text helpers shared by the task extractors: Unicode normalisation and the size limits of an answer."""

from __future__ import annotations

#: The longest answer expression that gets a label, in characters: 12 times the longest MATH gold answer
#: (81). A longer one (a runaway box, a 100k-character line taken whole) is the null label, and math-verify,
#: whose own timeout works only in the main thread, never sees it.
MAX_ANSWER_CHARS = 1000
#: A final answer statement is looked for in the last this many characters of a text (no statement is
#: longer), which also bounds the sentence and math scans of a 100k-character text.
FINAL_TAIL_CHARS = 4000

#: Characters that models write for a plain one: Unicode minus signs and dashes before digits are read as
#: ``-`` by the number readers (below only the unambiguous minus signs), primes as apostrophes, curly quotes
#: as straight ones, full-width digits and letters as ASCII, thin, narrow no-break, figure and no-break
#: spaces as a thin space ``\u2009`` (a digit-group separator, :func:`thinkprobe.tasks._numbers.join_thousands`;
#: elsewhere a space), the degree sign after a number dropped by the readers that read numbers.
_TRANSLATE = {0x2212: "-", 0xFE63: "-", 0xFF0D: "-", 0x2032: "'", 0x2033: "''", 0x2018: "'", 0x2019: "'",
              0x201C: '"', 0x201D: '"', 0x00A0: "\u2009", 0x202F: "\u2009", 0x2007: "\u2009", 0x2008: "\u2009",
              0x200A: "\u2009", 0x200B: "", 0xFEFF: "", 0x00D7: "\\times ", 0x00F7: "\\div ",
              **{0xFF10 + i: str(i) for i in range(10)},
              **{0xFF21 + i: chr(ord("A") + i) for i in range(26)},
              **{0xFF41 + i: chr(ord("a") + i) for i in range(26)},
              0xFF08: "(", 0xFF09: ")", 0xFF0E: ".", 0xFF0C: ",", 0xFF1A: ":", 0xFF0F: "/"}


def normalise_unicode(text: str) -> str:
    """``text`` with the characters of :data:`_TRANSLATE` replaced (same meaning, one spelling).

    >>> normalise_unicode("\\u22123\\u00b0 and \\uff11\\uff12 and it\\u2019s 4\\u00a0000")
    "-3° and 12 and it's 4\\u2009000"
    """
    return text.translate(_TRANSLATE)
