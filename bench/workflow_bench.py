"""Benchmark of the workflow at study scale: 7 models x 200 questions x 3 runs = 4,200 units.

Traces are resampled (seeded) from the 500 reasoning traces of ../shared/corpus/steering-thinking-llms, or
from the bundled examples when the corpus is absent. Prints one table:

* dry-run wall time of the whole study (fresh results folder);
* number of SLURM jobs the study would submit through profiles/slurm;
* per-unit overhead (process start, imports, model load) against per-unit work, from the TIMING line every
  analysis job writes to its log, after running the first --questions questions (all 200 by default);
* the no-op rerun wall time (everything up to date), when all 200 questions were run.

    .venv/bin/python bench/workflow_bench.py [--questions 200] [--cores 2] [--corpus ../shared/corpus]

Targets (issue "Snakemake workflow"): dry run <= 30 s, no-op rerun <= 30 s, <= 200 SLURM jobs,
overhead <= 25% of work.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from table import print_table  # noqa: E402
MODELS, QUESTIONS, RUNS = 7, 200, 3


def source_texts(corpus: Path) -> tuple[list[str], str]:
    folder = corpus / "steering-thinking-llms" / "compare-base-reasoning" / "results" / "vars"
    texts = [row["response"] for f in sorted(folder.glob("reasoning_comparison_deepseek-r1-distill-*.json"))
             for row in json.loads(f.read_text())]
    if texts:
        return texts, f"{len(texts)} corpus reasoning traces"
    demo = REPO / "examples" / "traces" / "demo.jsonl"
    return [json.loads(line)["text"] for line in demo.read_text().splitlines()], "the 12 bundled example traces"


def make_inputs(path: Path, texts: list[str]) -> None:
    rng = random.Random(42)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for m in range(MODELS):
            for q in range(QUESTIONS):
                for r in range(1, RUNS + 1):
                    fh.write(json.dumps({"id": f"m{m}-q{q:03d}-r{r}", "model": f"model_{m}",
                                         "question_id": f"q{q:03d}", "run": r, "domain": f"domain_{q % 10}",
                                         "text": rng.choice(texts)}) + "\n")


def workdir(root: Path, inputs: Path, questions: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config").mkdir(exist_ok=True)
    cfg = {"inputs": [{"path": str(inputs), "question_set": "open200"}]}
    if questions < QUESTIONS:
        subset = root / "subset.jsonl"
        keep = {f"q{q:03d}" for q in range(questions)}
        subset.write_text("".join(line + "\n" for line in inputs.read_text().splitlines()
                                  if json.loads(line)["question_id"] in keep))
        cfg["inputs"][0]["path"] = str(subset)
    import yaml

    (root / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    return root


def snakemake(wd: Path, *args: str) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(wd), *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=wd)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"workflow_bench: {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return wall, proc.stdout + proc.stderr


def timings(wd: Path) -> dict[str, float]:
    totals = {"units": 0, "overhead_s": 0.0, "work_s": 0.0, "overhead_cpu_s": 0.0, "work_cpu_s": 0.0, "jobs": 0}
    for log in (wd / "results" / "logs").rglob("*.log"):
        for line in log.read_text().splitlines():
            if not line.startswith("TIMING "):
                continue
            t = json.loads(line[7:])
            totals["jobs"] += 1
            if t["stage"] == "metrics":
                totals["units"] += t["units"]
            for suffix in ("_s", "_cpu_s"):
                over = t.get(f"startup{suffix}", 0) + t.get(f"imports{suffix}", 0) + t.get(f"model_load{suffix}", 0)
                work = t.get(f"read{suffix}", 0) + t.get(f"work{suffix}", 0) + t.get(f"write{suffix}", 0)
                totals[f"overhead{suffix}"] += over
                totals[f"work{suffix}"] += work
    return totals


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=QUESTIONS, help="questions to run for real (default all 200)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    ap.add_argument("--keep", action="store_true", help="keep bench/work from an earlier run (reuse its results)")
    args = ap.parse_args()

    texts, origin = source_texts(args.corpus)
    inputs = REPO / "bench" / "data" / "study.jsonl"
    make_inputs(inputs, texts)
    base = REPO / "bench" / "work"
    if base.exists() and not args.keep:
        shutil.rmtree(base)

    dry_dir = workdir(base / "dry", inputs, QUESTIONS)
    dry_s, dry_out = snakemake(dry_dir, "-n", "--cores", str(args.cores))
    n_jobs = int(re.search(r"^total\s+(\d+)", dry_out, re.M).group(1))
    # the production profile; no conda on this machine: the caller's environment (docs/cluster.md)
    _, slurm_out = snakemake(dry_dir, "-n", "--profile", str(REPO / "profiles" / "slurm"), "--sdm", "env-modules")
    slurm_jobs = len(re.findall(r"Group job", slurm_out))  # every other rule is a local rule

    run_dir = workdir(base / "run", inputs, args.questions)
    run_s, _ = snakemake(run_dir, "--cores", str(args.cores))
    t = timings(run_dir)
    noop_s = None
    if args.questions == QUESTIONS:
        noop_s, noop_out = snakemake(run_dir, "--cores", str(args.cores))
        assert "Nothing to be done" in noop_out, noop_out[-2000:]

    units = max(t["units"], 1)
    rows = [
        ("study", f"{MODELS} models x {QUESTIONS} questions x {RUNS} runs = {MODELS * QUESTIONS * RUNS} units "
                  f"(traces from {origin})"),
        ("dry run: jobs planned", str(n_jobs)),
        ("dry run wall (s, target <= 30)", f"{dry_s:.1f}"),
        ("SLURM jobs submitted via profiles/slurm (target <= 200)", str(slurm_jobs)),
        ("run: questions / units / analysis jobs", f"{args.questions} / {t['units']} / {t['jobs']}"),
        ("run wall (s)", f"{run_s:.1f}"),
        ("per unit: overhead wall (s)", f"{t['overhead_s'] / units:.4f}"),
        ("per unit: work wall (s)", f"{t['work_s'] / units:.4f}"),
        ("overhead / work, wall (target <= 0.25)", f"{t['overhead_s'] / max(t['work_s'], 1e-9):.3f}"),
        ("per unit: overhead CPU (s)", f"{t['overhead_cpu_s'] / units:.4f}"),
        ("per unit: work CPU (s)", f"{t['work_cpu_s'] / units:.4f}"),
        ("overhead / work, CPU", f"{t['overhead_cpu_s'] / max(t['work_cpu_s'], 1e-9):.3f}"),
        ("no-op rerun wall (s, target <= 30)", f"{noop_s:.1f}" if noop_s is not None else "(needs --questions 200)"),
    ]
    print_table(rows)


if __name__ == "__main__":
    main()
