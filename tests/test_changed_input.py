"""No loss from a changed input (issue 19, item 2): a record edited between planning and its import job is
excluded for that run only; the next run imports it again, even with the original file back, and it reaches
metrics.parquet. Through the real workflow; the concurrent edit is injected into a private copy of the package
(the import job edits its input file just before reading it and restores it after)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from .workflow_helpers import REPO, env_for, make_workdir, snakefile

pytestmark = pytest.mark.workflow

DEMO = [json.loads(line) for line in (REPO / "examples/traces/demo.jsonl").read_text("utf-8").splitlines()]

_INJECT = r'''

_real_load_records = load_records


def load_records(refs, *args, **kwargs):
    import os
    from pathlib import Path

    target = os.environ.get("THINKPROBE_TEST_EDIT_DURING_RUN")
    refs = list(refs)
    if not target or not any(r["trace_id"] == target for r in refs):
        return _real_load_records(refs, *args, **kwargs)
    path = Path(next(r["path"] for r in refs if r["trace_id"] == target))
    original = path.read_bytes()

    def save(data):  # atomically, as an editor saves: a concurrent import job (--cores 2) reads the old or the
        tmp = path.with_name(path.name + ".edit")  # new file whole, never one cut short while being written
        tmp.write_bytes(data)
        os.replace(tmp, path)

    lines = original.split(b"\n")  # someone edits the record and saves the file ...
    save(b"\n".join(x.replace(b"</think>", b" (edited)</think>") if f'"{target}"'.encode() in x else x
                    for x in lines))
    try:
        return _real_load_records(refs, *args, **kwargs)
    finally:
        save(original)  # ... and reverts it
'''


def _run(wd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile(wd)), "--directory", str(wd),
           "--cores", "2"]
    return subprocess.run(cmd, capture_output=True, text=True, env={**env_for(wd), **(env or {})}, timeout=900,
                          cwd=wd)


def _tree(wd: Path, question_id: str) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for stage in ("traces", "segments", "graphs", "metrics")
            for p in (wd / "results" / stage).rglob(f"*/{question_id}/*.json")}


def test_a_unit_whose_input_changed_during_the_run_is_retried(tmp_path):
    recs = [{"id": f"r{i}", "model": "m", "run": 1, "question_id": f"q{i}", "text": DEMO[i]["text"]} for i in range(3)]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in recs) + "\n", "utf-8")
    wd = make_workdir(tmp_path / "wd", {"inputs": [{"path": str(src), "question_set": "s"}]}, package_copy=True)
    with open(wd / "thinkprobe/stages/ingest.py", "a", encoding="utf-8") as fh:
        fh.write(_INJECT)
    first = _run(wd, {"THINKPROBE_TEST_EDIT_DURING_RUN": "r1"})
    assert first.returncode == 0, first.stdout + first.stderr
    metrics = pd.read_parquet(wd / "results/tables/metrics.parquet")
    excl = pd.read_parquet(wd / "results/tables/exclusions.parquet")
    assert len(metrics) + len(excl) == 3
    assert sorted(metrics.trace_id.str.split("/").str[2]) == ["q0", "q2"]
    reason = excl.reason.iloc[0]
    assert "changed after the workflow was planned; the next run imports it again" in reason
    assert (wd / "results/.retry/s/q1.json").exists()
    assert src.read_bytes().count(b"(edited)") == 0  # the input is back as it was planned
    finished = {q: _tree(wd, q) for q in ("q0", "q2")}

    second = _run(wd)  # the original file, unchanged since the first planning
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Nothing to be done" not in second.stdout + second.stderr
    metrics = pd.read_parquet(wd / "results/tables/metrics.parquet")
    excl = pd.read_parquet(wd / "results/tables/exclusions.parquet")
    assert len(metrics) == 3 and len(excl) == 0  # analysed + excluded = inputs, nothing lost
    assert {q: _tree(wd, q) for q in ("q0", "q2")} == finished  # nothing finished changed
    third = _run(wd)
    assert third.returncode == 0
    assert "Nothing to be done" in third.stdout + third.stderr  # retried once, not on every run
    assert os.path.exists(wd / "results/tables/metrics.parquet")
