"""Readable table pages for the report: sortable, filterable HTML with rounded numbers and linked ids.

One self-contained page per table (inline CSS and a small script of ours, no network): a filter box that
keeps the rows containing every word typed, column headers that sort (numbers numerically, by their full
value), numbers shown to 4 significant digits, and unit ids linked to their trace pages where one exists.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any, Mapping

from .display import CONTROL_STYLE, plain, shown

SCRIPT = """
(function(){
  var t=document.querySelector('table.data'), body=t.tBodies[0], rows=[].slice.call(body.rows);
  var box=document.getElementById('filter'), count=document.getElementById('count');
  function apply(){
    var words=box.value.toLowerCase().split(/\\s+/).filter(Boolean), n=0;
    rows.forEach(function(r){
      var text=r.textContent.toLowerCase(), show=words.every(function(w){return text.indexOf(w)>=0;});
      r.style.display=show?'':'none'; if(show) n++;
    });
    count.textContent=n+' of '+rows.length+' rows';
  }
  box.addEventListener('input',apply);
  [].forEach.call(t.tHead.rows[0].cells,function(th,col){
    th.addEventListener('click',function(){
      var dir=th.getAttribute('data-dir')==='asc'?-1:1;
      [].forEach.call(t.tHead.rows[0].cells,function(h){h.removeAttribute('data-dir');});
      th.setAttribute('data-dir',dir>0?'asc':'desc');
      rows.sort(function(a,b){
        var x=a.cells[col].getAttribute('data-v'), y=b.cells[col].getAttribute('data-v');
        if(x===null) x=a.cells[col].textContent; if(y===null) y=b.cells[col].textContent;
        var nx=parseFloat(x), ny=parseFloat(y);
        if(!isNaN(nx)&&!isNaN(ny)) return dir*(nx-ny);
        if(isNaN(nx)!==isNaN(ny)) return isNaN(nx)?1:-1;
        return dir*x.localeCompare(y);
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
  apply();
})();
"""

STYLE = """
body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#222}
h2{font-size:17px;margin:0 0 6px}
.bar{display:flex;gap:12px;align-items:center;margin:8px 0}
#filter{font:inherit;padding:3px 6px;width:320px}
table.data{border-collapse:collapse;font-size:12px}
table.data th{position:sticky;top:0;background:#f2f2f2;cursor:pointer;user-select:none;padding:3px 8px;
  text-align:left;border-bottom:2px solid #ccc;white-space:nowrap}
table.data th[data-dir=asc]::after{content:' \\25B2'} table.data th[data-dir=desc]::after{content:' \\25BC'}
table.data td{padding:2px 8px;border-bottom:1px solid #eee;white-space:nowrap;max-width:520px;overflow:hidden;
  text-overflow:ellipsis}
table.data td.n{text-align:right;font-variant-numeric:tabular-nums}
table.data tr:hover td{background:#f7fbff}
details pre{white-space:pre-wrap;font-size:11px;background:#f6f6f6;padding:6px}
"""

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


def _cell(column: str, value: Any, links: Mapping[str, str]) -> str:
    if isinstance(value, bool) or value is None:
        return f"<td>{'' if value is None else html.escape(str(value))}</td>"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        v = float(value)
        return f'<td class="n" data-v="{"" if math.isnan(v) else repr(v)}">{format_number(v)}</td>'
    text = str(value)
    if column in ID_COLUMNS and text in links:
        return f'<td><a href="{html.escape(links[text], quote=True)}">{shown(text)}</a></td>'
    return f'<td title="{plain(text)}">{shown(text)}</td>'


def table_page(df, title: str, provenance: Mapping[str, Any] | None = None, links: Mapping[str, str] | None = None,
               max_rows: int = 5000, note: str = "") -> str:
    """The HTML page of a table (a pandas DataFrame): filter box, sortable headers, rounded numbers.

    ``links`` maps an id (a ``trace_id``/``unit`` cell) to the href of its trace page. At most ``max_rows``
    rows are written (the page says so when it cuts).
    """
    import numpy as np

    links = links or {}
    written = df.head(max_rows)
    head = "".join(f"<th>{shown(c)}</th>" for c in written.columns)
    rows = []
    for rec in written.itertuples(index=False, name=None):
        cells = []
        for col, val in zip(written.columns, rec):
            if isinstance(val, np.generic):
                val = val.item()
            cells.append(_cell(str(col), val, links))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    cut = f"; first {max_rows} written" if len(df) > max_rows else ""
    prov = ""
    if provenance:
        n_inputs = len(provenance.get("inputs") or {})
        prov = ("<h3>Provenance</h3><details><summary>thinkprobe version, code hash (source_sha256), parameters, "
                f"{n_inputs} input file(s) with sha256</summary><pre>"
                + html.escape(json.dumps(dict(provenance), indent=1, default=str)) + "</pre></details>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>" + plain(title)
            + f"</title><style>{STYLE}{CONTROL_STYLE}</style></head><body><h2>{shown(title)}</h2>"
            + (f"<p>{note}</p>" if note else "")
            + f"<div class='bar'><input id='filter' type='search' placeholder='filter rows (words, any column)'>"
            f"<span id='count'>{len(written)} of {len(written)} rows</span><span>{len(df)} rows in the table{cut}; "
            "click a header to sort</span></div>"
            f"<table class='data'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"{prov}<script>{SCRIPT}</script></body></html>\n")
