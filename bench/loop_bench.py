"""The developer loop: `thinkprobe --help` start-up and the fast test selection (`pytest -m fast`).

    .venv/bin/python bench/loop_bench.py              # both
    .venv/bin/python bench/loop_bench.py --no-tests   # start-up only (seconds)

Start-up: median wall time of 15 runs of `python -m thinkprobe.cli --help` and of importing
`thinkprobe.trajectories.sampling`, beside a bare `python -c pass` (the interpreter's own share), the heavy
libraries the help imports (none expected) and the sources codedeps parses on import (none expected: code
hashes are derived when first asked for). The test loop:
wall and CPU seconds of `pytest -m fast -n auto --dist loadfile -q` (the loop docs/development.md
documents), the number of tests run, and the machine's load average before and after (the figures are
only comparable on an idle machine).
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from table import print_table  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "numpy", "scipy", "matplotlib", "networkx", "onnxruntime", "torch", "vllm", "yaml")


def median_wall(cmd: list[str], runs: int = 15) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=REPO)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    env_py = [sys.executable]
    rows = [("load average before (1 min)", f"{os.getloadavg()[0]:.1f}")]
    rows.append(("python -c pass, median (s)", f"{median_wall(env_py + ['-c', 'pass']):.3f}"))
    rows.append(("thinkprobe --help, median (s)", f"{median_wall(env_py + ['-m', 'thinkprobe.cli', '--help']):.3f}"))
    rows.append(("import thinkprobe.trajectories.sampling, median (s)",
                 f"{median_wall(env_py + ['-c', 'import thinkprobe.trajectories.sampling']):.3f}"))
    parsed = subprocess.run(env_py + ["-c", "import thinkprobe.cli, thinkprobe.trajectories.sampling; "
                                      "from thinkprobe import codedeps; print(codedeps._info.cache_info().currsize)"],
                            capture_output=True, text=True, check=True, cwd=REPO).stdout.strip()
    rows.append(("sources parsed by codedeps on import", parsed))
    probe = ("import sys; from thinkprobe.cli import build_parser; build_parser().format_help(); "
             f"print(','.join(m for m in {HEAVY!r} if m in sys.modules) or 'none')")
    heavy = subprocess.run(env_py + ["-c", probe], capture_output=True, text=True, check=True, cwd=REPO).stdout.strip()
    rows.append(("heavy libraries imported by --help", heavy))
    if "--no-tests" not in sys.argv:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(env_py + ["-m", "pytest", "-m", "fast", "-n", "auto", "--dist", "loadfile", "-q",
                                        "-p", "no:cacheprovider"], capture_output=True, text=True, cwd=REPO)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        summary = (re.findall(r"^=*\s*(\d+ passed.*?) in [\d.]+s", proc.stdout, re.M) or [proc.stdout[-200:]])[-1]
        rows += [("pytest -m fast: result", summary), ("pytest -m fast: wall (s)", f"{wall:.1f}"),
                 ("pytest -m fast: CPU, all processes (s)", f"{cpu:.1f}"),
                 ("cores", str(os.cpu_count())),
                 ("load average after (1 min)", f"{os.getloadavg()[0]:.1f}")]
    print_table(rows)


if __name__ == "__main__":
    main()
