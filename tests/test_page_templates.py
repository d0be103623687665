"""The pages' templates (thinkprobe/view/templates, jinja2 with autoescaping): a trace whose reasoning, id and
model name hold markup is shown as text, never run, in each page kind, and the templates are part of the
code they belong to.

One hostile trace (``<script>alert(1)</script>`` as its id and model, and in its reasoning together with
payloads that would set ``window.__pwned``: a script, an ``onerror`` handler, a quote that leaves an attribute)
is analysed for real and written as a trace page (with a trajectory whose answer labels and mechanism carry
the same payloads), as a row of a report table page (``stages.tables.html_table``, its id linked to its page)
and as a model summary (``view.model_page.write_model_pages``). The HTML must hold each payload escaped and no
markup of it; a real chromium must show the payloads as text, open no dialog, and leave ``window.__pwned``
unset after the pointer went over every unit and every checkpoint column.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

import pytest

from thinkprobe.traces import safe_id

from .browser import browser_page, open_page
from .conftest import REPO

XSS = "<script>alert(1)</script>"
PAYLOADS = (XSS, "<script>window.__pwned=1</script>", '<img src=x onerror="window.__pwned=2">',
            "\"'><svg onload=window.__pwned=3>")
DEMO = json.loads((REPO / "examples/traces/demo.jsonl").read_text("utf-8").splitlines()[0])
REASONING = DEMO["text"].split("<think>", 1)[1].split("</think>", 1)[0].replace(
    "\n\n## Arguments in favour", "\n\nWhat if the input says " + " and ".join(PAYLOADS) + "?\n\n## Arguments in favour")
OWN_SCRIPTS = {"trace": 1, "table": 1, "summary": 0}  # <script> elements of our own in each page kind


def _trajectory(graph: dict) -> dict:
    """A trajectory in the form ``stages.page_sources.trajectory_view`` returns, its answer labels the payloads (a
    continuation's answer is model output, as untrusted as the trace)."""
    ends = sorted(n["end"] for n in graph["nodes"])
    labels = ["72", *PAYLOADS]
    cps = [{"index": k, "prefix_tokens": 16 * k, "char_offset": ends[min(k, len(ends) - 1)] if k else 0,
            "state": {"": 0.2, labels[k % len(labels)]: 0.5, "72": 0.3} if k % len(labels) else {"": 0.4, "72": 0.6}}
           for k in range(8)]
    return {"status": "ok", "reason": None, "gold": XSS, "endpoint_label": XSS, "correct": False,
            "mechanism": XSS, "committed_answer": PAYLOADS[1], "t_commit": 64, "t_commit_index": 4, "tau": 0.8,
            "switches": 2, "checkpoints": cps,
            "intervals": [{"checkpoint_index": k, "markers": ["BACK"] if k == 3 else [], "tv": 0.25, "switch": True}
                          for k in range(1, 8)]}


@pytest.fixture(scope="module")
def pages(tmp_path_factory, encoder):
    """The three page kinds of one hostile trace: {kind: path}."""
    import pandas as pd

    from thinkprobe.outputs import write_table
    from thinkprobe.params import Params
    from thinkprobe.stages.tables import html_table
    from thinkprobe.view.trace_page import write_page
    from thinkprobe.stages.page_sources import page_from_trace
    from thinkprobe.view.model_page import write_model_pages

    root = tmp_path_factory.mktemp("hostile")
    trace = root / "trace.json"
    trace.write_text(json.dumps({"id": XSS, "model": XSS, "question_id": PAYLOADS[2], "reasoning": REASONING}))
    data = page_from_trace(trace, XSS, Params(), encoder)
    assert data.status == "ok" and data.ids["model"] == XSS, data.reason
    data.trajectory = _trajectory(data.graph)
    unit = "/".join(safe_id(i) for i in (XSS, "s", PAYLOADS[2], "1"))
    write_page(data, str(root / "trace.html"))

    ids = {"trace_id": unit, "model": XSS, "question_set": "s", "question_id": PAYLOADS[2], "run": "1",
           "record_id": XSS}
    metrics = pd.DataFrame([{**ids, **data.metrics}, {**ids, "trace_id": "m/s/q/1", "model": PAYLOADS[3]}])
    prov = {"thinkprobe_version": XSS, "params": {XSS: PAYLOADS[1]}, "inputs": {PAYLOADS[2]: XSS}}
    write_table(str(root / "metrics.parquet"), metrics, prov)
    html_table(str(root / "metrics.parquet"), str(root / "table.html"), f"metrics of {XSS}",
               links={unit: f"../pages/{PAYLOADS[3]}.html"})

    scores = {"Breadth": 0.5, "Depth": -0.5, "Structure": 0.0, "Metacognition": 1.0, "Efficiency": -1.0}
    profiles = pd.DataFrame([{"level": "model", "trace_id": "", "model": XSS, "n_traces": 1, **scores}])
    exclusions = pd.DataFrame([{"trace_id": "x", "model": XSS, "question_set": "s", "question_id": "q", "run": "1",
                                "stage": PAYLOADS[1], "reason": f"{PAYLOADS[2]}: {XSS}", "source": ""}])
    traces = pd.DataFrame([{"model": XSS, "mechanism": PAYLOADS[3]}])
    for name, table in (("profiles", profiles), ("exclusions", exclusions), ("traces", traces)):
        table.to_parquet(root / f"{name}.parquet")
    write_model_pages([safe_id(XSS)], [str(root / "summary.html")], str(root / "profiles.parquet"),
                      str(root / "exclusions.parquet"), str(root / "traces.parquet"),
                      pages={unit: f"../../pages/{unit}.html?{PAYLOADS[3]}"})
    return {kind: root / f"{kind}.html" for kind in OWN_SCRIPTS}


@pytest.mark.fast
def test_every_page_kind_writes_the_payloads_escaped_and_none_of_their_markup(pages):
    from html import escape

    for kind, path in pages.items():
        html = path.read_text("utf-8")
        assert html.lower().count("<script") == OWN_SCRIPTS[kind], kind  # only our own script elements
        assert "<img" not in html and "<svg onload" not in html and "'><svg" not in html, kind
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, kind  # the id and model shown as text
        assert "window.__pwned=1" in html, kind  # ... as were the other payloads
    trace = pages["trace"].read_text("utf-8")
    for payload in PAYLOADS:  # each one in the reasoning, and as an answer label in the trajectory's legend
        assert trace.count(escape(payload, quote=False)) >= 2, payload
        assert f"<bdi>{escape(payload, quote=False)}</bdi>" in trace, payload
    assert "<h1><bdi>&lt;script&gt;alert(1)&lt;/script&gt;</bdi></h1>" in trace  # the title: the trace's id
    table = pages["table"].read_text("utf-8")
    assert 'href="../pages/&#34;&#39;&gt;&lt;svg onload=window.__pwned=3&gt;.html"' in table  # inside its attribute
    summary = pages["summary"].read_text("utf-8")
    assert "<h2>Model <bdi>&lt;script&gt;alert(1)&lt;/script&gt;</bdi></h2>" in summary
    assert "<p>1 analysed traces." in summary


@pytest.mark.slow
def test_no_payload_runs_in_chromium(pages):
    for kind, path in pages.items():
        with browser_page() as (page, errors):
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            if kind == "trace":
                open_page(page, path)
                for selector in ("#units .tu", "svg.dist g.col", "#units .cp"):  # every tip and highlight
                    for k in range(page.locator(selector).count()):
                        page.locator(selector).nth(k).hover()
                assert page.locator("svg.dist g.col").count() == 8
            else:
                page.goto(path.resolve().as_uri())
                page.locator("table.data tbody tr").first.hover()
            text = page.inner_text("body")
            assert XSS in text and PAYLOADS[3] in text, kind  # shown as text, not dropped
            assert page.evaluate("() => window.__pwned") is None, kind
            assert page.locator("img").count() == 0 and page.locator("svg[onload]").count() == 0, kind
            assert dialogs == [] and errors == [], (kind, dialogs, errors)


@pytest.mark.fast
def test_the_templates_are_package_data_and_in_the_code_hash_of_every_page_rule():
    """Templates are read at run time, not imported: they reach the code hashes through ``CODE_DATA``
    (thinkprobe.codedeps.module_data) and the wheel through pyproject's package-data."""
    import tomllib

    from thinkprobe.codedeps import module_data, script_modules
    from thinkprobe.stages.page_sources import page_modules
    from thinkprobe.view.templating import environment

    package = REPO / "thinkprobe"
    templates = {p.relative_to(package).as_posix() for p in (package / "view" / "templates").iterdir()}
    assets = {p.relative_to(package).as_posix() for p in (package / "view" / "assets").iterdir()}
    assert len(templates) >= 6 and set(module_data(["view.templating"])) == templates | assets
    scripts = REPO / "workflow" / "scripts"
    for modules in (page_modules(), *(script_modules(scripts / s) for s in ("trace_pages.py", "report_tables.py",
                                                                            "stats_pages.py", "model_summaries.py"))):
        assert templates | assets <= set(modules)
    assert "view/reference.json" in page_modules()
    globs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["thinkprobe"]
    for f in templates | assets | {"view/reference.json"}:
        assert any(fnmatch.fnmatch(f, g) for g in globs), f"{f} is not in pyproject's package-data"
    env = environment()
    assert env is environment() and env.autoescape is True  # one environment per process, escaping on
    assert set(env.list_templates()) == {Path(t).name for t in templates}
