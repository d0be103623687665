"""``thinkprobe validate`` (thinkprobe/validity, docs/validity.md): each annotation format read on a small real
example (tests/data/validity/README.md says where each comes from and what was written by us), the mapping
declared beforehand (an unmapped label is an error naming it), the scores against scikit-learn and nltk,
per-trace exclusions, and the generated docs page equal to what the code renders from its committed data."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from .conftest import corpus_path, require
from thinkprobe.graph import NODE_TYPES
from thinkprobe.stats.agreement import Segmentation, agreement
from thinkprobe.validity import formats, mapping, run_page
from thinkprobe.validity.annotation import AnnotatedTrace, Unit, check_offsets
from thinkprobe.validity.compare import cohen_kappa, outcome_draws
from thinkprobe.validity.run import validate

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "validity"
MAPPINGS = ROOT / "config" / "validity"
STEPS = DATA / "step_labels" / "reasoning_comparison_deepseek-r1-distill-qwen-1.5b.json"
DOCS_RUN = "docs/results/validity-step-labels"


# ------------------------------------------------------------------------------------------- the readers

@pytest.mark.fast
def test_the_registry_lists_every_format_and_names_them_for_an_unknown_one():
    assert formats.names() == ["reasoningflow", "step_labels", "thought_anchors"]
    with pytest.raises(ValueError, match="unknown annotation format 'brat'; known: reasoningflow, step_labels"):
        formats.get("brat")


@pytest.mark.fast
def test_step_labels_reader_on_real_corpus_records():
    items = list(formats.get("step_labels").read(STEPS))
    raw = json.loads(STEPS.read_text())
    assert [i.trace_id for i in items] == [f"deepseek-r1-distill-qwen-1.5b/{r['record']}" for r in raw]
    first = items[0]
    assert isinstance(first, AnnotatedTrace) and first.text == raw[0]["thinking_process"]
    assert [u.label for u in first.units][0] == "initializing"
    assert set(u.label for u in first.units) <= set(formats.get("step_labels").node_labels)
    # units tile the text from the first step on, and each starts where its step's text starts
    assert all(a.end == b.start for a, b in zip(first.units, first.units[1:])) and first.units[-1].end == len(first.text)
    assert first.text[first.units[1].start:].startswith("First") or first.units[1].start > 0
    # record 1's third step repeats text from inside the second: real bad input, excluded with its reason
    assert items[2].reason.startswith("offsets do not match the trace text: step 2")


@pytest.mark.fast
def test_thought_anchors_reader_on_a_chunk_table():
    (item,) = formats.get("thought_anchors").read(DATA / "thought_anchors")
    chunks = json.loads((DATA / "thought_anchors" / "mmlu_518" / "chunks_labeled.json").read_text())
    assert item.trace_id == "mmlu_518" and len(item.units) == len(chunks) == 16
    assert [item.text[u.start:u.start + 20] for u in item.units] == [c["chunk"][:20] for c in chunks]
    assert [u.label for u in item.units] == [c["function_tags"][0] for c in chunks]
    assert item.outcome == [c["resampling_importance_accuracy"] for c in chunks]
    assert {(e.source, e.target) for e in item.edges} == {
        (int(d), c["chunk_idx"]) for c in chunks for d in c["depends_on"]}


@pytest.mark.fast
def test_reasoningflow_reader_keeps_response_nodes_and_their_edges(tmp_path):
    src = DATA / "reasoningflow" / "mmlu_530_qwq-32b-preview.json"
    (item,) = formats.get("reasoningflow").read(src)
    doc = json.loads(src.read_text())
    response = [n for n in doc["nodes"] if n["source"] == "response"]
    assert len(item.units) == len(response) == 16
    assert all(item.text[u.start:u.end] == n["text"] for u, n in zip(item.units, response))
    assert len(item.edges) == len(doc["edges"]) - 1  # the edge from the question node is dropped
    # a node whose offsets do not match its text excludes the trace, naming the node
    doc["nodes"][3]["start"] += 5
    bad = tmp_path / "shifted.json"
    bad.write_text(json.dumps(doc))
    (skipped,) = formats.get("reasoningflow").read(bad)
    assert "offsets do not match the trace text: unit 2" in skipped.reason


@pytest.mark.fast
def test_a_broken_file_is_an_exclusion_of_each_reader(tmp_path):
    (tmp_path / "rf").mkdir()
    (tmp_path / "rf" / "x.json").write_text("{not json")
    (tmp_path / "ta" / "p1").mkdir(parents=True)
    (tmp_path / "ta" / "p1" / "chunks_labeled.json").write_text('[{"chunk": "A.", "chunk_idx": "one"}]')
    (tmp_path / "steps.json").write_text('{"a": 1}')
    got = [next(iter(formats.get(f).read(p))) for f, p in [
        ("reasoningflow", tmp_path / "rf"), ("thought_anchors", tmp_path / "ta"), ("step_labels", tmp_path / "steps.json")]]
    assert [g.reason.split(":")[0].split(" (")[0] for g in got] == [
        "unreadable", "a chunk_idx that is not an integer", "not a JSON list of records"]


@pytest.mark.fast
def test_check_offsets_names_the_unit():
    t = AnnotatedTrace("t", "abc def", [Unit(0, 3, "x"), Unit(2, 9, "y")])
    assert check_offsets(t) == "unit 1: offsets 2..9 outside the text of 7 characters"


# ----------------------------------------------------------------------------------------- the mapping

@pytest.mark.fast
@pytest.mark.parametrize("name", ["reasoningflow", "step_labels", "thought_anchors"])
def test_the_committed_mappings_cover_their_formats(name):
    m = mapping.load(MAPPINGS / f"{name}.yaml")
    assert m.format == name and set(m.nodes) == set(formats.get(name).node_labels)


@pytest.mark.fast
def test_a_mapping_that_leaves_a_label_unmapped_is_an_error_naming_it(tmp_path):
    raw = (MAPPINGS / "step_labels.yaml").read_text()
    path = tmp_path / "m.yaml"
    path.write_text(raw.replace("  backtracking: CRT", ""))
    with pytest.raises(ValueError, match=r"nodes label\(s\) left unmapped: backtracking"):
        mapping.load(path)
    path.write_text(raw.replace("  backtracking: CRT", "  backtracking: WHAT"))
    with pytest.raises(ValueError, match="backtracking -> WHAT"):
        mapping.load(path)


# ---------------------------------------------------------------------------------- scores vs references

@pytest.mark.fast
def test_kappa_f1_and_pk_against_scikit_learn_and_nltk():
    metrics = require("sklearn.metrics", "scikit-learn is not installed")
    nltk_seg = require("nltk.metrics.segmentation", "nltk (dev extra) is not installed")
    rng = np.random.default_rng(3)
    for _ in range(50):
        a = list(rng.choice(NODE_TYPES[:5], 40))
        b = [x if rng.random() < 0.5 else str(rng.choice(NODE_TYPES[:5])) for x in a]
        assert cohen_kappa(a, b) == pytest.approx(metrics.cohen_kappa_score(a, b))
        n = 30
        ref = Segmentation.from_boundaries(n, set(rng.choice(np.arange(1, n), 6).tolist()))
        hyp = Segmentation.from_boundaries(n, set(rng.choice(np.arange(1, n), 8).tolist()))
        s = agreement(ref, hyp, tolerance=0)
        # at tolerance 0 boundary F1 is the F1 of the gap decisions
        assert s["f1"] == pytest.approx(metrics.f1_score(ref.gaps(), hyp.gaps()))
        g = lambda seg: "".join(map(str, seg.gaps()))  # noqa: E731
        assert s["pk"] == pytest.approx(nltk_seg.pk(g(ref), g(hyp), k=s["k"]))
        assert s["windowdiff"] == pytest.approx(nltk_seg.windowdiff(g(ref), g(hyp), s["k"]))


@pytest.mark.fast
def test_outcome_draws_hold_position_and_size():
    moves = np.array([1, 1, 0, 0, 0, 0, 0, 0, 0, 1], bool)
    bins = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    outcome = {"moves": moves, "bins": bins, "sets": {"s": [0, 1, 9]}}
    n, hits, rnd = outcome_draws(outcome, "s", np.random.default_rng(0), 2000)
    assert (n, hits) == (3, 3)
    # two of bin 0's five units (two of them move) and one of bin 1's five (one moves): mean 2 * 2/5 + 1/5
    assert rnd.mean() == pytest.approx(1.0, abs=0.05) and rnd.max() <= 3


# -------------------------------------------------------------------------------------- whole runs

@pytest.mark.fast
def test_validate_on_the_small_examples_reports_every_part(encoder, params):
    m = mapping.load(MAPPINGS / "thought_anchors.yaml")
    r = validate("thought_anchors", [DATA / "thought_anchors"], m, params, encoder, draws=200)
    s = r.summary
    assert s["n_compared"] == 1 and s["n_traces"] == 1
    nt = s["node_types"]
    assert nt["n_sentences"] == 16 and sum(map(sum, nt["confusion"])) == 16
    assert -1 <= nt["kappa"] <= 1
    assert set(s["edges"]) == {"ANY"} and s["edges"]["ANY"]["n_ref"] >= 1
    assert "TU starts" in s["outcome"] and "annotated uncertainty_management" in s["outcome"]
    assert s["outcome"]["annotated uncertainty_management"]["n"] == 2
    text = run_page.render(s)
    assert "## Where the outcome moves" in text and "TU starts" in text

    rf = validate("reasoningflow", [DATA / "reasoningflow"], mapping.load(MAPPINGS / "reasoningflow.yaml"),
                  params, encoder).summary
    assert rf["n_compared"] == 1 and {"ELAB", "BRCH", "CRIT", "BACK", "SYNT"} <= set(rf["edges"])
    assert rf["outcome"] is None


@pytest.mark.fast
def test_validate_excludes_per_trace_and_goes_on(encoder, params, tmp_path):
    raw = json.loads(STEPS.read_text())
    raw[0]["annotated_response"] = raw[0]["annotated_response"].replace('["deduction"]', '["guessing"]', 1)
    raw.append({"record": 99, "thinking_process": "Some text.", "annotated_response": ""})
    path = tmp_path / "reasoning_comparison_m.json"
    path.write_text(json.dumps(raw))
    r = validate("step_labels", [path], mapping.load(MAPPINGS / "step_labels.yaml"), params, encoder)
    reasons = {row["trace_id"]: row["reason"] for row in r.rows if row["status"] == "excluded"}
    assert reasons == {"m/6": "labels outside the mapping: guessing",
                       "m/1": reasons["m/1"], "m/99": "no annotations (annotated_response is empty)"}
    assert reasons["m/1"].startswith("offsets do not match the trace text")
    assert r.summary["n_compared"] == 1 and r.summary["n_excluded"] == 3


@pytest.mark.slow
def test_validate_on_real_corpus_step_labels(encoder, params):
    path = corpus_path("steering-thinking-llms", "compare-base-reasoning", "results", "vars",
                       "reasoning_comparison_deepseek-r1-distill-qwen-14b.json")
    s = validate("step_labels", [path], mapping.load(MAPPINGS / "step_labels.yaml"), params, encoder, limit=6).summary
    assert s["n_traces"] == 6 and s["n_compared"] >= 4
    assert 0 <= s["boundaries"]["f1"]["mean"] <= 1 and s["node_types"]["n_sentences"] > 100


# ------------------------------------------------------------------------------------- the docs page

@pytest.mark.fast
def test_the_validity_page_is_generated_from_its_committed_run():
    summary = json.loads((ROOT / DOCS_RUN / "summary.json").read_text())
    text = (ROOT / "docs" / "validity.md").read_text()
    assert run_page.block(text) == run_page.render(summary, None, DOCS_RUN, "docs/validity.md"), (
        "docs/validity.md's generated block differs from its run: rerun the command shown in the block")
    assert summary["mapping"]["file"] == "config/validity/step_labels.yaml"
    assert summary["mapping"]["nodes"] == mapping.load(MAPPINGS / "step_labels.yaml").nodes
    assert summary["n_compared"] + summary["n_excluded"] == summary["n_traces"] == 500
    assert not math.isnan(summary["node_types"]["kappa"])
    from thinkprobe.validity import typer_page  # the two typers' block (tests/test_learned_typer.py)

    outside = text.replace(run_page.block(text), "").replace(typer_page.block(text) or "", "")
    assert not re.search(r"\d\.\d", outside), "a number outside the generated block of docs/validity.md"


@pytest.mark.fast
def test_a_page_with_markers_keeps_its_text(tmp_path):
    summary = json.loads((ROOT / DOCS_RUN / "summary.json").read_text())
    p = tmp_path / "p.md"
    p.write_text(f"# Mine\n\nprose\n\n{run_page.BEGIN}\nSTALE-RUN\n{run_page.END}\n\nafter\n")
    text = run_page.write(p, summary, None, "x")
    assert text.startswith("# Mine\n\nprose\n\n") and text.endswith(f"{run_page.END}\n\nafter\n")
    assert "STALE-RUN" not in text and run_page.block(text) == run_page.render(summary, None, "x", str(p))


@pytest.mark.fast
def test_the_command_writes_its_table_summary_and_page(tmp_path, capsys):
    from thinkprobe.cli import main

    out, pg = tmp_path / "run", tmp_path / "page.md"
    rc = main(["validate", "--format", "step_labels", "--mapping", str(MAPPINGS / "step_labels.yaml"),
               "--out", str(out), "--page", str(pg), "--draws", "10", str(STEPS)])
    assert rc == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["traces"] == 3 and printed["compared"] == 2
    rows = (out / "traces.csv").read_text().splitlines()
    assert len(rows) == 4 and sum("excluded" in r for r in rows) == 1
    assert json.loads((out / "summary.json").read_text())["n_compared"] == 2
    assert pg.read_text().startswith("# Validity run") and "--page " + str(pg) in pg.read_text()
    # an unmapped label in the mapping stops the command with one line naming it
    bad = tmp_path / "m.yaml"
    bad.write_text((MAPPINGS / "step_labels.yaml").read_text().replace("  deduction: SPC", ""))
    assert main(["validate", "--format", "step_labels", "--mapping", str(bad), str(STEPS)]) == 2
    assert "left unmapped: deduction" in capsys.readouterr().err
