"""Engine processes die with their job, and leave nothing behind: a watchdog kills them, removes their
shared-memory segments and their socket folder when the job process dies, however it dies (SIGKILL included);
what a killed watchdog could not clean, the next engine job on the node cleans from the watchdog's record.

vLLM starts its engine core (and workers) as child processes that hold the model (3 GB for a small model on
CPU, the GPU memory on a node), talk over ZeroMQ sockets, and share 160-250 MB shared-memory segments
(``/dev/shm/psm_*``) and semaphores (``/dev/shm/sem.*``). A job killed with SIGKILL (a SLURM time limit, the
OOM killer, a user) cannot clean up: the children were reparented and kept running, and the segments stayed
in ``/dev/shm`` (memory of the node) until someone removed them. :func:`start` forks a small watchdog before
the engine starts:

* it asks the kernel for a signal when its parent (the job) dies (``PR_SET_PDEATHSIG``, Linux);
* meanwhile, twice a second, it records the job's descendants that started after the watchdog (pid and start
  time, from ``/proc``: a process the job had started before is not the engine's, and a record that listed it
  could neither be cleaned while it runs nor kill it rightly when the job dies) and the
  new ``/dev/shm`` entries they map or hold open (by inode, from ``/proc/<pid>/maps`` and ``fd``: a semaphore is
  mapped under a temporary name), or that carry their pid in their name (joblib's ``sem.loky-<pid>-*``,
  torch's ``torch_<pid>_*``: created and closed at once, mapped by nobody); the record is a small JSON file
  beside the segments (``/dev/shm/thinkprobe-engine-<job pid>-<start>-<watchdog pid>.json``);
* when the job is gone, it SIGKILLs every recorded process still alive with the same start time (never a
  reused pid), removes the recorded segments that no live process maps or holds open, removes the scratch
  folder given to it, then its record, and exits.

A whole process group killed at once (SLURM ends a job step that way) kills the watchdog too. The next job
that starts an engine on the node runs :func:`sweep` first: every record whose job and watchdog are gone (pid
and start time) is cleaned as the watchdog would have (its surviving processes killed, its unused segments
and its scratch folder removed). Records and segments of another user, and of any job still alive, are never
touched; a segment some live process maps or holds is never removed.

:meth:`Watchdog.finish` is the normal end (the engine was closed): the watchdog waits for the engine's
processes to exit, removes what they left unused, and exits; it kills nothing.

The engine's sockets go to the scratch folder (``VLLM_RPC_BASE_PATH``, set by the vLLM backend), so nothing
is left in the shared temporary folder either. On other systems than Linux :func:`start` does nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import sys
import time
from typing import Any

_PR_SET_PDEATHSIG = 1
SHM = "/dev/shm"
RECORD_PREFIX = "thinkprobe-engine-"
SCRATCH_PREFIX = "thinkprobe-vllm-"
POLL_S = 0.5
ATTRIBUTE_S = 5.0
EXIT_WAIT_S = 10.0  # how long the engine's processes may take to exit after a kill or a close
# /dev/shm names that carry their creator's pid: joblib's semaphores, torch's shared tensors
_PID_NAMED = re.compile(r"^(?:sem\.loky-|torch_)(\d+)[-_]")
_SHM_NAME = re.compile(r"^[^/\x00]+\Z")


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of a process, from /proc; None when it is gone."""
    st = _proc(pid)
    return None if st is None else (st[0], st[1])


def _proc(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, start time, state) of a process, from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    return int(fields[1]), int(fields[19]), fields[0].decode()


def alive(pid: int, started: int) -> bool:
    """Whether the process ``pid`` that started at ``started`` still runs (a zombie does not)."""
    st = _proc(pid)
    return st is not None and st[1] == started and st[2] not in ("Z", "X")


def descendants(root: int) -> dict[int, int]:
    """``{pid: start time}`` of every live descendant of ``root``."""
    parents: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st:
                parents.setdefault(st[0], []).append(int(name))
                starts[int(name)] = st[1]
    out, todo = {}, [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in out:
                out[child] = starts[child]
                todo.append(child)
    return out


def _shm_dev() -> int | None:
    try:
        return os.stat(SHM).st_dev
    except OSError:
        return None


def shm_inodes(pid: int, dev: int | None = None) -> set[int]:
    """Inodes of the ``/dev/shm`` files process ``pid`` maps or holds open, by inode rather than name: a
    POSIX semaphore is created under a temporary name, mapped, then linked to its real name (glibc), so the
    mapping names a file that no longer exists while its inode is the semaphore's."""
    dev = _shm_dev() if dev is None else dev
    inodes: set[int] = set()
    if dev is None:
        return inodes
    here = f"{os.major(dev):02x}:{os.minor(dev):02x}"
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                fields = line.split(None, 5)
                if len(fields) == 6 and fields[3] == here and fields[5].startswith(SHM + "/"):
                    inodes.add(int(fields[4]))
    except (OSError, ValueError):
        pass
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        fds = []
    for fd in fds:
        try:
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if st.st_dev == dev:
            inodes.add(st.st_ino)
    return inodes


def _listing() -> dict[str, int]:
    """``{name: inode}`` of the plain files in ``/dev/shm``."""
    out: dict[str, int] = {}
    try:
        names = os.listdir(SHM)
    except OSError:
        return out
    for name in names:
        try:
            st = os.lstat(os.path.join(SHM, name))
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out[name] = st.st_ino
    return out


def _live_pids() -> set[int]:
    return {int(n) for n in os.listdir("/proc") if n.isdigit() and (_proc(int(n)) or (0, 0, "X"))[2] not in ("Z", "X")}


def shm_names(pids, listing: dict[str, int] | None = None) -> set[str]:
    """The ``/dev/shm`` entries the processes ``pids`` map or hold open, or whose name carries one of their
    pids (joblib's and torch's naming)."""
    listing = _listing() if listing is None else listing
    dev = _shm_dev()
    inodes: set[int] = set()
    pids = set(pids)
    for pid in pids:
        inodes |= shm_inodes(pid, dev)
    names = {name for name, ino in listing.items() if ino in inodes}
    for name in listing:
        m = _PID_NAMED.match(name)
        if m and int(m.group(1)) in pids:
            names.add(name)
    return names


def in_use() -> set[str]:
    """``/dev/shm`` entries that a live process maps or holds open, or whose name carries a live pid."""
    return shm_names(_live_pids())


def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _write_record(path: str, record: dict[str, Any]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({**record, "segments": sorted(record["segments"])}, fh)
    os.replace(tmp, path)


def _read_record(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as fh:
            rec = json.load(fh)
        rec["segments"] = set(rec.get("segments") or [])
        rec["processes"] = {int(p): int(s) for p, s in (rec.get("processes") or {}).items()}
        return rec
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _observe(record: dict[str, Any], roots: list[int], me: int, names: set[str] | None = None) -> bool:
    """Add the live descendants of ``roots`` to ``record``, and those of the /dev/shm entries ``names`` (all
    when None) that the job's processes map, hold or name; whether anything new was seen."""
    before = (len(record["processes"]), len(record["segments"]))
    since = record["watchdog"][1]  # the engine's processes start after its watchdog; older ones are not its
    for root in roots:
        record["processes"].update({p: s for p, s in descendants(root).items() if p != me and s >= since})
    if names is None or names:
        job_pid, job_start = record["job"]
        live = {p for p, s in record["processes"].items() if alive(p, s)}
        if alive(job_pid, job_start):
            live.add(job_pid)
        listing = _listing()
        if names is not None:
            listing = {n: ino for n, ino in listing.items() if n in names}
        record["segments"] |= shm_names(live, listing)
    return (len(record["processes"]), len(record["segments"])) != before


def _watch(record: dict[str, Any], record_path: str | None, job: int, me: int, stop) -> None:
    """The watchdog's loop until ``stop()``: the job's processes every :data:`POLL_S`; their maps and open
    files only when new entries appear in /dev/shm (reading the maps of a large GPU process costs tens of
    milliseconds), each new entry tried for :data:`ATTRIBUTE_S` (a segment is mapped just after its name
    appears), then everything once more when the job is gone."""
    known = set(_listing())
    pending: dict[str, float] = {}
    while not stop():
        now = time.monotonic()
        listing = set(_listing())
        pending.update((n, now) for n in listing - known)
        known = listing | set(pending)
        if _observe(record, [job], me, set(pending)) and record_path:
            _write_record(record_path, record)
        pending = {n: t for n, t in pending.items()
                   if n in listing and n not in record["segments"] and now - t < ATTRIBUTE_S}
        time.sleep(POLL_S)


def clean(record: dict[str, Any], path: str, kill: bool) -> list[str]:
    """Remove what a finished or dead job's record lists; returns the /dev/shm names removed.

    ``kill``: SIGKILL the recorded processes still alive first (a dead job's). Then, once they are gone (at
    most :data:`EXIT_WAIT_S`), each recorded segment that is ours, a plain file, and that no live process
    maps or holds is removed, and the scratch folder (a folder of ours, never ``/``). A segment some other
    live process maps or holds is not the job's to remove (the job only attached to it) and is dropped from
    the record; the record is removed, or rewritten with the segments a recorded process that would not die
    still holds (a later sweep retries).
    """
    procs = record["processes"]
    if kill:
        for pid, started in procs.items():
            if alive(pid, started):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    deadline = time.monotonic() + EXIT_WAIT_S
    while any(alive(p, s) for p, s in procs.items()) and time.monotonic() < deadline:
        time.sleep(0.05)
    listing = _listing()
    existing = {n for n in record["segments"] if _SHM_NAME.match(n) and n in listing}
    used = shm_names(_live_pids(), listing) if existing else set()
    ours = shm_names({p for p, s in procs.items() if alive(p, s)}, listing) if existing else set()
    removed, left = [], set()
    for name in sorted(existing):
        full = os.path.join(SHM, name)
        try:
            st = os.lstat(full)
            if name in used or st.st_uid != os.getuid() or not stat.S_ISREG(st.st_mode):
                if name in ours:  # held by a process of the job that would not die: a later sweep retries
                    left.add(name)
                continue  # another live process's (or not ours to remove): never touched
            os.unlink(full)
            removed.append(name)
        except FileNotFoundError:
            pass
        except OSError:
            left.add(name)
    scratch = record.get("scratch")
    if scratch and os.path.isabs(scratch) and os.path.dirname(os.path.normpath(scratch)) != os.path.normpath(scratch):
        try:
            st = os.lstat(scratch)
            if st.st_uid == os.getuid() and stat.S_ISDIR(st.st_mode):
                shutil.rmtree(scratch, ignore_errors=True)
        except OSError:
            pass
    try:
        if left:
            _write_record(path, {**record, "segments": left, "processes": procs})
        else:
            os.unlink(path)
    except OSError:
        pass
    return removed


def sweep() -> list[str]:
    """Clean what dead engine jobs of this user left on this node (see the module docstring); returns the
    /dev/shm names removed. A record of another boot is dropped (its segments went with the reboot)."""
    removed: list[str] = []
    here = boot_id()
    for name in sorted(_listing()):
        if not name.startswith(RECORD_PREFIX):
            continue
        path = os.path.join(SHM, name)
        if name.endswith(".tmp"):  # a record being written; left behind when its writer was killed meanwhile
            writer = name.rsplit(".", 2)[-2]
            try:
                if writer.isdigit() and not os.path.exists(f"/proc/{writer}") and os.lstat(path).st_uid == os.getuid():
                    os.unlink(path)
            except OSError:
                pass
            continue
        if not name.endswith(".json"):
            continue
        try:
            if os.lstat(path).st_uid != os.getuid():
                continue
        except OSError:
            continue
        record = _read_record(path)
        if record is None:
            continue
        if record.get("boot_id") != here:
            try:
                os.unlink(path)
            except OSError:
                pass
            continue
        owners = [record.get("job"), record.get("watchdog")]
        if any(o and alive(int(o[0]), int(o[1])) for o in owners):
            continue  # a live job (or its watchdog at work): never touched
        removed += clean(record, path, kill=True)
    return removed


def cleaning() -> bool:
    """Whether a watchdog of this user is cleaning up after its dead job right now (its record says so)."""
    for name in _listing():
        if name.startswith(RECORD_PREFIX) and name.endswith(".json"):
            record = _read_record(os.path.join(SHM, name))
            if record and record.get("watchdog") and alive(*record["watchdog"]) and not alive(*record["job"]):
                return True
    return False


def live_owned() -> set[str]:
    """The ``/dev/shm`` names that an engine still alive owns: the record of every watchdog that still runs, and
    the segments that record lists. They are not left over (their watchdog cleans them when the job ends),
    whoever started them: a second test session on the same machine, say. The test suite's end-of-session check
    (tests/conftest.py) leaves them out. Only the watchdog counts: a record whose watchdog is gone has nobody to
    remove it, however long its job runs (in the suite the job is often the pytest process itself, alive at the
    check), so it is left over."""
    owned: set[str] = set()
    for name in _listing():
        if name.startswith(RECORD_PREFIX) and name.endswith(".json"):
            record = _read_record(os.path.join(SHM, name))
            if record and record.get("watchdog") and alive(*record["watchdog"]):
                owned.add(name)
                owned.update(str(seg) for seg in record.get("segments") or [])
    return owned


class Watchdog:
    """The watchdog of this process (:func:`start`): its pid, its record, and :meth:`finish`."""

    def __init__(self, pid: int, record: str):
        self.pid, self.record = pid, record
        self.started = (_stat(pid) or (0, 0))[1]

    def finish(self, timeout: float = EXIT_WAIT_S + 5) -> bool:
        """The engine is closed: the watchdog waits for the engine's processes to exit, removes the segments
        they left unused and the scratch folder, and exits (it kills nothing). Whether it ended in time."""
        try:
            os.kill(self.pid, signal.SIGUSR1)
        except OSError:
            return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    return True
            except ChildProcessError:  # reaped elsewhere (a SIGCHLD handler): follow it in /proc
                if not alive(self.pid, self.started):
                    return True
            time.sleep(0.05)
        return False


def start(scratch: str | os.PathLike | None = None) -> Watchdog | None:
    """Clean what dead engine jobs left (:func:`sweep`), then fork the watchdog of this process (see the
    module docstring); returns its handle, or None off Linux."""
    if not sys.platform.startswith("linux") or not os.path.isdir("/proc"):
        return None
    import ctypes

    try:
        sweep()
    except Exception as exc:  # noqa: BLE001 - another job's leftovers never stop this job
        print(f"engine cleanup of earlier jobs failed: {exc}", file=sys.stderr, flush=True)
    libc = ctypes.CDLL(None, use_errno=True)
    job = os.getpid()
    job_start = _stat(job)[1]  # type: ignore[index]

    def record_of(watchdog: int) -> str | None:  # one record per watchdog: a job may start several engines
        return os.path.join(SHM, f"{RECORD_PREFIX}{job}-{job_start}-{watchdog}.json") if os.path.isdir(SHM) else None

    pid = os.fork()
    if pid:
        return Watchdog(pid, record_of(pid) or "")
    try:  # the watchdog: no Python-level cleanup of the job's state, only /proc, kill, unlink and rmtree
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.closerange(3, 1024)
        gone, finishing = [], []
        signal.signal(signal.SIGTERM, lambda *_: gone.append(True))
        signal.signal(signal.SIGUSR1, lambda *_: finishing.append(True))
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        me = os.getpid()
        record_path = record_of(me)
        record: dict[str, Any] = {"boot_id": boot_id(), "job": [job, job_start], "watchdog": [me, _stat(me)[1]],
                                  "uid": os.getuid(), "scratch": os.path.abspath(scratch) if scratch else None,
                                  "processes": {}, "segments": set()}
        if record_path:
            _write_record(record_path, record)
        _watch(record, record_path, job, me, lambda: gone or finishing or os.getppid() != job)
        # the job's children were reparented when it died: follow them from what was recorded
        _observe(record, [job, *[p for p, s in record["processes"].items() if alive(p, s)]], me)
        if record_path:
            _write_record(record_path, record)
            clean(record, record_path, kill=not finishing)
        elif scratch and not finishing:
            shutil.rmtree(scratch, ignore_errors=True)
    finally:
        os._exit(0)
