"""Planning at study scale: `snakemake -n` of both paper configs and of the one-model shape through the production
SLURM profile, wall and CPU time against the number of units, with the number of jobs it schedules and the
planner's count beside it (`thinkprobe plan`: its jobs, its analysis jobs and GPU-hours).

    .venv/bin/python bench/dag_bench.py                        # 1k, 10k, 75k units and each config's full size
    .venv/bin/python bench/dag_bench.py --configs trajectories-paper one-model   # the two study shapes (issue 32)
    .venv/bin/python bench/dag_bench.py --units 1000 10000     # chosen sizes only
    .venv/bin/python bench/dag_bench.py --target trajectories  # the trajectories paper's documented target too
    .venv/bin/python bench/dag_bench.py --units --configs one-model-imported sixteen-models-imported  # imported traces

Each config is the shipped one with only its question sets' sources replaced by local files (tests/paper_studies.py:
the corpus's benchmark files when present, else generated files of the same size); scaled sizes cut the trajectory
sets with `limit` and give the ThinkProbe study generated open questions. `one-model` is the other study shape
(issue 32, item 6): the ThinkProbe paper's first model alone on N generated questions, 1 run (tests/paper_studies.py:
one_model_config), so 16 models x 4,678 questions and 1 model x 75,000 questions are benched side by side;
`one-model-imported` and `sixteen-models-imported` are the same two shapes with their traces already on disk
(tests/paper_studies.py: imported_config; 1 x 75,000 and 16 x 4,688 units), planned through `import_traces`. Every run is a fresh working directory
(nothing collected yet: every job is scheduled), through profiles/slurm with `--sdm env-modules` (this machine has
no conda; no rule loads a module, so the jobs would run in the caller's environment). Target (issue 23): the
trajectories paper at full size (74,848 units) in at most 120 s here.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from table import print_table  # noqa: E402

from tests.paper_studies import FULL_UNITS, paper_study  # noqa: E402


ANALYSIS_RULES = ("segment", "graph", "metrics")


def rule_counts(out: str) -> dict[str, int]:
    """The dry run's job stats table: rule -> jobs."""
    table = out.split("Job stats:", 1)[-1].split("\n\n", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M)}


def planned(workdir: Path, study: Path) -> tuple[int, int, float]:
    """The planner's count for the same study (thinkprobe.study.planner, what `thinkprobe plan` shows): every job,
    the analysis jobs, and GPU-hours."""
    from thinkprobe.study.planner import plan_study, study_config

    plan = plan_study(study_config([study], workdir), workdir)
    analysis = sum(r.jobs for r in plan.by_rule() if r.rule == "analysis")
    total = plan.total()
    return total.jobs, analysis, total.gpu_hours


def dry_run(workdir: Path, study: Path, target: str | None = None) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds (the Snakemake process and its children), jobs scheduled, and the output."""
    cmd = [sys.executable, "-m", "snakemake", *([target] if target else []), "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(workdir), "--profile", str(REPO / "profiles" / "slurm"), "--sdm", "env-modules", "-n",
           "--configfile", str(study)]
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=env, timeout=3600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"dry run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    m = re.search(r"^total\s+(\d+)\s*$", proc.stdout, re.M)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, int(m.group(1)) if m else 0, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, nargs="*", default=[1000, 10000, 75000])
    ap.add_argument("--configs", nargs="*", default=["trajectories-paper", "one-model", "thinkprobe-paper"])
    ap.add_argument("--target", default=None, help="also time this target of the trajectories paper at full size")
    args = ap.parse_args()
    rows = [("load average at start (1, 5, 15 min)", " ".join(f"{x:.2f}" for x in os.getloadavg())),
            ("CPUs", str(os.cpu_count()))]
    with tempfile.TemporaryDirectory(prefix="dag-bench-") as tmp:
        for name in args.configs:
            full = FULL_UNITS[name]  # a size within 2% of the full study is the full study
            sizes = [*sorted(u for u in args.units if u < 0.98 * full), None,
                     *sorted(u for u in args.units if u > 1.02 * full)]
            for units in sizes:
                wd = Path(tmp) / f"{name}-{units or 'full'}"
                study, n = paper_study(wd, name, units)
                wall, cpu, jobs, out = dry_run(wd, study)
                counts = rule_counts(out)
                plan_jobs, plan_analysis, gpu_hours = planned(wd, study)
                label = "full size" if units is None else f"~{units:,}"
                rows.append((f"{name} {label}: units / jobs scheduled", f"{n:,} / {jobs:,}"))
                rows.append((f"{name} {label}: import_traces jobs", f"{counts.get('import_traces', 0):,}"))
                rows.append((f"{name} {label}: analysis jobs, dry run / planner",
                             f"{sum(counts.get(r, 0) for r in ANALYSIS_RULES):,} / {plan_analysis:,}"))
                rows.append((f"{name} {label}: planner's jobs (all) / GPU-hours", f"{plan_jobs:,} / {gpu_hours:,.0f}"))
                rows.append((f"{name} {label}: dry-run wall / CPU (s)", f"{wall:,.1f} / {cpu:,.1f}"))
                rows.append((f"{name} {label}: wall ms per unit / per job", f"{1000 * wall / n:.2f} / "
                                                                           f"{1000 * wall / max(jobs, 1):.2f}"))
                print(name, label, " | ".join(v for _, v in rows[-6:]), file=sys.stderr, flush=True)  # progress
        if args.target:
            wd = Path(tmp) / "target"
            study, n = paper_study(wd, "trajectories-paper")
            wall, cpu, jobs, _ = dry_run(wd, study, args.target)
            rows.append((f"trajectories-paper full size, target {args.target}: jobs", f"{jobs:,}"))
            rows.append((f"trajectories-paper full size, target {args.target}: wall / CPU (s)", f"{wall:,.1f} / {cpu:,.1f}"))
    rows.append(("load average at end (1, 5, 15 min)", " ".join(f"{x:.2f}" for x in os.getloadavg())))
    print_table(rows)


if __name__ == "__main__":
    main()
