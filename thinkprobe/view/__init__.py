"""Seeing traces: one static HTML page per trace, and readable table pages for the report.

* :mod:`.sources` gathers what a trace page shows, from a results folder (by unit id) or a trace file;
* :mod:`.trace_page` renders it (with :mod:`.svg` for the radar and the answer distribution);
* :mod:`.reference` is the reference the page's z-scores are taken against;
* :mod:`.tables` writes the report's sortable, filterable table pages; :mod:`.model_page` the per-model pages;
* :mod:`.display` shows ids and texts the pages did not write: escaped, bidirectional controls made visible,
  each value isolated in ``<bdi>``;
* :mod:`.templating` loads the pages' jinja2 templates (``templates/``, autoescaping on) and their style
  sheets and scripts (``assets/``);
* :mod:`.workflow` is what the workflow's ``trace_pages`` rule does; :mod:`thinkprobe.commands.show` is ``thinkprobe show``.

Nothing is imported here, so that a stage using one of these modules hashes only the code it uses.
"""
