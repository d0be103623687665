"""MkDocs hooks: the pages that are generated while the site is built, so they cannot drift.

- ``docs/index.md``: its marker ``<!-- readme -->`` is replaced by ``README.md``, its links into ``docs/`` made
  relative to that folder (``docs/workflow.md`` -> ``workflow.md``), so the home page is the README, never a
  copy of it kept by hand. A README link outside ``docs/`` stays as written, and the strict build fails on it.
- ``docs/configuration.md`` is generated text in the repository (``python scripts/config_reference.py --write``;
  ``tests/test_docs.py`` fails naming that command when the file is stale): no hook.
"""

from __future__ import annotations

import re
from pathlib import Path

README_MARKER = "<!-- readme -->"
_REPO = Path(__file__).resolve().parents[1]


def readme_for_site(text: str) -> str:
    """README.md as a page of docs/: ``](docs/x)`` links become ``](x)``.

    >>> readme_for_site("[The workflow](docs/workflow.md), ![a](docs/img/p.png), [x](https://e.org/docs/y)")
    '[The workflow](workflow.md), ![a](img/p.png), [x](https://e.org/docs/y)'
    """
    return re.sub(r"\]\(docs/", "](", text)


def on_page_markdown(markdown, page, config, files):
    if README_MARKER in markdown:
        readme = (_REPO / "README.md").read_text(encoding="utf-8")
        return markdown.replace(README_MARKER, readme_for_site(readme))
    return markdown
