"""Readable table pages for the report: sortable, filterable HTML with rounded numbers and linked ids.

One self-contained page per table (inline CSS and a small script of ours, no network): a filter box that
keeps the rows containing every word typed, column headers that sort (numbers numerically, by their full
value), numbers shown to 4 significant digits, and unit ids linked to their trace pages where one exists.
The markup is the template ``table_page.html.j2``, its style and script ``assets/tables.css`` and
``assets/tables.js`` (:mod:`thinkprobe.view.templating`).
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

from .templating import render

ID_COLUMNS = ("trace_id", "unit")


def format_number(value: float, digits: int = 4) -> str:
    """A number rounded to ``digits`` significant digits (integers whole, with thousands separators).

    >>> format_number(0.123456), format_number(12345.6), format_number(3.0), format_number(float("nan"))
    ('0.1235', '12,346', '3', '')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 10 ** digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def _cell(column: str, value: Any, links: Mapping[str, str]) -> tuple[str, Any, Any]:
    """A cell as the template writes it: (kind, value, extra), see ``table_page.html.j2``."""
    if isinstance(value, bool) or value is None:
        return "v", "" if value is None else str(value), None
    if isinstance(value, (int, float)):
        v = float(value)
        return "n", format_number(v), "" if math.isnan(v) else repr(v)
    text = str(value)
    if column in ID_COLUMNS and text in links:
        return "a", text, links[text]
    return "t", text, None


def table_page(df, title: str, provenance: Mapping[str, Any] | None = None, links: Mapping[str, str] | None = None,
               max_rows: int = 5000, source: tuple[str, str] | None = None) -> str:
    """The HTML page of a table (a pandas DataFrame): filter box, sortable headers, rounded numbers.

    ``links`` maps an id (a ``trace_id``/``unit`` cell) to the href of its trace page. At most ``max_rows``
    rows are written (the page says so when it cuts). ``source`` is the table's file and its sha256, named
    above the table.
    """
    import numpy as np

    links = links or {}
    written = df.head(max_rows)
    columns = [str(c) for c in written.columns]
    rows = [[_cell(col, val.item() if isinstance(val, np.generic) else val, links) for col, val in zip(columns, rec)]
            for rec in written.itertuples(index=False, name=None)]
    return render("table_page.html.j2", title=title, source=source, columns=columns, rows=rows,
                  written=len(written), total=len(df),
                  provenance=json.dumps(dict(provenance), indent=1, default=str) if provenance else None,
                  n_inputs=len((provenance or {}).get("inputs") or {}))
