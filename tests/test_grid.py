"""One grid per question set: a question set's units are the models and runs that apply to it.

Two imported question sets with different models and runs: a unit of one set's grid without a trace is
``missing``; a model or run of the other set only is ``absent`` (imported as such, in no table).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from thinkprobe.stages.ingest import import_shard
from thinkprobe.stages.tables import aggregate
from thinkprobe.units import UnitKey, discover
from tests.workflow_helpers import REPO

pytestmark = pytest.mark.fast


def _inputs(tmp_path):
    first = json.loads((REPO / "examples/traces/demo.jsonl").read_text().splitlines()[0])
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({**first, "id": "x-q9-r3", "model": "model_x", "question_id": "q9", "run": 3}) + "\n")
    return [{"path": str(REPO / "examples/traces/demo.jsonl"), "question_set": "demo"},
            {"path": str(REPO / "examples/traces/model_c.jsonl"), "question_set": "demo"},
            {"path": str(other), "question_set": "other"}]


def test_each_question_set_has_the_grid_of_its_own_inputs(tmp_path):
    plan = discover(_inputs(tmp_path))
    assert plan.models == ["model_a", "model_b", "model_c", "model_x"] and plan.runs == ["1", "2", "3"]
    assert plan.grids == {"demo": (["model_a", "model_b", "model_c"], ["1", "2"]), "other": (["model_x"], ["3"])}
    shard = plan.shard_records("demo", "q02")
    assert shard["model_c/demo/q02/2"] is None                      # in the grid, no trace: missing
    assert "absent" in shard["model_x/demo/q02/1"] and "absent" in shard["model_a/demo/q02/3"]
    assert shard["model_a/demo/q02/1"]["trace_id"] == "model_a-q02-r1"
    assert plan.in_grid(UnitKey("model_x", "other", "q9", "3")) and not plan.in_grid(UnitKey("model_a", "other", "q9", "1"))


def test_a_configured_grid_applies_to_every_imported_set(tmp_path):
    plan = discover(_inputs(tmp_path), models=["model_a", "model_x"], runs=["1", "3"])
    assert plan.grids["other"] == (["model_a", "model_x"], ["1", "3"]) == plan.grids["demo"]
    assert plan.shard_records("other", "q9")["model_a/other/q9/1"] is None  # asked for, not there: missing


def test_absent_units_are_imported_as_absent_and_left_out_of_the_tables(tmp_path):
    plan = discover(_inputs(tmp_path))
    records = plan.shard_records("other", "q9")
    units = list(records)
    outs = [str(tmp_path / "traces" / f"{u}.json") for u in units]
    counts = import_shard(units, records, outs, require_think=True, max_trace_bytes=2_000_000)
    assert counts["ok"] == 1 and counts["absent"] == len(units) - 1 and counts["missing"] == 0
    docs = {u: json.loads(open(o).read()) for u, o in zip(units, outs)}
    assert docs["model_a/other/q9/1"]["status"] == "absent"
    # absent documents pass through every stage unchanged; the aggregate makes neither a row nor an exclusion
    absent = [o for u, o in zip(units, outs) if docs[u]["status"] == "absent"]
    missing = str(tmp_path / "missing.json")
    import_shard(["model_a/demo/q04/1"], {"model_a/demo/q04/1": None}, [missing], True, 2_000_000)
    assert aggregate([*absent, missing], [], str(tmp_path / "m.parquet"), str(tmp_path / "e.parquet")) == (0, 1)
    assert list(pd.read_parquet(tmp_path / "e.parquet")["trace_id"]) == ["model_a/demo/q04/1"]


def test_a_collected_set_has_the_grid_of_its_collection_jobs():
    from thinkprobe.stages.collect import trace_unit_doc
    from thinkprobe.generate.collection_jobs import join_collection
    from tests.workflow_helpers import default_config

    cfg = default_config()
    plan = discover([{**e, "path": str(REPO / e["path"])} for e in cfg["inputs"]])
    join_collection(plan, cfg, base=REPO)
    assert plan.grids["open_demo"] == (["smollm2"], ["1", "2"])   # collection.runs: 2
    assert plan.grids["gsm8k_demo"] == (["smollm2"], ["1"])       # the job's runs: 1
    assert plan.grids["demo"] == (["model_a", "model_b", "model_c"], ["1", "2"])
    doc = trace_unit_doc({"model": "model_a", "question_set": "gsm8k_demo", "question_id": "q", "run": "1"}, None)
    assert doc["status"] == "absent"
