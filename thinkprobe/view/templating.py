"""The pages' templates: jinja2, autoescaping on, loaded once per process.

The markup of every page lives in ``thinkprobe/view/templates/`` (package data): ``trace_page.html.j2`` (a
trace page, :mod:`.trace_page`), ``table_page.html.j2`` (a report table, :mod:`.tables`), ``model_summary.html.j2``
(a model's summary, :mod:`.model_page`), both of the latter extending ``report_page.html.j2``, and the two
charts ``radar.svg.j2`` and ``distribution.svg.j2`` (:mod:`.svg`). The Python side computes what a page
shows (values, positions, colours); the templates write it.

Escaping: every ``{{ value }}`` is HTML-escaped (quotes too, so attribute values are safe), unless the value
is :class:`markupsafe.Markup`. Markup is made in this module only, and only for HTML thinkprobe builds itself:

* the ``shown`` filter (:func:`thinkprobe.view.display.shown`: the value escaped, its bidirectional controls
  as visible markers, isolated in ``<bdi>``) and the ``fmt`` filter, which uses it for texts;
* :func:`asset`: the pages' own style sheets and scripts (``thinkprobe/view/assets/``), written verbatim
  inside ``<style>``/``<script>`` (escaping would break CSS and JavaScript), and ``control_style``;
* :func:`render_markup`: a chart rendered by a template of this environment (already escaped), to be placed
  in a page.

The ``visible`` filter (:func:`thinkprobe.view.display.visible`) is for attribute values, ``<title>`` and SVG
text: the bidirectional controls written as ``[U+202E]``, the rest left to autoescaping.

Templates and assets are read at run time, not imported, so the code hashes cannot see them through the
imports: :data:`CODE_DATA` names them, and :func:`thinkprobe.codedeps.module_data` adds them to the code hash
of every rule whose code reaches this module (editing a template reruns the page rules).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

from .display import CONTROL_STYLE, shown, visible

CODE_DATA = ("view/templates/*.j2", "view/assets/*")
"""The files the pages are made of, as globs relative to the package (read by :mod:`thinkprobe.codedeps`)."""


@lru_cache(maxsize=None)
def asset(name: str):
    """The text of ``thinkprobe/view/assets/<name>`` (a style sheet or script of ours), as Markup."""
    from markupsafe import Markup

    # Markup: our own CSS/JS, written verbatim inside <style>/<script>, never input data
    return Markup(resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8"))


def _shown(value: Any):
    from markupsafe import Markup

    # Markup: display.shown escapes the value itself (and adds only our <bdi>/<span class="ctl"> markup)
    return Markup(shown(value))


def _fmt(x: Any, digits: int = 3):
    """A metric or fact: ``n/a`` for None, floats to ``digits`` significant digits, texts :func:`_shown`."""
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.{digits}g}" if abs(x) < 1000 else f"{x:,.0f}"
    return _shown(x) if isinstance(x, str) else str(x)


@lru_cache(maxsize=None)
def environment():
    """The jinja2 environment of the pages: one per process (templates are compiled once and cached)."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(loader=jinja2.PackageLoader("thinkprobe.view", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, auto_reload=False)
    env.filters.update(shown=_shown, visible=visible, fmt=_fmt)
    # Markup: our own CSS (the bidirectional-control markers' look)
    env.globals.update(asset=asset, control_style=Markup(CONTROL_STYLE))
    return env


def render(name: str, **context: Any) -> str:
    """Render the template ``name`` of ``thinkprobe/view/templates/`` with ``context``."""
    return environment().get_template(name).render(**context)


def render_markup(name: str, **context: Any):
    """:func:`render` as Markup, for a part (a chart) that a page template then places as it is."""
    from markupsafe import Markup

    # Markup: the output of one of our templates, every value in it escaped by autoescaping
    return Markup(render(name, **context))
