"""Ids as written, shown safely (issue 28, item 5): models whose ids are not file names (``Modell ä``,
``org/model``) and one whose id carries an unclosed right-to-left override, through the real workflow.

The model summary pages count each model's traces and exclusions (they compared file-safe names with the
ids as written, and said "No analysed trace, 0 exclusions"); ``thinkprobe show`` finds a unit by its ids as
written, ``--trace-id`` a trace by its id as written; and in a real chromium, the override in an id or a
trace is shown as a visible marker and reorders nothing: the text after it is laid out left to right.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from thinkprobe.traces import safe_id

from .browser import browser_page
from .workflow_helpers import REPO, analysis_config, make_workdir, snakemake

pytestmark = pytest.mark.workflow

DEMO = [json.loads(line) for line in (REPO / "examples/traces/demo.jsonl").read_text("utf-8").splitlines()]
RLO = "\u202e"
EVIL = f"evil{RLO}ledom"
AFTER = "after the override comes this plain sentence"


def _record(i: int, model: str, qid: str, text: str | None = None) -> dict:
    return {"id": f"{model} {qid}", "model": model, "question_id": qid, "run": 1,
            "text": text if text is not None else DEMO[i]["text"], "domain": DEMO[i].get("domain", "")}


RECORDS = [  # one grid for the set: org/model and the override model miss q3 (and q2), so they have "missing" units
    _record(0, "Modell ä", "q1"), _record(1, "Modell ä", "q2"),
    _record(2, "Modell ä", "q3", "no think block in this text, so the record is excluded"),
    _record(3, "org/model", "q1"), _record(4, "org/model", "q2"),
    _record(5, EVIL, "q1", DEMO[5]["text"].replace("</think>", f"\n\nCheck: {RLO}{AFTER}.\n</think>")),
]


def _thinkprobe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "thinkprobe.cli", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("ids")
    traces = root / "traces.jsonl"
    traces.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), "utf-8")
    cfg = analysis_config()
    cfg["inputs"] = [{"path": str(traces), "question_set": "s"}]
    wd = make_workdir(root / "wd", cfg)
    targets = [f"results/report/models/{safe_id(m)}.html" for m in ("Modell ä", "org/model", EVIL)]
    snakemake(wd, *targets, f"results/pages/{safe_id(EVIL)}/s/q1/1.html", "results/report/metrics.html")
    return wd, traces


def test_model_summaries_count_the_traces_and_exclusions_of_ids_as_written(run):
    wd, _ = run
    pages = wd / "results/report/models"
    umlaut = (pages / f"{safe_id('Modell ä')}.html").read_text("utf-8")
    assert "<h2>Model <bdi>Modell ä</bdi></h2>" in umlaut
    assert "<p>2 analysed traces." in umlaut and "<h3>Exclusions (1 units)</h3>" in umlaut
    assert "<bdi>no reasoning</bdi>" in umlaut  # the exclusion's reason
    slash = (pages / f"{safe_id('org/model')}.html").read_text("utf-8")
    assert "<h2>Model <bdi>org/model</bdi></h2>" in slash
    assert "<p>2 analysed traces." in slash and "<h3>Exclusions (1 units)</h3>" in slash
    assert "<bdi>missing</bdi>" in slash  # q3 is in the set's grid with no record: its row holds the file-safe id
    assert f"../../pages/{safe_id('org/model')}/s/q1/1.html" in slash  # its trace pages are linked


def test_show_finds_units_and_traces_by_their_ids_as_written(run, tmp_path):
    wd, traces = run
    for unit in ("Modell ä/s/q1/1", "org/model/s/q2/1", f"{safe_id('org/model')}/s/q2/1"):
        out = tmp_path / "unit.html"
        res = _thinkprobe("show", unit, "--results", str(wd / "results"), "--out", str(out))
        assert res.returncode == 0, res.stderr
        written = unit.replace(safe_id("org/model"), "org/model")
        assert f"<h1><bdi>{written}</bdi></h1>" in out.read_text("utf-8")
    res = _thinkprobe("show", "Modell ä/s/q9/1", "--results", str(wd / "results"), "--out", str(tmp_path / "x.html"))
    assert res.returncode == 2 and "'Modell ä/s/q9/1': no graph file" in res.stderr
    out = tmp_path / "trace.html"
    res = _thinkprobe("show", str(traces), "--trace-id", "org/model q2", "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "<h1><bdi>org/model q2</bdi></h1>" in out.read_text("utf-8")
    res = _thinkprobe("show", str(traces), "--trace-id", "Modell ä q9", "--out", str(out))
    assert res.returncode == 2 and "'Modell ä q1'" in res.stderr  # the ids the file holds, as written


# The left edge of each character of ``needle`` in the first text node that holds it: increasing for text laid
# out left to right, decreasing where an override reversed it.
_XS = """(needle) => { const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT); let n;
  while ((n = w.nextNode())) { const i = n.data.indexOf(needle); if (i < 0) continue; const xs = [];
    for (let k = 0; k < needle.length; k++) { const r = document.createRange(); r.setStart(n, i + k);
      r.setEnd(n, i + k + 1); xs.push(r.getBoundingClientRect().left); }
    return xs; }
  return null; }"""


def _left_to_right(page, needle: str) -> bool:
    xs = page.evaluate(_XS, needle)
    assert xs, f"{needle!r} is not on the page"
    return all(a < b for a, b in zip(xs, xs[1:]))


@pytest.mark.serial  # measured: under two other workers' load chromium's layout read failed once; alone it passes
def test_an_override_in_an_id_or_a_trace_reorders_nothing_in_chromium(run):
    wd, _ = run
    trace_page = wd / "results/pages" / safe_id(EVIL) / "s/q1/1.html"
    summary = wd / "results/report/models" / f"{safe_id(EVIL)}.html"
    table = wd / "results/report/metrics.html"
    for path in (trace_page, summary, table):
        assert RLO not in path.read_text("utf-8"), path  # each one shown as a marker (or escaped in JSON)
    with browser_page() as (page, errors):
        page.goto(trace_page.resolve().as_uri())
        page.wait_for_selector("html[data-rendered='1']", timeout=10_000)
        assert "evil[U+202E]ledom" in page.title()
        header = page.inner_text("header .ids")
        assert "evilU+202Eledom" in header  # the override shown, not applied
        for needle in ("ledom", "question_id", "thought units"):  # the id and what follows it
            assert _left_to_right(page, needle), needle
        assert _left_to_right(page, AFTER)  # the trace's own override reverses nothing either
        assert page.locator(".tu .ctl").count() == 1
        page.goto(summary.resolve().as_uri())
        assert _left_to_right(page, "ledom") and "evilU+202Eledom" in page.inner_text("h2")
        page.goto(table.resolve().as_uri())
        row = page.locator("table.data tbody tr", has_text="ledom")
        assert row.count() == 1 and _left_to_right(page, "ledom")
        assert errors == []
