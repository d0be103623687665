"""A griffe extension for the API pages (mkdocs.yml, mkdocstrings): a docstring's doctest block (``>>>`` lines
and the output under them, up to a blank line) is shown as a Python console code block.

Why: the metrics' docstrings carry their examples as bare doctests (pytest runs them with
``--doctest-modules``), and Markdown reads a line starting with ``>`` as a quotation, so the site showed each
example as three nested quotes. Changing the docstrings would change the analysis code's hash (every analysis
job and the results snapshot); the rendering is the site's business, so it is corrected where the site reads
the docstrings.

>>> fence_doctests("BF.\\n\\n>>> f(1)\\n0.4\\n\\nMore.")
'BF.\\n\\n```pycon\\n>>> f(1)\\n0.4\\n```\\n\\nMore.'
"""

from __future__ import annotations

import griffe


def fence_doctests(text: str) -> str:
    """``text`` with every doctest block (a ``>>>`` line, its ``...`` continuations and its output, up to a
    blank line) inside a ``pycon`` fence; text already inside a fence is left alone."""
    out: list[str] = []
    in_doctest = in_fence = False
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("```") and not in_doctest:
            in_fence = not in_fence
        elif not in_fence and not in_doctest and stripped.startswith(">>>"):
            out.append(line[: len(line) - len(stripped)] + "```pycon")
            in_doctest = True
        elif in_doctest and not stripped:
            out.append(out[-1][: len(out[-1]) - len(out[-1].lstrip())] + "```")
            in_doctest = False
        out.append(line)
    if in_doctest:
        out.append("```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Applies :func:`fence_doctests` to every docstring griffe reads for the site."""

    def on_instance(self, *, node, obj, agent, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
