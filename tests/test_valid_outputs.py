"""Valid files always (issue 19, item 5): every trace the JSON path accepts gives a GraphML file that
``networkx.read_graphml`` parses, with the same nodes, edges and texts (characters XML cannot hold replaced
one for one, carriage returns kept), through the real CLI and the real encoder."""

from __future__ import annotations

import json

import networkx as nx
import pandas as pd
import pytest

from thinkprobe.cli import main
from thinkprobe.xmlsafe import xml_safe

pytestmark = pytest.mark.fast

BASE = ("First I consider the problem: we need the sum of the two numbers given in the question.\n\n"
        "Wait, maybe the second number is negative, so I should check the sign before adding anything.\n\n"
        "Therefore the total is seven, and I am confident in that result after checking it twice.")

# hostile characters, each inside a trace the JSON path accepts
HOSTILE = {
    "nul": "\x00",
    "ansi": "\x1b[31mred\x1b[0m",
    "bell-backspace": "\x07\x08",
    "vt-ff": "\x0b\x0c",
    "cr-only": "\r",
    "crlf": "\r\n",
    "noncharacters": "\ufffe\uffff",
    "del-c1": "\x7f\x85\x9b",
    "xml-specials": "<tag attr=\"x\"> & ]]> <!-- -->",
    "bidi-zwj": "\u202e\u200d\u2066",
    "astral": "\U0001f600\U00010000",
    "tab": "\t",
}


def _records() -> list[dict]:
    recs = []
    for name, chars in HOSTILE.items():
        text = BASE.replace("two numbers", f"two {chars} numbers").replace("seven,", f"seven{chars},")
        recs.append({"id": f"h-{name}", "model": "m", "question_id": name, "text": f"<think>{text}</think>ok"})
    return recs


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile-text")
    src = tmp / "in" / "hostile.jsonl"
    src.parent.mkdir()
    src.write_text("\n".join(json.dumps(r) for r in _records()) + "\n", encoding="utf-8")
    outs = {}
    for fmt in ("json", "graphml"):
        out = tmp / fmt
        assert main(["analyze", str(src), "--out", str(out), "--graph-format", fmt, "--quiet"]) == 0
        outs[fmt] = out
    return outs


def test_every_accepted_trace_round_trips_through_graphml(both):
    metrics = pd.read_parquet(both["json"] / "metrics.parquet")
    excluded = pd.read_parquet(both["json"] / "exclusions.parquet")
    assert len(metrics) + len(excluded) == len(HOSTILE)  # analysed + excluded = inputs
    assert len(metrics) == len(HOSTILE), excluded.to_dict("records")  # the JSON path accepts every one
    for tid in metrics.trace_id:
        ref = nx.node_link_graph(json.loads((both["json"] / "graphs" / f"{tid}.json").read_text("utf-8")),
                                 edges="edges")
        g = nx.read_graphml(both["graphml"] / "graphs" / f"{tid}.graphml", force_multigraph=True)
        assert g.number_of_nodes() == ref.number_of_nodes() and g.number_of_edges() == ref.number_of_edges()
        replaced = 0
        for n, d in g.nodes(data=True):
            r = ref.nodes[int(n)]
            want, k = xml_safe(r["text"])
            replaced += k
            assert d["text"] == want, (tid, n)
            assert len(d["text"]) == int(d["end"]) - int(d["start"])  # offsets still hold
            assert (int(d["start"]), int(d["end"]), d["node_type"]) == (r["start"], r["end"], r["node_type"])
        assert int(g.graph.get("xml_replaced_chars", 0)) == replaced
        name = tid.removeprefix("h-")
        if name in ("cr-only", "crlf"):  # carriage returns read back as written
            assert sum(d["text"].count("\r") for _, d in g.nodes(data=True)) == HOSTILE[name].count("\r") * 2
        if name in ("nul", "ansi", "bell-backspace", "vt-ff", "noncharacters"):
            assert replaced > 0
        else:
            assert replaced == 0 and all(d["text"] == ref.nodes[int(n)]["text"] for n, d in g.nodes(data=True))


def test_xml_safe_maps_one_for_one():
    assert xml_safe("a\x00b\x1b[0m\ufffe") == ("a\u2400b\u241b[0m\ufffd", 3)
    assert xml_safe("tab\tlf\ncr\r\U0001f600") == ("tab\tlf\ncr\r\U0001f600", 0)
