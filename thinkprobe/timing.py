"""Where a job's time goes: process start-up and imports, model loading, and the work itself.

The workflow's benchmark compares this per-unit overhead with the per-unit work, so every rule script
records a :class:`JobClock` in the provenance of what it writes.
"""

from __future__ import annotations

import os
import time


def process_age() -> float:
    """Seconds since this process started (Linux ``/proc``; 0.0 where that is unavailable)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


class JobClock:
    """Wall and CPU seconds of one job: ``startup`` (process start to the clock's creation), then phases.

    CPU time counts every thread of the process (the encoder runs several), so ``cpu`` is the
    resource a cluster charges and ``wall`` what a user waits.
    """

    def __init__(self) -> None:
        self.startup = process_age()
        self.startup_cpu = time.process_time()
        self._last = time.perf_counter()
        self._last_cpu = time.process_time()
        self.phases: dict[str, float] = {}
        self.phases_cpu: dict[str, float] = {}

    def mark(self, phase: str) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        self.phases[phase] = self.phases.get(phase, 0.0) + now - self._last
        self.phases_cpu[phase] = self.phases_cpu.get(phase, 0.0) + cpu - self._last_cpu
        self._last, self._last_cpu = now, cpu

    def as_dict(self, units: int) -> dict[str, float | int]:
        out: dict[str, float | int] = {"startup_s": round(self.startup, 4), "startup_cpu_s": round(self.startup_cpu, 4)}
        for k, v in self.phases.items():
            out[f"{k}_s"] = round(v, 4)
            out[f"{k}_cpu_s"] = round(self.phases_cpu[k], 4)
        out["units"] = units
        return out
