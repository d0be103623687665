"""Inputs read as written (issue 19, item 9): JSONL with CR-only line endings, nested and repeated think
blocks (one documented rule, marked when a block is not taken), and an ``--out`` folder inside the input
folder, through the real CLI."""

from __future__ import annotations

import json

import networkx as nx
import pandas as pd
import pytest

from thinkprobe.cli import main
from thinkprobe.traces import extract_reasoning, read_traces

pytestmark = pytest.mark.fast

BODY = ("First I add the two numbers given in the question, which gives seven.\n\n"
        "Wait, maybe I should check the second number again before I answer.\n\n"
        "So the answer is seven, confirmed by checking twice.")


def test_cr_only_crlf_and_lf_jsonl_give_every_record(tmp_path):
    recs = [{"id": f"r{i}", "model": "m", "question_id": f"q{i}", "text": f"<think>{BODY}</think>7"} for i in range(3)]
    for name, sep in (("lf", "\n"), ("crlf", "\r\n"), ("cr", "\r")):
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes((sep.join(json.dumps(r) for r in recs) + sep).encode())
        items = list(read_traces([path]))
        assert [getattr(t, "record_id", None) for t in items] == ["r0", "r1", "r2"], (name, items)
        assert all(t.text == BODY for t in items)
        assert [t.source.rsplit(":", 1)[1] for t in items] == ["1", "2", "3"]  # line numbers as written


def test_nested_and_repeated_think_blocks_follow_one_rule():
    nested = extract_reasoning("<think>a <think>b</think> c</think>answer")
    assert (nested.text, nested.how, nested.dropped) == ("a <think>b</think> c", "think", 0)
    repeated = extract_reasoning("<think>first</think> so <think>second</think> ok")
    assert (repeated.text, repeated.dropped) == ("first", 1)
    close_first = extract_reasoning("opened by the template</think> answer <think>late</think>")
    assert (close_first.text, close_first.how, close_first.dropped) == ("opened by the template", "close-only", 1)
    text = "<think>x <think>y"
    unclosed = extract_reasoning(text)
    assert unclosed.truncated and unclosed.text == "x <think>y" and text[unclosed.offset:] == unclosed.text


def test_dropped_blocks_are_marked_and_out_inside_the_input_folder_is_not_read(tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "a.txt").write_text(f"<think>{BODY}</think> The answer is 7. <think>An afterthought.</think>")
    (folder / "b.txt").write_text(f"<think>{BODY.replace('seven', 'eight')}</think> 8")
    out = folder / "out"
    for _ in range(2):  # the second run would read the first run's graphs (JSON files) as traces
        assert main(["analyze", str(folder), "--out", str(out), "--quiet"]) == 0
        metrics = pd.read_parquet(out / "metrics.parquet")
        excluded = pd.read_parquet(out / "exclusions.parquet")
        assert sorted(metrics.trace_id) == ["a", "b"] and len(excluded) == 0  # analysed + excluded = inputs
    g = nx.node_link_graph(json.loads((out / "graphs" / "a.json").read_text()), edges="edges")
    assert g.graph["dropped_think_blocks"] == 1
    assert "afterthought" not in " ".join(d["text"] for _, d in g.nodes(data=True))
    g = nx.node_link_graph(json.loads((out / "graphs" / "b.json").read_text()), edges="edges")
    assert "dropped_think_blocks" not in g.graph
