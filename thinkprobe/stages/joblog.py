"""The log of a workflow job: everything the job writes to stderr, and its traceback when it fails.

Rule scripts run their whole body inside :func:`job_log`::

    from thinkprobe.stages.joblog import job_log

    with job_log(snakemake.log[0]) as log:
        from thinkprobe.stages.graph import graph_shard
        counts = graph_shard(...)
        print(f"graph: {counts}", file=log)

Both ``sys.stderr`` and the process's file descriptor 2 point at the log while the block runs, so Python
warnings, ``logging`` output and what native libraries (onnxruntime, torch) print all land in it. When the
block raises, the traceback is written to the log *before* the log is closed and stderr restored; the
exception then propagates, so the job still fails and Snakemake names the log. (Swapping ``sys.stderr``
inside ``with open(log)`` loses the traceback: Python prints it after the block, to a closed file.)

:func:`log_timing` adds one ``TIMING`` line to the log: where the job's time went (measured by
:class:`~thinkprobe.timing.JobClock`), and :func:`~thinkprobe.generate.gpu_guard.require_gpus` fails a job that asked
for GPUs it cannot use, before it loads anything.

Importing this module (the first import of every rule script) also drops from ``sys.path`` the folders that
Snakemake's script preamble copies from the process that launched the job (:mod:`thinkprobe.own_env`), so
that everything the job imports afterwards comes from the environment its rule names.

This module is the job's plumbing and nothing else: every public name it defines or imports is what a rule
script uses only to run its job, never to make an output, so the rules' code hashes leave it out
(:func:`thinkprobe.codedeps.job_log_entries`, read from this file). A name needed here for another reason is
imported under a leading underscore.

While the block runs, SIGTERM (SLURM sends it ``resources.term_before_s`` seconds before a job's wall time,
and on a preemption or ``scancel``) raises :class:`_Terminated`: the job stops where it is, its ``finally``
blocks close the engine, and it exits with 143 keeping every unit it stored (collection and sampling store
each finished chunk at once).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import IO, Iterator

from ..own_env import use_own_environment as _use_own_environment

_use_own_environment()  # before anything else is imported: the job's own environment only (thinkprobe.own_env)

from ..generate.gpu_guard import require_gpus  # noqa: F401 - plumbing of a GPU job's script
from ..timing import JobClock


class _Terminated(SystemExit):
    """The job got SIGTERM: SLURM's warning before its wall time ends (``resources.term_before_s``), a
    preemption or a cancel. Raised in the job's main thread wherever it is, so that ``finally`` blocks run (the
    engine is closed, its workers end) and the job exits at once with 143 (128 + SIGTERM): the units it stored
    (each finished chunk, atomically) stay, the chunk in flight is dropped, and its rerun resumes from the store."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


def _on_sigterm(signum, frame):
    raise _Terminated()


@contextlib.contextmanager
def _sigterm_ends_the_job() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`_Terminated` (Python's default would kill the process without
    running any ``finally``); the previous handler is restored after. Only the main thread can do this."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def job_log(path: str | os.PathLike, mode: str = "w") -> Iterator[IO[str]]:
    """Send stderr (Python and native) to ``path`` for the block; a failure's traceback goes in the log."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    log = open(path, mode, encoding="utf-8", errors="backslashreplace", buffering=1)
    old_stderr = sys.stderr
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    try:
        saved_fd = os.dup(2)
    except OSError:
        saved_fd = None
    if saved_fd is not None:
        os.dup2(log.fileno(), 2)
    sys.stderr = log
    try:
        with _sigterm_ends_the_job():
            yield log
    except BaseException as exc:
        if isinstance(exc, _Terminated):
            log.write("job: SIGTERM (SLURM's warning before the wall time, a preemption or a cancel): stopped; "
                      "what it stored stays, and its rerun resumes from there\n")
        if not isinstance(exc, (SystemExit, GeneratorExit)) or (isinstance(exc, SystemExit) and exc.code):
            log.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        raise
    finally:
        try:
            log.flush()
        finally:
            sys.stderr = old_stderr
            if saved_fd is not None:
                os.dup2(saved_fd, 2)
                os.close(saved_fd)
            log.close()


def log_timing(log: IO[str], stage: str, clock: JobClock, units: int) -> None:
    """One JSON line in the job's log: where the job's time went (read by bench/workflow_bench.py)."""
    log.write("TIMING " + json.dumps({"stage": stage, **clock.as_dict(units)}) + "\n")
