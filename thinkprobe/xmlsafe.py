"""Text that XML 1.0 can hold: what the GraphML writer stores for every string of a Thought Graph.

XML 1.0 (section 2.2, production [2] Char) admits tab, LF, CR, U+0020-U+D7FF, U+E000-U+FFFD and the
astral planes; no character reference can stand for the C0 controls (NUL, ESC of ANSI colour codes, ...),
lone surrogates, U+FFFE or U+FFFF. Logged reasoning traces carry such characters, and a writer that emits
them produces a file no XML parser reads. :func:`xml_safe` replaces each of them by ONE visible character,
so every character offset (``start``/``end`` of a node) still points at the same place:

* C0 control U+00XX (except tab, LF, CR) -> its Control Pictures symbol U+2400 + XX (NUL -> U+2400, ESC -> U+241B);
* a lone surrogate, U+FFFE, U+FFFF -> U+FFFD (replacement character).

Carriage returns are legal but a parser normalises them to LF (XML 1.0 section 2.11), so the writer emits
them as the character reference ``&#13;`` (:func:`keep_carriage_returns`), which reads back as CR. The JSON
graph keeps every text verbatim; this mapping concerns GraphML only.
"""

from __future__ import annotations

import re

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _picture(m: re.Match) -> str:
    c = ord(m.group())
    return chr(0x2400 + c) if c < 0x20 else "\ufffd"


def xml_safe(text: str) -> tuple[str, int]:
    """``text`` with every character XML 1.0 cannot hold replaced one for one; and how many were replaced."""
    return _NOT_XML.subn(_picture, text)


def keep_carriage_returns(xml: bytes) -> bytes:
    """Serialised XML with every literal CR written as ``&#13;`` (valid anywhere in content or attributes)."""
    return xml.replace(b"\r", b"&#13;")
