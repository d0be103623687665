"""Trajectory sampling on CPU with SmolLM2: rule throughput, prefix reuse, forced answers, sequential stopping.

    .venv/bin/python bench/trajectory_bench.py                 # 2 GSM8K items of ../shared/corpus (else the demo set)
    .venv/bin/python bench/trajectory_bench.py --items 3 --n 8 --max-tokens 64
    .venv/bin/python bench/trajectory_bench.py --max-tokens 0       # budget unset: to the end or the context's end

One engine, one process, one run:

1. realized traces: one chain of thought per item, sampled with the `cot` prompt (think prefill, as the
   embedded default's collection does), max ``--trace-tokens`` tokens;
2. raw engine rate: every checkpoint prefix of those traces in ONE ``engine.generate`` call with ``n=N``
   (no planning, no store), sampled tokens / wall seconds;
3. through the rule's code path (``sample_traces``: planning, the resumable store, one part file per trace and
   call, the per-trace documents), same prefixes and parameters; the prefix cache is reset before each pass;
4. prefill computed (prompt tokens - cached tokens) against the sum of all prefix lengths;
5. the forced-answer estimator on the same checkpoints: sampled tokens and wall time against full
   continuations, and the median TV between the two distributions per checkpoint;
6. sequential stopping on the full continuations (the first n of N i.i.d. samples are a sequential sample):
   continuations saved and median / max TV against fixed N;
7. why the full continuations stopped: the shares ended by end-of-sequence, a stop string, the budget and
   the context (the share cut by the budget is what a too-small budget costs: those labels are null).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
CORPUS_GSM8K = ROOT.parent / "shared" / "corpus" / "benchmarks" / "gsm8k" / "test.jsonl"
DEMO = ROOT / "examples" / "questions" / "gsm8k_demo.jsonl"


def _reset_cache(engine) -> None:
    llm = getattr(engine, "_llm", None)
    if llm is not None and hasattr(llm, "reset_prefix_cache"):
        llm.reset_prefix_cache()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=2)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64,
                    help="token budget of one full continuation (0: unset, to its end or the context's end)")
    ap.add_argument("--trace-tokens", type=int, default=192)
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = ap.parse_args()

    from table import print_table

    from thinkprobe.generate.engine import SamplingSpec, open_engine
    from thinkprobe.generate.questions import Question, format_prompt, load_question_set
    from thinkprobe.trajectories.checkpoints import RealizedTrace, engine_tokenizer_id
    from thinkprobe.trajectories.forced import compare_estimators
    from thinkprobe.trajectories.sampling import (SamplingConfig, label_document, plan_trace, sample_traces)
    from thinkprobe.trajectories.stopping import StoppingRule, stopping_error

    source = CORPUS_GSM8K if CORPUS_GSM8K.exists() else DEMO
    questions: list[Question] = load_question_set({"name": "gsm8k", "source": "gsm8k", "path": str(source),
                                                   "limit": args.items})
    t0 = time.perf_counter()
    engine = open_engine({"name": "smollm2", "backend": "vllm", "path": "smollm2"})
    start_s = time.perf_counter() - t0
    tok = engine.tokenizer()
    fp = engine_tokenizer_id(engine)
    prompts = []
    for q in questions:
        text = tok.apply_chat_template([{"role": "user", "content": format_prompt(q, "cot")}], tokenize=False,
                                       add_generation_prompt=True) + "<think>\n"
        prompts.append(tok.encode(text, add_special_tokens=False))
    gens = engine.generate(prompts, [SamplingSpec(n=1, temperature=0.6, max_tokens=args.trace_tokens, seed=i)
                                     for i in range(len(prompts))])
    traces = [RealizedTrace("smollm2", "gsm8k", q.id, "1", tuple(p), tuple(g.completions[0].token_ids),
                            g.completions[0].text, fp, "gsm8k", q.gold, {"prompt_variant": "cot"})
              for q, p, g in zip(questions, prompts, gens)]

    budget = args.max_tokens or None
    full = SamplingConfig(n=args.n, stride=16, max_tokens=budget, seed=0)
    plans = [plan_trace(t, tok, full, engine.max_model_len, engine.model, fp) for t in traces]
    raw_prompts = [p for plan in plans for i, p in enumerate(plan.prompts) if i not in plan.skipped]
    raw_specs = [SamplingSpec(n=args.n, temperature=full.temperature, top_p=full.top_p,
                              max_tokens=min(budget or engine.max_model_len, engine.max_model_len - len(p)),
                              seed=k) for k, p in enumerate(raw_prompts)]
    _reset_cache(engine)
    t0 = time.perf_counter()
    raw = engine.generate(raw_prompts, raw_specs)
    raw_s = time.perf_counter() - t0
    raw_tokens = sum(len(c.token_ids) for g in raw for c in g.completions)

    _reset_cache(engine)
    with tempfile.TemporaryDirectory() as store:
        t0 = time.perf_counter()
        docs, stats = sample_traces(engine, traces, full, store, prefixes_per_call=64)
        rule_s = time.perf_counter() - t0
    _reset_cache(engine)
    forced = SamplingConfig(n=args.n, stride=16, estimator="forced", forced_max_tokens=16, seed=0)
    with tempfile.TemporaryDirectory() as store:
        t0 = time.perf_counter()
        fdocs, fstats = sample_traces(engine, traces, forced, store, prefixes_per_call=64)
        forced_s = time.perf_counter() - t0
    engine.close()

    full_labels, forced_labels = [], []
    for d, fd in zip(docs, fdocs):
        r, fr = label_document(d), label_document(fd)
        full_labels += [c["labels"] for c in r["checkpoints"]]
        forced_labels += [c["labels"] for c in fr["checkpoints"]]
    cmp = compare_estimators(full_labels, forced_labels, stats["sampled_tokens"], fstats["sampled_tokens"])
    stop = stopping_error(full_labels, StoppingRule())
    totals = [d["totals"] for d in docs if d["status"] == "ok"]
    computed = sum(t["computed_prefill"] for t in totals)
    prefix_sum = sum(t["prefix_tokens_sum"] for t in totals)
    ks = [d["reasoning"]["k"] for d in docs if d["status"] == "ok"]
    rule_rate = stats["sampled_tokens"] / rule_s
    raw_rate = raw_tokens / raw_s
    null_share = sum(lab is None for ls in full_labels for lab in ls) / max(1, sum(map(len, full_labels)))
    conts = [x for d in docs if d["status"] == "ok" for c in d["checkpoints"] for x in c.get("continuations", [])]
    n_cont = max(1, len(conts))
    stops: dict[str, int] = {}
    for x in conts:
        stops[x["stop"]] = stops.get(x["stop"], 0) + 1
    lengths = [x["n_tokens"] for x in conts] or [0]
    rows = [
        ("items (realized traces)", f"{len(traces)} from {source.name}"),
        ("reasoning tokens K per trace", ", ".join(map(str, ks))),
        ("checkpoints (prefixes)", str(len(raw_prompts))),
        ("N / continuation budget (tokens)", f"{args.n} / {budget or 'unset (room left in the context)'}"),
        ("engine start (s)", f"{start_s:.1f}"),
        ("raw engine: sampled tokens", f"{raw_tokens}"),
        ("raw engine: tokens/s", f"{raw_rate:.1f}"),
        ("rule path: sampled tokens", f"{stats['sampled_tokens']}"),
        ("rule path: engine calls", f"{stats['calls']}"),
        ("rule path: tokens/s", f"{rule_rate:.1f}"),
        ("**rule / raw (target >= 0.80)**", f"**{rule_rate / raw_rate:.3f}**"),
        ("sum of prefix lengths (tokens)", f"{prefix_sum}"),
        ("prefill computed (tokens)", f"{computed}"),
        ("**computed / sum of prefixes (target <= 0.20)**", f"**{computed / prefix_sum:.3f}**"),
        ("null labels among full continuations", f"{null_share:.2f}"),
        ("**continuations cut by the budget**", f"**{stops.get('budget', 0) / n_cont:.2f}**"),
        ("continuations ended by eos / stop string / context",
         f"{stops.get('eos', 0) / n_cont:.2f} / {stops.get('stop_string', 0) / n_cont:.2f} / "
         f"{stops.get('context', 0) / n_cont:.2f}"),
        ("continuation length: mean / max tokens", f"{sum(lengths) / n_cont:.0f} / {max(lengths)}"),
        ("forced: sampled tokens / full", f"{cmp['cost_ratio']:.3f}"),
        ("forced: wall seconds / full", f"{forced_s / rule_s:.3f}"),
        ("forced vs full: median TV per checkpoint", f"{cmp['median_tv']:.3f}"),
        ("forced vs full: dominant sets equal", f"{cmp['dominant_agreement']:.2f}"),
        ("stopping: continuations used / fixed N", f"{stop['continuations_stopped']} / {stop['continuations_fixed']}"),
        ("stopping: saving", f"{stop['saving']:.3f}"),
        ("stopping vs fixed N: median / max TV", f"{stop['median_tv']:.3f} / {stop['max_tv']:.3f}"),
        ("stopping: dominant sets unchanged", f"{stop['dominant_unchanged']:.2f}"),
    ]
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "stats": stats, "forced": cmp, "stopping": stop},
                                              indent=1, default=str))


if __name__ == "__main__":
    main()
