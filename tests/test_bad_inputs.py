"""Bad inputs through the real CLI: every one gives a graph or a recorded exclusion naming the trace and why.

One directory holds every kind of bad input next to good traces; ``thinkprobe analyze DIR --out OUT`` runs
once on it (module fixture, a real subprocess with the real encoder). The tests then read
``OUT/metrics.parquet``, ``OUT/exclusions.parquet`` and ``OUT/graphs`` and check that one bad trace never
stopped the batch: the run exits 0, every good trace has a metrics row and a graph file, and every bad one
has an exclusion whose reason says what is wrong.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import networkx as nx
import pandas as pd
import pytest

from thinkprobe.metrics import METRIC_NAMES
from thinkprobe.segmentation import segment
from thinkprobe.text import count_words
from thinkprobe.traces import extract_reasoning

REPO = Path(__file__).resolve().parents[1]
GOOD_TEXT = (REPO / "examples" / "trace.txt").read_text("utf-8")
DEMO = [json.loads(line) for line in (REPO / "examples" / "traces" / "demo.jsonl").read_text("utf-8").splitlines()]

CHINESE = """<think>
好的，这个问题是问一个小城市是否应该关闭公共图书馆分馆，把钱用来购买电子书订阅。我先想想谁在使用这个分馆。

首先，借书的人当然是主要用户，但图书馆的作用远不止借书。老年人在这里用电脑填写表格，孩子们来参加故事会，没有家庭网络的人依靠这里的无线网络。电子书订阅无法替代这些服务。

不过，预算压力是真实存在的。如果城市负担不起房租、员工工资和取暖费用，总得有所取舍。也许可以缩短开放时间，或者和学校共用场地。

另一方面，电子书订阅的费用也不低，而且很多老年人不会使用电子阅读器。如果关闭分馆，最需要帮助的人反而会失去服务。

综合来看，我认为不应该完全关闭分馆，而是应该减少开放时间，同时增加少量电子书预算。
</think>
保留分馆，缩短开放时间。"""

FRENCH = """<think>
D'accord, la question est de savoir si une petite ville doit fermer sa bibliothèque de quartier pour financer un abonnement à des livres numériques. Voyons d'abord qui utilise vraiment cette bibliothèque.

Les lecteurs qui empruntent des livres sont les utilisateurs évidents, mais une bibliothèque offre bien plus. Les personnes âgées utilisent les ordinateurs pour remplir des formulaires administratifs. Les enfants viennent pour l'heure du conte, et ceux qui n'ont pas internet à la maison comptent sur le wifi.

Cependant, la pression budgétaire est réelle. Si la ville ne peut pas payer le bâtiment, le personnel et le chauffage, il faut faire des choix. On pourrait réduire les horaires d'ouverture ou partager les locaux avec l'école du quartier.

D'un autre côté, un abonnement numérique coûte cher aussi, et beaucoup de personnes âgées n'ont ni liseuse ni tablette. Fermer la bibliothèque priverait de service ceux qui en ont le plus besoin.

En conclusion, je pense qu'il vaut mieux garder la bibliothèque ouverte avec des horaires réduits et un petit budget numérique.
</think>
Garder la bibliothèque ouverte."""

SHORT = "<think>Okay, so buses are cheaper than rail. Buses win.</think>Buses."
MARKDOWN_SHORT = """<think>
# Plan

## Options

- buses
- rail
- bikes

---

### Costs

* low
* high

***

## Decision

- buses
</think>"""

_WORDS = ("apples pears plums cherries grapes lemons limes oranges melons peaches figs dates kiwis mangoes "
          "papayas guavas lychees quinces apricots berries").split()
MARKDOWN_LONG = "<think>\n" + "\n\n---\n\n".join(
    f"## Part {k}\n\n" + "\n".join(f"- {w}" for w in _WORDS) for k in range(5)) + "\n</think>"

# Topic blocks for the 10,000-word single paragraph: sentences vary inside a block and change topic
# between blocks, so that layer 2 has something to find.
_TOPICS = [
    (["the telescope", "the comet", "the nebula", "the orbit of Mars", "the spectrum of the star", "the galaxy cluster"],
     ["appears brighter than expected", "shows a faint blue tail", "moves against the background stars",
      "was photographed at midnight", "emits strong hydrogen lines"]),
    (["the risotto", "the bread dough", "the tomato sauce", "the roasted garlic", "the pastry crust", "the onion soup"],
     ["needs more salt and butter", "should rest before baking", "simmers gently on the stove",
      "tastes better with fresh basil", "burns if the oven is too hot"]),
    (["the bond yield", "the quarterly earnings report", "the interest rate", "the stock portfolio", "the pension fund"],
     ["fell after the central bank meeting", "depends on inflation expectations", "worries the investors",
      "was hedged with options", "rose sharply in the last quarter"]),
    (["the striker", "the goalkeeper", "the midfield", "the penalty kick", "the coach's tactics", "the defender"],
     ["scored in the final minute", "saved the shot with one hand", "pressed high up the pitch",
      "was awarded after a foul", "cleared the ball off the line"]),
    (["the rose bushes", "the compost heap", "the tomato seedlings", "the apple tree", "the herb bed"],
     ["need pruning in early spring", "should be watered every morning", "attract bees and butterflies",
      "must be protected from frost", "grow best in full sun"]),
]


def long_paragraph(n_words: int = 10_000, block: int = 25) -> str:
    rng = random.Random(0)
    sentences: list[str] = []
    words = topic = 0
    while words < n_words:
        subjects, predicates = _TOPICS[topic % len(_TOPICS)]
        for _ in range(block):
            s = (f"I notice that {rng.choice(subjects)} {rng.choice(predicates)}, "
                 f"and {rng.choice(subjects)} {rng.choice(predicates)}.")
            sentences.append(s)
            words += len(s.split())
        topic += 1
    return " ".join(sentences)


HUGE_BYTES = 20 * 2 ** 20


def _huge_text() -> bytes:
    sentence = b"Let us consider the next step of the argument carefully and write it down. "
    body = sentence * (HUGE_BYTES // len(sentence) + 1)
    return (b"<think>" + body + b"</think>")[:HUGE_BYTES - len(b"</think>")] + b"</think>"


def build_inputs(root: Path) -> SimpleNamespace:
    """Write the bad and good inputs; return what each trace id should become."""
    excluded: dict[str, str] = {}  # trace_id -> key phrase its reason must contain
    graphs: dict[str, str] = {}  # trace_id -> its reasoning text (what node offsets index into)

    (root / "empty.txt").write_bytes(b"")
    excluded["empty"] = "empty"
    (root / "whitespace.txt").write_text("   \n\n\t  \n \n", "utf-8")
    excluded["whitespace"] = "empty"
    (root / "think_blank.txt").write_text("<think>\n   \n\t\n</think>\nThe answer is 4.", "utf-8")
    excluded["think_blank"] = "empty"
    # short traces are analysed: the paper excludes no trace for its length (input.min_words = 0 by default)
    (root / "short.txt").write_text(SHORT, "utf-8")
    graphs["short"] = extract_reasoning(SHORT).text
    (root / "markdown_short.md").write_text(MARKDOWN_SHORT, "utf-8")
    graphs["markdown_short"] = extract_reasoning(MARKDOWN_SHORT).text
    answer = " ".join(["The city should expand its bus network because buses are cheaper and more flexible."] * 10)
    (root / "no_reasoning.txt").write_text(answer, "utf-8")
    excluded["no_reasoning"] = "no reasoning"
    (root / "answer_only.json").write_text(json.dumps({"id": "answer-only", "answer": answer}), "utf-8")
    excluded["answer-only"] = "no reasoning"
    (root / "bad_utf8.txt").write_bytes(b"<think>ok \xff\xfe bad</think>")
    excluded["bad_utf8"] = "invalid UTF-8"
    (root / "huge.txt").write_bytes(_huge_text())
    excluded["huge"] = "too large"
    (root / "huge_record.json").write_text(json.dumps({"id": "huge-record", "reasoning": "word " * (HUGE_BYTES // 5)}))
    excluded["huge-record"] = "too large"
    (root / "broken.json").write_text('{"id": "never-read", "text": "<think>unterminated', "utf-8")
    excluded["broken"] = "invalid JSON"

    # JSONL: good lines around one invalid JSON line (3) and one line of invalid UTF-8 (5)
    lines = [json.dumps(DEMO[0]).encode(), json.dumps(DEMO[1]).encode(),
             b'{"id": "half-a-record", "text": "<think>the line ends here',
             json.dumps(DEMO[2]).encode(),
             b'{"id": "latin1", "text": "<think>caf\xe9</think>"}']
    (root / "mixed.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    excluded["mixed-3"] = "invalid JSON"
    excluded["mixed-5"] = "invalid UTF-8"
    for rec in DEMO[:3]:
        graphs[rec["id"]] = extract_reasoning(rec["text"]).text

    # a JSON list of two records, the second without any reasoning
    (root / "list.json").write_text(json.dumps([{**DEMO[3], "id": "list-good"}, {"note": "nothing here"}]), "utf-8")
    graphs["list-good"] = extract_reasoning(DEMO[3]["text"]).text
    excluded["list-2"] = "no reasoning"

    # reasoning_content beats the answer; the answer text must appear in no node
    rc_reasoning = extract_reasoning(DEMO[4]["text"]).text
    rc_answer = "FINAL ANSWER: fund a mix of small and large grants, weighted towards small ones."
    (root / "reasoning_content.json").write_text(json.dumps(
        {"id": "rc-record", "model": "m-rc", "reasoning_content": rc_reasoning, "content": rc_answer}), "utf-8")
    graphs["rc-record"] = rc_reasoning

    (root / "good.txt").write_text(GOOD_TEXT, "utf-8")
    graphs["good"] = extract_reasoning(GOOD_TEXT).text
    para = long_paragraph()
    (root / "long_paragraph.txt").write_text(f"<think>{para}</think>\nDone.", "utf-8")
    graphs["long_paragraph"] = para
    (root / "chinese.txt").write_text(CHINESE, "utf-8")
    graphs["chinese"] = extract_reasoning(CHINESE).text
    (root / "french.txt").write_text(FRENCH, "utf-8")
    graphs["french"] = extract_reasoning(FRENCH).text
    (root / "markdown_long.md").write_text(MARKDOWN_LONG, "utf-8")
    graphs["markdown_long"] = extract_reasoning(MARKDOWN_LONG).text
    return SimpleNamespace(excluded=excluded, graphs=graphs, rc_answer=rc_answer)


def _thinkprobe() -> list[str]:
    exe = Path(sys.executable).with_name("thinkprobe")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "thinkprobe.cli"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    src = tmp_path_factory.mktemp("bad_inputs")
    spec = build_inputs(src)
    out = tmp_path_factory.mktemp("out") / "result"
    t0 = time.perf_counter()
    proc = subprocess.run(_thinkprobe() + ["analyze", str(src), "--out", str(out), "--quiet"],
                          capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - t0
    metrics = pd.read_parquet(out / "metrics.parquet") if (out / "metrics.parquet").exists() else None
    exclusions = pd.read_parquet(out / "exclusions.parquet") if (out / "exclusions.parquet").exists() else None
    return SimpleNamespace(src=src, out=out, proc=proc, elapsed=elapsed, metrics=metrics, exclusions=exclusions,
                           **vars(spec))


def _reason(run, trace_id: str) -> str:
    rows = run.exclusions[run.exclusions.trace_id == trace_id]
    assert len(rows) == 1, f"{trace_id}: expected one exclusion row, got {len(rows)}"
    return rows.reason.iloc[0]


def _graph(run, trace_id: str) -> nx.MultiDiGraph:
    path = run.out / "graphs" / f"{trace_id}.json"
    assert path.exists(), f"{trace_id}: no graph file"
    return nx.node_link_graph(json.loads(path.read_text("utf-8")), edges="edges")


@pytest.mark.slow
def test_batch_completes_with_exit_code_0(run):
    assert run.proc.returncode == 0, run.proc.stderr[-3000:]
    assert run.metrics is not None and run.exclusions is not None
    assert list(run.metrics.columns)[-19:] == list(METRIC_NAMES)


@pytest.mark.slow
def test_exactly_the_bad_inputs_are_excluded(run):
    assert set(run.exclusions.trace_id) == set(run.excluded)
    assert len(run.exclusions) == len(run.excluded)


@pytest.mark.slow
def test_every_good_trace_has_metrics_and_a_graph(run):
    assert set(run.metrics.trace_id) == set(run.graphs)
    assert run.metrics.trace_id.is_unique
    for tid in run.metrics.trace_id:
        g = _graph(run, tid)
        assert g.number_of_nodes() >= 1
    # nothing analysed twice, nothing lost: every trace id is either a row or an exclusion
    assert not set(run.metrics.trace_id) & set(run.exclusions.trace_id)
    assert sorted(p.stem for p in (run.out / "graphs").glob("*.json")) == sorted(run.metrics.trace_id)


EXCLUDED_IDS = ["empty", "whitespace", "think_blank", "no_reasoning", "answer-only",
                "bad_utf8", "huge", "huge-record", "broken", "mixed-3", "mixed-5", "list-2"]


@pytest.mark.slow
@pytest.mark.parametrize("trace_id", EXCLUDED_IDS)
def test_exclusion_reason_says_what_is_wrong(run, trace_id):
    phrase = run.excluded[trace_id]
    reason = _reason(run, trace_id)
    assert phrase.lower() in reason.lower(), f"{trace_id}: reason {reason!r} does not say {phrase!r}"
    row = run.exclusions[run.exclusions.trace_id == trace_id].iloc[0]
    assert row.stage == "input"
    assert row.source and Path(row.source.split("#")[0].rsplit(":", 1)[0]).parent == run.src, row.source
    # the CLI's summary names the trace and the reason too
    assert f"excluded {trace_id} (input): {reason}" in run.proc.stderr


@pytest.mark.slow
def test_huge_file_excluded_by_size_before_reading(run):
    reason = _reason(run, "huge")
    sizes = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", reason)]
    assert (run.src / "huge.txt").stat().st_size in sizes, reason


@pytest.mark.slow
def test_invalid_json_line_reported_with_its_line_number(run):
    assert re.search(r"\bline 3\b", _reason(run, "mixed-3")), _reason(run, "mixed-3")
    # the lines around it were analysed
    assert {r["id"] for r in DEMO[:3]} <= set(run.metrics.trace_id)


@pytest.mark.slow
def test_invalid_utf8_reports_the_byte(run):
    # b"<think>ok " is 10 bytes: the bad byte is at offset 10
    assert re.search(r"\bbyte 10\b", _reason(run, "bad_utf8")), _reason(run, "bad_utf8")


@pytest.mark.slow
def test_node_texts_are_verbatim_slices_of_the_reasoning(run):
    for tid, reasoning in run.graphs.items():
        g = _graph(run, tid)
        for i, d in g.nodes(data=True):
            assert d["text"] == reasoning[d["start"]:d["end"]], (tid, i)


@pytest.mark.slow
def test_reasoning_content_field_is_taken_over_the_answer(run):
    g = _graph(run, "rc-record")
    texts = [d["text"] for _, d in g.nodes(data=True)]
    assert texts and all(t in run.graphs["rc-record"] for t in texts)
    assert not any("FINAL ANSWER" in t for t in texts)
    row = run.metrics[run.metrics.trace_id == "rc-record"].iloc[0]
    assert row.model == "m-rc"


@pytest.mark.slow
def test_ten_thousand_word_paragraph_is_split_by_layer_2(run):
    para = run.graphs["long_paragraph"]
    assert count_words(para) >= 10_000 and "\n" not in para
    assert len(segment(para)) == 1  # layer 1 sees one paragraph
    g = _graph(run, "long_paragraph")
    assert g.number_of_nodes() >= 5, "layer 2 should cut the five-topic paragraph into several TUs"
    starts = sorted((d["start"], d["end"]) for _, d in g.nodes(data=True))
    # the TUs tile the paragraph in order, without overlap
    assert all(a[1] <= b[0] for a, b in zip(starts, starts[1:]))
    assert starts[0][0] == 0 and starts[-1][1] == len(para.rstrip())


@pytest.mark.slow
@pytest.mark.parametrize("trace_id", ["chinese", "french"])
def test_other_languages_give_graphs(run, trace_id):
    g = _graph(run, trace_id)
    assert g.number_of_nodes() >= 2
    row = run.metrics[run.metrics.trace_id == trace_id].iloc[0]
    assert row.ATU == g.number_of_nodes()
    assert row.AT > 80


@pytest.mark.slow
def test_markdown_only_traces(run):
    # under 80 words of headers, one-word bullets and rules: analysed like any other trace (checked above);
    # 100 one-word bullets under headers (>= 80 words): a graph with one TU per bullet
    assert count_words(run.graphs["markdown_long"]) >= 80
    g = _graph(run, "markdown_long")
    bullets = MARKDOWN_LONG.count("\n- ")
    assert g.number_of_nodes() == bullets
    assert all(d["text"].lstrip("#- ").split()[-1] in _WORDS for _, d in g.nodes(data=True))
    assert any(d["node_type"] in ("HYP", "RFR") for _, d in g.nodes(data=True))


@pytest.mark.fast
def test_min_words_option_excludes_short_traces_with_a_reason(tmp_path):
    """``input.min_words`` is off by default; set, it excludes shorter traces (and says so) and keeps the rest."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "short.txt").write_text(SHORT, "utf-8")
    (tmp_path / "in" / "long.txt").write_text(DEMO[0]["text"], "utf-8")
    proc = subprocess.run(_thinkprobe() + ["analyze", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "--quiet",
                                           "--set", "input.min_words=80"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    excl = pd.read_parquet(tmp_path / "out" / "exclusions.parquet")
    assert list(excl.trace_id) == ["short"] and "too short" in excl.reason.iloc[0]
    assert list(pd.read_parquet(tmp_path / "out" / "metrics.parquet").trace_id) == ["long"]


@pytest.mark.fast
def test_non_object_json_records_do_not_stop_the_batch(tmp_path):
    """A JSON list item or JSONL line that is a number is excluded; the good traces beside it are analysed."""
    from thinkprobe.cli import main

    src = tmp_path / "in"
    src.mkdir()
    (src / "list.json").write_text(json.dumps([{**DEMO[5], "id": "list-ok"}, 42]), "utf-8")
    (src / "lines.jsonl").write_text(json.dumps({**DEMO[6], "id": "line-ok"}) + "\n[1, 2]\n7\n", "utf-8")
    out = tmp_path / "out"
    assert main(["analyze", str(src), "--out", str(out), "--quiet"]) == 0
    metrics = pd.read_parquet(out / "metrics.parquet")
    exclusions = pd.read_parquet(out / "exclusions.parquet")
    assert set(metrics.trace_id) == {"list-ok", "line-ok"}
    assert set(exclusions.trace_id) == {"list-2", "lines-2", "lines-3"}
    assert all("not a JSON object" in r for r in exclusions.reason)


@pytest.mark.fast
def test_numeric_ids_equal_to_zero_are_kept():
    """JSON ids are often integers; 0 is a valid question id, run and trace id (thinking-llms-interp
    numbers its questions from 0), and must not be replaced by an empty string or the default id."""
    from thinkprobe.traces import trace_from_record

    tr = trace_from_record({"id": 0, "question_id": 0, "run": 0, "text": GOOD_TEXT}, "fallback-id", "src")
    assert (tr.trace_id, tr.question_id, tr.run) == ("0", "0", "0")
    tr = trace_from_record({"id": 7, "question_id": 12, "run": 3, "text": GOOD_TEXT}, "fallback-id", "src")
    assert (tr.trace_id, tr.question_id, tr.run) == ("7", "12", "3")
