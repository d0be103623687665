"""Collection throughput: output tokens/s through the `collect` rule vs the engine's raw batched rate.

    .venv/bin/python bench/collect_bench.py [--questions 8] [--runs 2] [--max-tokens 128]

Both sides generate the same units (SmolLM2 with vLLM on this machine's CPU; the builtin open-ended
questions; prompted CoT; the same seeds, prompts and max_tokens) in the same run:

* raw: one engine, its start timed, then ONE ``engine.generate`` call over every prompt (after a one-token
  warm-up call, which the rule's engine does not get);
* rule: Snakemake runs the ``collect`` rule for the same units in a scratch working directory (its own engine
  start, inside the job); the job's manifest reports the engine start, the generation time and the output
  tokens (looping resamples included).

The ratio rule/raw compares generation rates (engine starts are reported apart); target >= 0.8. Peak memory is
the largest summed RSS of this process's tree (raw engine) and of the Snakemake job's tree (rule), sampled
every 0.2 s.
"""

from __future__ import annotations

if __name__ == "__main__":  # vLLM spawns workers that re-import this file
    import argparse
    import json
    import os
    import subprocess
    import sys
    import tempfile
    import threading
    import time
    from pathlib import Path

    import psutil
    import yaml

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from table import print_table

    from thinkprobe.generate.unit_store import build_prompt, _question
    from thinkprobe.generate.engine import SamplingSpec, open_engine
    from thinkprobe.generate.collection_jobs import list_collection_jobs

    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=128)
    args = ap.parse_args()
    repo = Path(__file__).resolve().parents[1]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    model = {"backend": "vllm", "path": "smollm2", "device": "cpu", "reasoning": "prompted", "prompt_variant": "cot",
             "think_prefill": True, "mem_mb": 6000, "runtime": 60,
             "engine": {"max_model_len": 2048, "block_size": 32, "max_num_batched_tokens": 32768,
                        "kv_cache_space_gb": 1}}
    collection = {"jobs": [{"model": "smollm2", "question_set": "bench"}], "runs": args.runs, "seed": 0,
                  "batch_questions": args.questions, "chunk_prompts": 64,
                  "sampling": {"temperature": 0.6, "top_p": 0.95, "max_tokens": args.max_tokens, "stop": []},
                  "loop_detection": {"window": 3, "min_repeats": 3, "min_line_chars": 8, "max_retries": 3}}
    config = {"models": {"smollm2": model}, "question_sets": {"bench": {"source": "builtin", "limit": args.questions}},
              "collection": collection}
    plan = list_collection_jobs(config)
    params = plan.batch_params("smollm2", "bench", "c0000", collection)

    class Peak:
        def __init__(self, pid):
            self.pid, self.peak, self.stop = pid, 0, False
            self.thread = threading.Thread(target=self.run, daemon=True)
            self.thread.start()

        def run(self):
            while not self.stop:
                try:
                    root = psutil.Process(self.pid)
                    procs = [root, *root.children(recursive=True)]
                    self.peak = max(self.peak, sum(p.memory_info().rss for p in procs if p.is_running()))
                except psutil.Error:
                    pass
                time.sleep(0.2)

        def done(self):
            self.stop = True
            self.thread.join()
            return self.peak / 2**30

    # ---- raw engine rate
    peak = Peak(os.getpid())
    t0 = time.perf_counter()
    engine = open_engine({"name": "smollm2", **model})
    raw_start = time.perf_counter() - t0
    prompts = [build_prompt(engine, _question(u["question"]), "cot", {"name": "smollm2", **model}) for u in params["units"]]
    specs = [SamplingSpec(n=1, temperature=0.6, top_p=0.95, max_tokens=args.max_tokens, seed=u["seed"])
             for u in params["units"]]
    engine.generate(prompts[:1], [SamplingSpec(max_tokens=1, seed=0)])
    t0 = time.perf_counter()
    gens = engine.generate(prompts, specs)
    raw_s = time.perf_counter() - t0
    raw_tokens = sum(len(g.completions[0].token_ids) for g in gens)
    cached = sum(g.cached_tokens or 0 for g in gens)
    prompt_tokens = sum(g.prompt_tokens for g in gens)
    engine.close()
    raw_peak = peak.done()

    # ---- the same units through the rule
    with tempfile.TemporaryDirectory(prefix="collect-bench-") as tmp:
        wd = Path(tmp)
        base = yaml.safe_load((repo / "config" / "config.yaml").read_text())
        base["models"] = {**(base.get("models") or {}), **config["models"]}
        base["question_sets"] = {**(base.get("question_sets") or {}), **config["question_sets"]}
        base["collection"] = collection
        if "trajectories" in base:
            base["trajectories"].update(enabled=False, models=[])
        (wd / "config").mkdir()
        (wd / "config" / "config.yaml").write_text(yaml.safe_dump(base, sort_keys=False))
        os.symlink(repo / "examples", wd / "examples")
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory", str(wd),
               "--cores", "2", "results/collect/smollm2/bench/c0000.json"]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=wd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        peak = Peak(proc.pid)
        _, err = proc.communicate()
        rule_wall = time.perf_counter() - t0
        rule_peak = peak.done()
        if proc.returncode != 0:
            sys.exit(f"snakemake failed:\n{err[-3000:]}")
        stats = json.loads((wd / "results/collect/smollm2/bench/c0000.json").read_text())["stats"]

    raw_rate = raw_tokens / raw_s
    rule_rate = stats["completion_tokens"] / stats["generate_s"]
    print_table([
        ("units (questions x runs)", f"{len(prompts)} ({args.questions} x {args.runs}), max_tokens {args.max_tokens}"),
        ("prompt tokens / served from prefix cache (raw)", f"{prompt_tokens} / {cached}"),
        ("raw: engine start (s)", f"{raw_start:.1f}"),
        ("raw: output tokens", f"{raw_tokens}"),
        ("raw: generate (s)", f"{raw_s:.2f}"),
        ("raw: output tokens/s", f"{raw_rate:.1f}"),
        ("raw: peak RSS, process tree (GiB)", f"{raw_peak:.2f}"),
        ("rule: engine start in the job (s)", f"{stats['engine_start_s']:.1f}"),
        ("rule: output tokens (incl. resamples)", f"{stats['completion_tokens']} in {stats['calls']} engine call(s)"),
        ("rule: generate (s)", f"{stats['generate_s']:.2f}"),
        ("rule: output tokens/s", f"{rule_rate:.1f}"),
        ("rule: Snakemake wall (s)", f"{rule_wall:.1f}"),
        ("rule: end-to-end output tokens/s (incl. start)", f"{stats['completion_tokens'] / rule_wall:.1f}"),
        ("rule: peak RSS, job tree (GiB)", f"{rule_peak:.2f}"),
        ("ratio rule/raw (target >= 0.8)", f"{rule_rate / raw_rate:.2f}"),
    ])
