"""SIGTERM ends a job and keeps what it stored (issue 32 item 3): SLURM sends it before a wall time ends
(resources.term_before_s, through SBATCH_SIGNAL), on a preemption and on scancel. Inside :func:`job_log` it
raises where the job is, so `finally` blocks run (the engine is closed) and the job exits with 143 at once;
Python's default would end the process without running them."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.fast

JOB = r'''
import sys, time
from pathlib import Path
from thinkprobe.stages.joblog import job_log

out = Path(sys.argv[1])
with job_log(out / "job.log") as log:
    try:
        (out / "unit-1.json").write_text("{}")  # a finished chunk, stored
        print("ready", flush=True)
        time.sleep(60)  # the chunk in flight
        (out / "unit-2.json").write_text("{}")
    finally:
        (out / "closed").write_text("engine closed")
'''


def test_sigterm_ends_a_job_running_its_finally_blocks_and_keeping_what_it_stored(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", JOB, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    t0 = time.time()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143 and time.time() - t0 < 10
    assert (tmp_path / "unit-1.json").exists() and not (tmp_path / "unit-2.json").exists()
    assert (tmp_path / "closed").read_text() == "engine closed"
    log = (tmp_path / "job.log").read_text()
    assert "SIGTERM" in log and "what it stored stays" in log


def test_outside_a_job_sigterm_keeps_its_handler(tmp_path):
    from thinkprobe.stages.joblog import job_log

    before = signal.getsignal(signal.SIGTERM)
    with job_log(tmp_path / "a.log"):
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before
