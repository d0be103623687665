"""Trace pages (``thinkprobe show``): the page builder's parts, and real pages in a real headless chromium.

The browser tests open pages of real traces of the shared corpus: the number of unit elements must equal
the Thought Graph's nodes and the number of arcs its BRCH/BACK/SYNT/CRIT edges, as written by an
independent ``thinkprobe analyze`` of the same file; hovering a unit names its type; the screenshot is not
blank; no console error and no network request. A page of a real 6,656-token trace stays under 1 MB and
renders in under 2 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .browser import browser_page, open_page, screenshot_is_blank
from .conftest import REPO, corpus_path

ARC_TYPES = {"BRCH", "BACK", "SYNT", "CRIT"}
LONG_TRACE = ("thought-branches", "faithfulness", "good_problems", "Professor_itc_failure_threshold0.3_no_mention.json")


def _thinkprobe(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "thinkprobe.cli", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, check=False)


def _one_record(src: Path, index: int, out: Path, field: str) -> Path:
    rec = json.loads(src.read_text())[index]
    out.write_text(json.dumps({"id": f"{src.stem[:40]}-{index}", "model": rec.get("model", "m"),
                               "reasoning": rec[field]}))
    return out


def _analysed_graph(trace: Path, tmp: Path) -> dict:
    """The Thought Graph of a one-trace file, written by ``thinkprobe analyze`` (independent of the page)."""
    res = _thinkprobe("analyze", str(trace), "--out", str(tmp / "analyzed"), "--quiet")
    assert res.returncode == 0, res.stderr
    graphs = list((tmp / "analyzed" / "graphs").glob("*.json"))
    assert len(graphs) == 1
    return json.loads(graphs[0].read_text())


# ---------------------------------------------------------------- the builder's parts, no browser

def _graph(types, edges):
    nodes = [{"id": i, "node_type": t, "text": f"unit {i} text. ", "start": 12 * i, "end": 12 * i + 11,
              "boundary": "none", "segment": 0, "n_tokens": 4} for i, t in enumerate(types)]
    return {"nodes": nodes, "edges": [{"source": s, "target": d, "edge_type": e} for s, d, e in edges]}


@pytest.mark.fast
def test_only_typed_edges_become_arcs():
    from thinkprobe.view.trace_page import typed_arcs

    g = _graph(["HYP", "SPC", "CRT", "SYN"], [(0, 1, "SEQ"), (1, 2, "SEQ"), (2, 3, "SEQ"), (0, 1, "ELAB"),
                                              (1, 2, "BRCH"), (2, 0, "BACK"), (3, 0, "SYNT"), (3, 1, "SYNT"),
                                              (3, 2, "CRIT")])
    assert typed_arcs(g) == [(1, 2, "BRCH"), (2, 0, "BACK"), (3, 0, "SYNT"), (3, 1, "SYNT"), (3, 2, "CRIT")]


@pytest.mark.fast
def test_radar_of_a_constant_profile_is_a_pentagon_not_a_line():
    import re

    from thinkprobe.view.svg import radar

    svg = radar({"Breadth": 0.0, "Depth": 0.0, "Structure": 0.0, "Metacognition": 0.0, "Efficiency": 0.0})
    pts = re.search(r'class="profile" points="([^"]+)"', svg).group(1).split()
    xy = {tuple(round(float(v)) for v in p.split(",")) for p in pts}
    assert len(xy) == 5  # five distinct vertices on the middle ring
    xs, ys = {x for x, _ in xy}, {y for _, y in xy}
    assert max(xs) - min(xs) > 40 and max(ys) - min(ys) > 40


@pytest.mark.fast
def test_profile_scores_average_each_dimension():
    from thinkprobe.view.trace_page import profile_scores

    scores = profile_scores({"A": 1.0, "B": -3.0, "C": None}, {"d1": ["A", "B"], "d2": ["C"]})
    assert scores == {"d1": -1.0, "d2": None}


@pytest.mark.fast
def test_distribution_chart_has_one_column_per_checkpoint_and_marks_gold_and_flags():
    from thinkprobe.view.svg import distribution_chart

    traj = {"gold": "72", "t_commit_index": 2, "checkpoints": [
        {"index": 0, "prefix_tokens": 0, "state": {"": 0.5, "10": 0.5}},
        {"index": 1, "prefix_tokens": 16, "state": {"72": 0.25, "10": 0.75}},
        {"index": 2, "prefix_tokens": 32, "state": {"72": 1.0}}],
        "intervals": [{"checkpoint_index": 1, "markers": [], "tv": 0.5, "switch": True},
                      {"checkpoint_index": 2, "markers": ["BACK"], "tv": 0.75, "switch": True}]}
    svg = distribution_chart(traj)
    assert svg.count('class="col"') == 3
    assert svg.count('stroke="#000" stroke-width="1.6"') == 2  # the gold answer's two segments
    assert svg.count("BACK unit") == 1 and "t_commit" in svg and "<bdi>72</bdi> (gold)" in svg


@pytest.mark.fast
def test_show_names_a_unit_that_is_not_there(tmp_path):
    res = _thinkprobe("show", "m/q/1/1", "--results", str(tmp_path), "--out", str(tmp_path / "p.html"))
    assert res.returncode == 2
    assert "m/q/1/1" in res.stderr and "graph" in res.stderr
    res = _thinkprobe("show", "not-a-unit", "--out", str(tmp_path / "p.html"))
    assert res.returncode == 2 and "model/question_set/question_id/run" in res.stderr


@pytest.mark.fast
def test_show_reads_a_unit_id_as_written_and_names_every_reading_when_ids_hold_slashes(tmp_path):
    from thinkprobe.traces import safe_id
    from thinkprobe.stages.page_sources import ShowError, resolve_unit

    def unit(*ids):
        path = tmp_path / "graphs" / "/".join(safe_id(i) for i in ids[:-1]) / f"{ids[-1]}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")

    unit("Modell ä", "s", "q1", "1")
    unit("org/model", "s", "q/1", "1")
    unit("org", "model", "s/q", "1")
    assert resolve_unit(tmp_path, "Modell ä/s/q1/1").path == f"{safe_id('Modell ä')}/s/q1/1"
    assert resolve_unit(tmp_path, f"{safe_id('Modell ä')}/s/q1/1").model == safe_id("Modell ä")
    assert resolve_unit(tmp_path, "org/model/s/q/1/1").path == f"{safe_id('org/model')}/s/{safe_id('q/1')}/1"
    with pytest.raises(ShowError, match="names 2 units") as err:  # org/model, s, q, 1 and org, model, s/q, 1
        unit("org/model", "s", "q", "1")
        resolve_unit(tmp_path, "org/model/s/q/1")
    assert f"{safe_id('org/model')}/s/q/1" in str(err.value) and f"org/model/{safe_id('s/q')}/1" in str(err.value)
    with pytest.raises(ShowError, match="no graph file"):
        resolve_unit(tmp_path, "Modell ä/s/q2/1")


@pytest.mark.fast
def test_bidirectional_controls_are_shown_and_isolated_in_every_page_kind():
    import pandas as pd

    from thinkprobe.view.display import plain, shown
    from thinkprobe.view.model_page import model_page
    from thinkprobe.view.tables import table_page

    evil = "evil\u202eledom"
    assert shown(evil) == ('<bdi>evil<span class="ctl" title="RIGHT-TO-LEFT OVERRIDE (U+202E), shown, not applied">'
                           "U+202E</span>ledom</bdi>")
    assert plain(evil + '"<') == "evil[U+202E]ledom&quot;&lt;"
    for c in "\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069":
        assert c not in shown(f"a{c}b") and c not in plain(f"a{c}b")
    table = table_page(pd.DataFrame({"model": [evil], "x": [1.5]}), f"metrics of {evil}")
    summary = model_page(evil, pd.DataFrame(columns=["level", "model", "n_traces"]),
                         pd.DataFrame({"model": [evil], "stage": ["import"], "reason": [f"no reasoning: {evil}"]}))
    for html in (table, summary):
        assert "\u202e" not in html and "<bdi>evil<span class=\"ctl\"" in html and "<title>" in html
    assert "<h3>Exclusions (1 units)</h3>" in summary


# ---------------------------------------------------------------- real pages in chromium

def _check_page(html: Path, graph: dict, tmp: Path) -> tuple[float, list[str]]:
    typed = [e for e in graph["edges"] if e["edge_type"] in ARC_TYPES]
    with browser_page() as (page, errors):
        t0 = time.perf_counter()
        ms = open_page(page, html)
        wall = time.perf_counter() - t0
        assert page.locator("#units .tu").count() == len(graph["nodes"])
        assert page.locator("#arcs path.arc").count() == len(typed)
        drawn = page.eval_on_selector_all("#arcs path.arc", "els => els.filter(e => e.getAttribute('d')).length")
        assert drawn == len(typed)  # the script shaped every arc
        k = min(2, len(graph["nodes"]) - 1)
        page.locator("#units .tu").nth(k).hover()
        tip = page.locator("#tip")
        assert tip.is_visible()
        node = sorted(graph["nodes"], key=lambda n: n["id"])[k]
        assert node["node_type"] in tip.inner_text() and str(node["boundary"]) in tip.inner_text()
        png = page.screenshot(full_page=False)
        (tmp / "page.png").write_bytes(png)
        assert not screenshot_is_blank(png)
        assert errors == []
    return max(ms / 1000, 0.0), [f"{wall:.2f}"]


@pytest.mark.slow
def test_page_of_a_corpus_trace_in_chromium(tmp_path):
    src = corpus_path("steering-thinking-llms", "compare-base-reasoning", "results", "vars",
                      "reasoning_comparison_deepseek-r1-distill-llama-8b.json")
    trace = _one_record(src, 3, tmp_path / "trace.json", "thinking_process")
    graph = _analysed_graph(trace, tmp_path)
    html = tmp_path / "page.html"
    res = _thinkprobe("show", str(trace), "--out", str(html))
    assert res.returncode == 0, res.stderr
    assert "<script src" not in html.read_text() and "http" not in html.read_text().split("<footer>")[0]
    _check_page(html, graph, tmp_path)


@pytest.mark.slow
def test_page_of_a_long_trace_is_small_and_fast(tmp_path):
    trace = _one_record(corpus_path(*LONG_TRACE), 39, tmp_path / "long.json", "reasoning_text")
    from thinkprobe.text import count_tokens

    assert count_tokens(json.loads(trace.read_text())["reasoning"]) >= 5000
    graph = _analysed_graph(trace, tmp_path)
    html = tmp_path / "page.html"
    res = _thinkprobe("show", str(trace), "--out", str(html))
    assert res.returncode == 0, res.stderr
    assert html.stat().st_size < 1_000_000
    seconds, _ = _check_page(html, graph, tmp_path)
    assert seconds < 2.0, f"page rendered in {seconds:.2f} s"


@pytest.mark.slow
def test_show_scores_against_a_given_metrics_table(tmp_path):
    import pandas as pd

    res = _thinkprobe("analyze", str(REPO / "examples/traces/demo.jsonl"), "--out", str(tmp_path / "a"), "--quiet")
    assert res.returncode == 0, res.stderr
    table = tmp_path / "a" / "metrics.parquet"
    html = tmp_path / "page.html"
    res = _thinkprobe("show", str(REPO / "examples/trace.txt"), "--out", str(html), "--reference", str(table))
    assert res.returncode == 0, res.stderr
    text = html.read_text()
    assert f"the metrics table {table}" in text and "(12 traces)" in text
    mean = pd.read_parquet(table)["AT"].mean()
    assert f"<td>{mean:.3g}</td>" in text or f"<td>{mean:,.0f}</td>" in text
