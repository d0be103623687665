"""MkDocs hook: the configuration reference (docs/configuration.md) is generated while the site is built.

The page's marker ``<!-- config-reference -->`` is replaced by ``scripts/config_reference.py``'s Markdown:
every key of config/schema.yaml with its type, default and description, and the rules whose params take it
(derived from the workflow), so the reference cannot drift from the schema or the rules.
"""

from __future__ import annotations

import sys
from pathlib import Path

MARKER = "<!-- config-reference -->"
_SCRIPTS = Path(__file__).resolve().parent


def on_page_markdown(markdown, page, config, files):
    if MARKER not in markdown:
        return markdown
    sys.path.insert(0, str(_SCRIPTS))
    try:
        import config_reference
    finally:
        sys.path.remove(str(_SCRIPTS))
    return markdown.replace(MARKER, config_reference.markdown())
