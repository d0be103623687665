"""How the pages show ids and texts they did not write: escaped, with bidirectional controls made visible, and
each value isolated from what surrounds it.

An id or a reasoning text may hold Unicode's explicit directional formatting characters (UAX #9, section 2:
the embeddings LRE/RLE U+202A/B, the overrides LRO/RLO U+202D/E, their terminator PDF U+202C, and the
isolates LRI/RLI/FSI/PDI U+2066-U+2069). An unclosed right-to-left override in a model id reversed the rest
of a page's header, and one in a trace reversed the rest of its unit. Two measures, together:

* :func:`shown` (HTML content) replaces each such character by a visible marker (``U+202E`` in a small box,
  its name on hover) and wraps the value in ``<bdi>``, so that even right-to-left text of its own (an Arabic
  or Hebrew id) cannot reorder the separators and numbers that follow it;
* :func:`plain` (attribute values, ``<title>``, SVG text: places that hold no markup) replaces each by
  ``[U+202E]`` and escapes the rest.

Directional marks (LRM, RLM, ALM) are kept: they only affect their neighbours inside the isolated value.
"""

from __future__ import annotations

import re
import unicodedata
from html import escape
from typing import Any

BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def _name(c: str) -> str:
    return f"{unicodedata.name(c, 'directional control')} (U+{ord(c):04X})"


def visible(text: Any) -> str:
    """``text`` as plain text with every directional formatting character written as ``[U+XXXX]``.

    >>> visible("abc\\u202edef")
    'abc[U+202E]def'
    """
    return BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", str(text))


def plain(text: Any) -> str:
    """For an attribute value, a ``<title>`` or SVG text: :func:`visible`, then HTML-escaped (quotes too)."""
    return escape(visible(text), quote=True)


def shown(text: Any) -> str:
    """For HTML content: escaped, each directional formatting character a visible marker, the whole value
    isolated in ``<bdi>`` (see the module docstring).

    >>> shown("Modell ä <b>")
    '<bdi>Modell ä &lt;b&gt;</bdi>'
    >>> shown("x\\u202ey")
    '<bdi>x<span class="ctl" title="RIGHT-TO-LEFT OVERRIDE (U+202E), shown, not applied">U+202E</span>y</bdi>'
    """
    text = str(text)
    out, last = [], 0
    for m in BIDI_CONTROLS.finditer(text):
        out.append(escape(text[last:m.start()], quote=False))
        out.append(f'<span class="ctl" title="{escape(_name(m.group()))}, shown, not applied">'
                   f'U+{ord(m.group()):04X}</span>')
        last = m.end()
    out.append(escape(text[last:], quote=False))
    return f"<bdi>{''.join(out)}</bdi>"


CONTROL_STYLE = (".ctl{font:600 9px/1 ui-monospace,monospace;color:#b00;border:1px solid #b00;border-radius:2px;"
                 "padding:0 2px;margin:0 1px;vertical-align:1px}")
"""The marker's look, for the pages' style sheets."""
