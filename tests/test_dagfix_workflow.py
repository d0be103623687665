"""Targets downstream of a rerunning collection through ancient inputs (issue 37, items 7 and 8; thinkprobe.dagfix).

The state is built by hand, without an engine: the trace files of the default's collected ``gsm8k_demo`` units
exist (so ``traj_sample`` takes the collection's manifest as ``ancient``, rules/common.smk: trace_inputs), and the
collection's manifest is older than ``collect.py`` (Snakemake: "Code has changed", the state of a results folder
moved into a fresh checkout). Dry runs only: what is planned is the defect; a real run reruns what is planned.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

from .workflow_helpers import REPO, default_config, job_counts, make_workdir, snakemake

pytestmark = pytest.mark.workflow

TARGET = "results/continuations/smollm2/gsm8k_demo/b0000.json"
OLD = 1_500_000_000  # 2017: older than any script of the checkout


def _collected_state(wd, with_batch: bool):
    """Trace files of the collected gsm8k_demo units and their collection manifest, all older than the code."""
    from thinkprobe.config import load_schema, validate_config
    from thinkprobe.generate.collection_jobs import list_collection_jobs

    cfg = validate_config(yaml.safe_load((wd / "config" / "config.yaml").read_text()),
                          load_schema(REPO / "config" / "schema.yaml"))
    plan = list_collection_jobs(cfg, wd)
    units = [(k, plan.manifest(b)) for k, b in plan.units.items() if k.question_set == "gsm8k_demo"]
    assert units, "the default collects gsm8k_demo for the trajectories"
    files = [f"results/traces/{k.path}.json" for k, _ in units] + sorted({m for _, m in units})
    for rel in files + ([TARGET] if with_batch else []):
        path = wd / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
        os.utime(path, (OLD, OLD))
    if with_batch:  # the identity the sampling job records beside its batch (thinkprobe.protect): unchanged
        from thinkprobe import protect
        from thinkprobe.trajectories.batches import TrajectoryJobs, batch_identity

        jobs = TrajectoryJobs(cfg)
        (model, _qset, batch), = [b for f, b in zip(jobs.files("continuations"), jobs.batches) if f == TARGET]
        protect.record(wd / TARGET, batch_identity(jobs.sampling(batch), jobs.models[model]))
    return sorted({m for _, m in units})


def _dry(wd):
    out = snakemake(wd, "-n", TARGET, timeout=300).stdout
    return out, job_counts(out)


def _job_reason(out: str, rule: str) -> str:
    m = re.search(rf"rule {rule}:\n(?:.*\n)*?\s+reason: (.*)", out)
    assert m, out[-3000:]
    return m.group(1)


def test_a_missing_continuation_batch_is_planned_with_the_collection_that_reruns(tmp_path):
    """Item 7: the batch asked for is missing, its collection must rerun (code newer than its manifest):
    both are planned (before: the collection alone, exit 0, the batch missing)."""
    wd = make_workdir(tmp_path / "wd", default_config())
    _collected_state(wd, with_batch=False)
    out, counts = _dry(wd)
    assert counts.get("collect") == 1, out[-3000:]
    assert counts.get("traj_sample") == 1, out[-3000:]
    assert f"Missing output files: {TARGET}" in _job_reason(out, "traj_sample")


def test_a_moved_batch_is_planned_in_the_same_run_as_its_collection(tmp_path):
    """Item 8, the cause: in a moved results folder every output is older than the checkout's scripts. The
    collection reruns; the sampling job downstream of its ancient manifest is judged on its own reasons in the
    same plan ("Code has changed"), so one run leaves nothing for the next (before: planned by the second run
    only, with everything after it)."""
    wd = make_workdir(tmp_path / "wd", default_config())
    _collected_state(wd, with_batch=True)
    out, counts = _dry(wd)
    assert counts.get("collect") == 1, out[-3000:]
    assert counts.get("traj_sample") == 1, out[-3000:]
    assert "Code has changed" in _job_reason(out, "traj_sample")


def test_an_ancient_input_alone_still_reruns_nothing(tmp_path):
    """The correction keeps what ancient is for: the batch newer than the code, only the collection reruns
    (a run of the collection reruns no sampling of the units it already wrote)."""
    wd = make_workdir(tmp_path / "wd", default_config())
    _collected_state(wd, with_batch=True)
    os.utime(wd / TARGET)  # now: newer than every script
    out, counts = _dry(wd)
    assert counts.get("collect") == 1, out[-3000:]
    assert "traj_sample" not in counts, out[-3000:]


def test_the_correction_refuses_a_snakemake_it_was_not_written_for(tmp_path):
    """The correction patches one line of Snakemake's planning; it names that line when it is gone."""
    code = ("import snakemake.api\nimport snakemake.dag as d\n"
            "async def update_needrun(self, *a, **k): pass\n"
            "d.DAG.update_needrun = update_needrun\n"
            "from thinkprobe import dagfix\n"
            "try:\n    dagfix.install()\nexcept dagfix.DagFixError as e:\n    print('REFUSED', e)\n")
    script = tmp_path / "other_snakemake.py"  # a file: inspect reads the replaced method's source
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert "REFUSED" in proc.stdout and "masked.update(self.bfs(self.depending, job))" in proc.stdout, proc.stderr
