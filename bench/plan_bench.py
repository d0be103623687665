"""Study planner benchmark: planner wall time on the two paper configs, and (with --run-default) its token
estimate against the tokens a real run of the embedded default generates.

    .venv/bin/python bench/plan_bench.py                  # planner wall time (target: a few seconds each)
    .venv/bin/python bench/plan_bench.py --model-cache DIR  # the hub cache holding the four benchmarks
    .venv/bin/python bench/plan_bench.py --run-default    # + run the default's LLM stages (vLLM on CPU, minutes)

The trajectories config names its benchmarks by hub id: the planner reads them from the hub cache given with
--model-cache (filled by `snakemake fetch_datasets`), else from one built in a temporary folder, in the hub's
layout, from the shared corpus's benchmark files (tests/hub_data.py; --corpus, default the corpus folder
beside the checkout, where tests/conftest.py finds it);
the planner wall time includes reading them. The run uses the embedded default without its imported traces (collection + trajectory sampling only), in a
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
    from thinkprobe.study.planner import plan_study, study_config
    from thinkprobe.study.study_checks import check_study

    ap = argparse.ArgumentParser()
    ap.add_argument("--run-default", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model-cache", default="", help="hub cache holding the trajectories config's datasets")
    ap.add_argument("--corpus", default=str(repo.parent / "shared" / "corpus"),
                    help="the shared corpus, whose benchmark files fill a temporary cache when --model-cache is not given")
    args = ap.parse_args()
    scratch = tempfile.TemporaryDirectory(prefix="plan-bench-data-")
    cache = args.model_cache
    if not cache:
        from tests.hub_data import build_cache

        cache = str(Path(scratch.name) / "cache")
        build_cache(Path(args.corpus) / "benchmarks", Path(cache), Path(scratch.name) / "repos")
    data = Path(scratch.name) / "data-cache.yaml"
    data.write_text(f"resources: {{model_cache: {cache!r}}}\n")
    rows = []
    from thinkprobe.generate.questions import read_question_set

    specs = study_config([repo / "config" / "trajectories-paper.yaml", data], repo)["question_sets"]
    reads = []
    for _ in range(args.repeats):  # what every parse of the study pays for its hub datasets (pyarrow, offline)
        t0 = time.perf_counter()
        n = sum(len(read_question_set({**specs[q], "name": q}).questions) for q in ("gsm8k", "svamp", "math", "arc"))
        reads.append(time.perf_counter() - t0)
    rows.append((f"trajectories-paper: read its 4 hub datasets, {n:,} questions (s, best of {args.repeats})",
                 f"{min(reads):.2f}"))
    for name in ("thinkprobe-paper", "trajectories-paper"):
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            config = study_config([repo / "config" / f"{name}.yaml", data], repo)
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
