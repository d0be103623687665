"""Trace pages: one static HTML page per trace with its Thought Graph, metrics and trajectory.

``thinkprobe show`` (:mod:`thinkprobe.view.cli`) and the workflow's ``trace_pages`` rule build them:
:func:`page_from_results` / :func:`page_from_trace` gather what a page shows, :func:`render_page` writes it.
"""

from .page import render_page, typed_arcs, write_page
from .sources import PageData, ShowError, page_from_results, page_from_trace

__all__ = ["PageData", "ShowError", "page_from_results", "page_from_trace", "render_page", "typed_arcs",
           "write_page"]
