"""Real reasoning traces from ../shared/corpus through the whole pipeline with the real encoder.

Three sources (see ../shared/corpus/README.md):

* steering-thinking-llms: 5 DeepSeek-R1-Distill models x 100 prompts; ``response`` holds ``<think>...</think>``
  (every trace closes its block). The records also carry ``thinking_process``, which the reader would take
  over ``response`` (it is a reasoning field); the test passes ``response`` alone so that the ``<think>``
  extraction is what runs, and checks it against ``thinking_process``.
* thinking-llms-interp: 500 R1-Distill-Llama-8B responses (``full_response``) cut at 1,000 tokens; only
  those that reach ``</think>`` are closed, the rest must come out as truncated.
* thought-branches good_problems: MMLU traces (``reasoning_text``) of several models, the same
  (model, pn) repeated across files; deduplicated.

For every trace the pipeline must give either a Thought Graph whose invariants hold, re-checked here
independently with networkx, or an exclusion with a reason; invariant failures (the ``graph`` stage) must
stay under 2% of each source. The pipeline runs once per source (module fixtures, ~10 traces/s).
"""

from __future__ import annotations

import glob
import json
from collections import Counter
from types import SimpleNamespace

import networkx as nx
import pytest

try:  # tests/ as a package or as a plain folder of modules
    from .conftest import corpus_path
except ImportError:
    from conftest import corpus_path
from thinkprobe.graph import EDGE_TYPES, NODE_TYPES
from thinkprobe.metrics import METRIC_NAMES
from thinkprobe.pipeline import analyze
from thinkprobe.traces import Exclusion, Trace, trace_from_record

pytestmark = pytest.mark.slow

STAGES = {"input", "layer1", "layer2", "graph", "metrics"}


def _run(items, params, encoder) -> SimpleNamespace:
    results = list(analyze(items, params, encoder))
    assert len(results) == len(items)
    return SimpleNamespace(items=items, results=results)


@pytest.fixture(scope="module")
def steering(encoder, params):
    folder = corpus_path("steering-thinking-llms", "compare-base-reasoning", "results", "vars")
    files = sorted(glob.glob(str(folder / "reasoning_comparison_deepseek-r1-distill-*.json")))
    items, records = [], []
    for f in files:
        model = f.rsplit("reasoning_comparison_", 1)[1].removesuffix(".json")
        for i, rec in enumerate(json.load(open(f, encoding="utf-8"))):
            tid = f"{model}-{i}"
            items.append(trace_from_record({"id": tid, "model": model, "question_id": str(i),
                                            "response": rec["response"]}, tid, f))
            records.append(rec)
    run = _run(items, params, encoder)
    run.records = records
    run.files = files
    return run


@pytest.fixture(scope="module")
def interp(encoder, params):
    path = corpus_path("thinking-llms-interp", "generate-responses", "results", "vars",
                       "responses_deepseek-r1-distill-llama-8b-legacy-messages.json")
    records = json.loads(path.read_text("utf-8"))
    items = [trace_from_record({**rec, "id": f"interp-{i}", "model": "deepseek-r1-distill-llama-8b"},
                               f"interp-{i}", str(path)) for i, rec in enumerate(records)]
    run = _run(items, params, encoder)
    run.records = records
    return run


@pytest.fixture(scope="module")
def branches(encoder, params):
    folder = corpus_path("thought-branches", "faithfulness", "good_problems")
    seen: set[tuple[str, str]] = set()
    items, records = [], []
    for f in sorted(glob.glob(str(folder / "*.json"))):
        for rec in json.load(open(f, encoding="utf-8")):
            key = (rec["model"], str(rec["pn"]))
            if key in seen:
                continue
            seen.add(key)
            tid = f"{rec['model']}-{rec['pn']}"
            items.append(trace_from_record({**rec, "id": tid, "question_id": str(rec["pn"])}, tid, f))
            records.append(rec)
    run = _run(items, params, encoder)
    run.records = records
    return run


def check_graph(graph, reasoning: str) -> None:
    """The invariants of paper §3.2 and the node attributes, checked with networkx, not the package."""
    n = graph.n
    assert n >= 1
    for u, v, t in graph.edges:
        assert 0 <= u < n and 0 <= v < n, f"edge {u}->{v} ({t}) outside 0..{n - 1}"
        assert t in EDGE_TYPES, t
    assert set(graph.node_types) <= set(NODE_TYPES)
    assert any(t in ("HYP", "RFR") for t in graph.node_types)

    g = nx.MultiDiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from((u, v, {"edge_type": t}) for u, v, t in graph.edges)
    assert nx.number_of_selfloops(g) == 0
    elab = nx.DiGraph([(u, v) for u, v, t in graph.edges if t == "ELAB"])
    assert nx.is_directed_acyclic_graph(elab)
    assert nx.descendants(g, 0) | {0} == set(range(n)), "some node is not reachable from node 0"

    # the exported graph carries the same structure and verbatim node texts
    out = graph.to_networkx()
    assert sorted(out.nodes) == list(range(n))
    assert sorted((u, v, d["edge_type"]) for u, v, d in out.edges(data=True)) == sorted(graph.edges)
    for i, d in out.nodes(data=True):
        assert d["node_type"] in NODE_TYPES
        assert isinstance(d["text"], str) and d["text"].strip()
        assert 0 <= d["start"] < d["end"] <= len(reasoning)
        assert d["text"] == reasoning[d["start"]:d["end"]], f"node {i}"
    # TUs follow reading order without overlapping
    spans = [(out.nodes[i]["start"], out.nodes[i]["end"]) for i in range(n)]
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def check_source(run, name: str) -> None:
    analysed = excluded = 0
    failures: list[str] = []
    for item, res in zip(run.items, run.results):
        assert res.trace.trace_id == item.trace_id
        if res.exclusion is not None:
            excluded += 1
            assert res.exclusion.trace_id == item.trace_id
            assert res.exclusion.reason.strip(), f"{item.trace_id}: empty exclusion reason"
            assert res.exclusion.stage in STAGES
            if res.exclusion.stage == "graph":
                failures.append(res.exclusion.reason)
            continue
        analysed += 1
        assert isinstance(item, Trace)
        try:
            check_graph(res.graph, item.text)
        except AssertionError as exc:
            raise AssertionError(f"{name}/{item.trace_id}: {exc}") from exc
        assert list(res.metrics) == list(METRIC_NAMES)
        assert res.metrics["ATU"] == res.graph.n
    summary = Counter(f"{r.exclusion.stage}: {r.exclusion.reason.split(':')[0]}"
                      for r in run.results if r.exclusion is not None)
    print(f"\n{name}: {len(run.items)} traces, {analysed} graphs, {excluded} excluded")
    for reason, count in summary.most_common():
        print(f"  {count:4d}  {reason}")
    assert analysed + excluded == len(run.items)
    assert analysed > 0.9 * len(run.items), f"{name}: only {analysed}/{len(run.items)} analysed"
    assert len(failures) / len(run.items) < 0.02, f"{name}: {len(failures)} invariant failures, e.g. {failures[:3]}"


def test_steering_thinking_llms(steering):
    assert len(steering.files) == 5
    assert len(steering.items) == 500
    for item, rec in zip(steering.items, steering.records):
        assert isinstance(item, Trace) and not item.truncated
        # the <think> block, verbatim, is the reasoning the source recorded separately
        assert item.text.strip() == rec["thinking_process"].strip()
        assert rec["response"][item.offset:item.offset + len(item.text)] == item.text
    check_source(steering, "steering-thinking-llms")


def test_thinking_llms_interp(interp):
    assert len(interp.items) == 500
    closed = sum("</think>" in rec["full_response"] for rec in interp.records)
    assert sum(isinstance(t, Trace) and not t.truncated for t in interp.items) == closed
    for item, rec in zip(interp.items, interp.records):
        assert isinstance(item, Trace)
        assert item.truncated == ("</think>" not in rec["full_response"])
        assert rec["full_response"][item.offset:item.offset + len(item.text)] == item.text
        assert "<think>" not in item.text and "</think>" not in item.text
    check_source(interp, "thinking-llms-interp")
    # truncated traces are analysed too, not dropped
    truncated_ok = sum(1 for t, r in zip(interp.items, interp.results) if t.truncated and r.graph is not None)
    assert truncated_ok > 0.9 * sum(t.truncated for t in interp.items)


def test_thinking_llms_interp_question_ids(interp):
    """The records' question_id is a JSON integer (0..499); every trace must keep it, 0 included."""
    ids = [item.question_id for item in interp.items]
    expected = [str(rec["question_id"]) for rec in interp.records]
    lost = [e for i, e in zip(ids, expected) if i != e]
    assert not lost, f"question_id lost for {lost[:5]} ({len(lost)} trace(s))"
    assert len(set(ids)) == len(interp.records)


def test_thought_branches(branches):
    assert len(branches.items) == 113
    assert len({(r["model"], str(r["pn"])) for r in branches.records}) == 113
    for item, rec in zip(branches.items, branches.records):
        assert isinstance(item, Trace)
        assert item.text == rec["reasoning_text"]  # the reasoning field, taken as it is
        assert item.model == rec["model"]
    check_source(branches, "thought-branches")


def test_exclusions_are_explained(steering, interp, branches):
    """Every exclusion names its trace and gives a reason a reader can act on."""
    for run in (steering, interp, branches):
        for res in run.results:
            if res.exclusion is None:
                continue
            ex = res.exclusion
            assert isinstance(ex, Exclusion) and ex.trace_id == res.trace.trace_id
            assert ex.source and ex.reason.strip() and ex.stage in STAGES
            # the reason starts with what is wrong, then the detail ("too short: 41 words ...")
            assert ex.reason.split(":")[0].strip(), ex.reason
