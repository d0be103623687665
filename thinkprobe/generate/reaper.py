"""Engine processes die with their job: a watchdog kills them, and removes their socket folder, when the job
process dies, however it dies (SIGKILL included).

vLLM starts its engine core (and, on GPUs, workers) as child processes that hold the model (3 GB for a small
model on CPU, the GPU memory on a node). A job killed with SIGKILL (a SLURM time limit, the OOM killer, a user)
cannot clean up: the children were reparented and kept running, competing with the next job, and each start
left its ZeroMQ socket files in the temporary folder. :func:`start` forks a small watchdog before the engine
starts:

* it asks the kernel for a signal when its parent (the job) dies (``PR_SET_PDEATHSIG``, Linux);
* meanwhile it records the job's descendants twice a second (pid and start time, from ``/proc``);
* when the job is gone, it SIGKILLs every recorded process still alive with the same start time (never a
  reused pid), removes the scratch folder given to it, and exits.

The engine's sockets go to that scratch folder (``VLLM_RPC_BASE_PATH``, set by the vLLM backend), so nothing
is left in the shared temporary folder either. On other systems than Linux :func:`start` does nothing.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of a process, from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    return int(fields[1]), int(fields[19])


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


def start(scratch: str | os.PathLike | None = None) -> int | None:
    """Fork the watchdog of this process (see the module docstring); returns its pid, or None off Linux."""
    if not sys.platform.startswith("linux") or not os.path.isdir("/proc"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    job = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:  # the watchdog: no Python-level cleanup of the job's state, only /proc, kill and rmtree
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.closerange(3, 1024)
        gone = []
        signal.signal(signal.SIGTERM, lambda *_: gone.append(True))
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        seen: dict[int, int] = {}
        me = os.getpid()
        while not gone and os.getppid() == job:
            seen.update({p: s for p, s in descendants(job).items() if p != me})
            time.sleep(0.5)
        seen.update({p: s for p, s in descendants(job).items() if p != me})
        for p, started in seen.items():
            st = _stat(p)
            if st and st[1] == started:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    finally:
        os._exit(0)
