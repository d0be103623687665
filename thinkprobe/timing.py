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
    """Marks in one job: ``startup`` (process start to the first mark), then named phases."""

    def __init__(self) -> None:
        self.startup = process_age()
        self._last = time.perf_counter()
        self.phases: dict[str, float] = {}

    def mark(self, phase: str) -> None:
        now = time.perf_counter()
        self.phases[phase] = self.phases.get(phase, 0.0) + now - self._last
        self._last = now

    def as_dict(self, units: int) -> dict[str, float | int]:
        return {"startup_s": round(self.startup, 4), **{f"{k}_s": round(v, 4) for k, v in self.phases.items()},
                "units": units}
