"""The steering-thinking-llms input adapter: model, question row and domain for records that lack them."""

from __future__ import annotations

import json

import pytest

from thinkprobe.corpus_inputs import adapt
from thinkprobe.traces import Exclusion, iter_records
from thinkprobe.units import discover

from .conftest import corpus_path

pytestmark = pytest.mark.fast

WORDS = " ".join(["word"] * 90)


def _write_collection(folder, model, n):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"reasoning_comparison_{model}.json").write_text(json.dumps(
        [{"response": f"<think>{WORDS} {i}</think> answer", "thinking_process": f"{WORDS} {i}"} for i in range(n)]))


def test_adapter_reads_model_row_and_domain(tmp_path):
    vars_ = tmp_path / "vars"
    _write_collection(vars_, "m-1.5b", 3)
    _write_collection(vars_, "m-8b", 2)
    (vars_ / "prompts_for_rows_seed42.json").write_text(json.dumps(
        [{"row": 0, "prompt": "p0", "category": "Math"}, {"row": 1, "prompt": "p1", "category": "New Ethics problems"}]))
    entries = [{"path": str(vars_ / f"reasoning_comparison_{m}.json"), "question_set": "stl",
                "adapter": "steering-thinking-llms"} for m in ("m-1.5b", "m-8b")]
    plan = discover(entries)
    assert plan.models == ["m-1.5b", "m-8b"]
    assert plan.questions == {"stl": ["row000", "row001"]}
    domains = {(k.model, k.question_id): ref.domain for k, ref in plan.records.items()}
    assert domains == {("m-1.5b", "row000"): "Math", ("m-1.5b", "row001"): "Ethics",
                       ("m-8b", "row000"): "Math", ("m-8b", "row001"): "Ethics"}
    # row 2 of the first file has no prompt: excluded with a message naming both files, the rest goes on
    assert len(plan.problems) == 1 and "row 2 of reasoning_comparison_m-1.5b.json" in plan.problems[0].reason


def test_adapter_keeps_the_record_hash_and_refuses_other_files(tmp_path):
    _write_collection(tmp_path, "x", 1)
    (tmp_path / "prompts_for_rows_seed42.json").write_text(json.dumps([{"row": 0, "category": "Logic"}]))
    raw = next(iter(iter_records(tmp_path / "reasoning_comparison_x.json")))
    adapted = adapt(raw, {"adapter": "steering-thinking-llms"})
    assert adapted.sha256 == raw.sha256 and adapted.record["model"] == "x"
    assert adapt(raw, {}) is raw
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"thinking_process": WORDS}]))
    out = adapt(next(iter(iter_records(other))), {"adapter": "steering-thinking-llms"})
    assert isinstance(out, Exclusion) and "reasoning_comparison_<model>.json" in out.reason


def test_adapter_on_the_real_corpus():
    vars_ = corpus_path("steering-thinking-llms", "compare-base-reasoning", "results", "vars")
    entries = [{"path": str(p), "question_set": "stl", "adapter": "steering-thinking-llms"}
               for p in sorted(vars_.glob("reasoning_comparison_deepseek-r1-distill-*.json"))]
    plan = discover(entries)
    assert len(plan.models) == 5 and len(plan.records) == 500 and not plan.problems
    assert len(plan.questions["stl"]) == 100
    categories = {ref.domain for ref in plan.records.values()}
    assert "" not in categories and len(categories) == 10  # "New X problems" batches are domain X
    assert not any(c.startswith("New ") for c in categories)
