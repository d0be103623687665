"""Collected trace files are written by their collection job and reached through its manifest (issue 23): what a
rule reading them waits for, when that input is marked done (ancient), and the trace file deleted by hand that
planning names (thinkprobe.generate.collection_jobs.CollectedTraces, thinkprobe.tracefiles)."""

from __future__ import annotations

import json

import pytest

from tests.workflow_helpers import REPO, default_config

pytestmark = pytest.mark.fast


def _plan(tmp_path):
    from thinkprobe.config import load_schema, validate_config
    from thinkprobe.generate.collection_jobs import CollectedTraces, list_collection_jobs

    cfg = validate_config(default_config(), load_schema(REPO / "config" / "schema.yaml"))
    plan = list_collection_jobs(cfg, REPO)
    return plan, CollectedTraces(plan, tmp_path)


def _write(root, path, doc=None):
    f = root / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(doc or {}))
    return f


def test_a_reader_waits_for_the_manifest_until_the_traces_it_reads_exist(tmp_path):
    from thinkprobe.units import UnitKey

    plan, traces = _plan(tmp_path)
    keys = [u for u in plan.units if u.question_set == "open_demo"]
    assert len(keys) == 6 and {b for b in (plan.units[k] for k in keys)} == {("smollm2", "open_demo", "c0000")}
    manifest = "results/collect/smollm2/open_demo/c0000.json"
    assert traces.inputs(keys) == [(manifest, False)] and traces.unwritten() == {}
    assert traces.inputs([UnitKey("model_a", "open_demo", "q", "1")]) == []  # not collected: nothing to wait for
    for k in keys:
        _write(tmp_path, f"results/traces/{k.path}.json")
    _write(tmp_path, manifest)
    fresh = type(traces)(plan, tmp_path)  # one scan per planning
    assert fresh.inputs(keys) == [(manifest, True)] and fresh.unwritten() == {}
    # a trace file deleted by hand while the job's manifest exists: named, with the job to rerun
    (tmp_path / f"results/traces/{keys[0].path}.json").unlink()
    again = type(traces)(plan, tmp_path)
    assert again.inputs(keys) == [(manifest, False)] and again.inputs(keys[1:]) == [(manifest, True)]
    assert again.unwritten() == {manifest: [f"results/traces/{keys[0].path}.json"]}


def test_a_manifest_stands_for_the_trace_files_it_lists(tmp_path):
    from thinkprobe.tracefiles import is_manifest, trace_files, unit_trace_files

    manifest = _write(tmp_path, "results/collect/m/s/c0000.json", {"units": {
        "m/s/q1/1": {"store": "x", "trace": "results/traces/m/s/q1/1.json"},
        "m/s/q2/1": {"store": None, "status": "failed"},  # never stored: no trace file
        "m/s/q3/1": {"store": "y"}}})  # an older manifest without the trace path: the unit's own
    assert is_manifest(manifest) and not is_manifest(tmp_path / "results/traces/m/s/q1/1.json")
    assert trace_files([str(manifest), "results/traces/x/s/q/1.json"]) == [
        "results/traces/m/s/q1/1.json", "results/traces/m/s/q3/1.json", "results/traces/x/s/q/1.json"]
    segs = ["results/segments/m/s/q/1.json", "results/segments/a/s/q/1.json"]
    assert unit_trace_files(segs, absent=["a/s/q/1"]) == ["results/traces/m/s/q/1.json", None]
