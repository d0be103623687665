"""Study planner benchmark: planner wall time on the two paper configs, and (with --run-default) its token
estimate against the tokens a real run of the embedded default generates.

    .venv/bin/python bench/plan_bench.py                  # planner wall time (target: a few seconds each)
    .venv/bin/python bench/plan_bench.py --run-default    # + run the default's LLM stages (vLLM on CPU, minutes)

The trajectories config reads its benchmarks from ../shared/corpus (the shared corpus beside the checkout);
the run uses the embedded default without its imported traces (collection + trajectory sampling only), in a
temporary folder, and counts generated tokens from the provenance (tests/test_plan_tokens.py does the same).
"""

from __future__ import annotations

if __name__ == "__main__":  # vLLM spawns workers that re-import this file
    import argparse
    import subprocess
    import sys
    import tempfile
    import time
    from pathlib import Path

    here = Path(__file__).resolve().parent
    repo = here.parent
    sys.path.insert(0, str(here))
    sys.path.insert(0, str(repo))
    from table import print_table

    from tests.test_plan_tokens import generated_tokens
    from tests.workflow_helpers import default_config, env_for, make_workdir
    from thinkprobe.generate.budget import plan_study, study_config
    from thinkprobe.generate.study_checks import check_study

    ap = argparse.ArgumentParser()
    ap.add_argument("--run-default", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for name in ("thinkprobe-paper", "trajectories-paper"):
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            config = study_config([repo / "config" / f"{name}.yaml"], repo)
            check_study(config, repo)
            plan = plan_study(config, repo)
            times.append(time.perf_counter() - t0)
        total = plan.total()
        rows += [(f"{name}: planner wall (s, best of {args.repeats})", f"{min(times):.2f}"),
                 (f"{name}: jobs / SLURM jobs", f"{total.jobs:,} / {total.slurm_jobs:,}"),
                 (f"{name}: tokens expected", f"{total.tokens / 1e6:,.1f} M"),
                 (f"{name}: GPU hours", f"{total.gpu_hours:,.1f}")]
    if args.run_default:
        with tempfile.TemporaryDirectory(prefix="plan-bench-") as tmp:
            cfg = default_config()
            cfg["inputs"] = []
            wd = make_workdir(Path(tmp) / "wd", cfg)
            before = plan_study(study_config([], wd), wd)
            targets = ["results/collect/smollm2/open_demo/c0000.json",
                       "results/continuations/smollm2/gsm8k_demo/b0000.json"]
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory",
                            str(wd), "--cores", "2", *targets], check=True, env=env_for(wd), cwd=wd,
                           capture_output=True)
            wall = time.perf_counter() - t0
            after = plan_study(study_config([], wd), wd)
            actual = generated_tokens(wd / "results")
        for rule in ("collect", "traj_sample"):
            rows += [(f"default {rule}: generated tokens", f"{actual[rule]:,}"),
                     (f"default {rule}: estimate before the run (ratio)",
                      f"{before.tokens(rule):,.0f} ({before.tokens(rule) / actual[rule]:.2f})"),
                     (f"default {rule}: estimate after collection (ratio)",
                      f"{after.tokens(rule):,.0f} ({after.tokens(rule) / actual[rule]:.2f})")]
        rows.append(("default run wall (s)", f"{wall:.0f}"))
    print_table(rows)
