"""``thinkprobe trajectory``: sample the answer-distribution trajectory of one trace record and print it.

The record is a JSON object (a file, or ``-`` for stdin)::

    {"question": "...", "gold": "72", "task": "gsm8k", "model": "smollm2",
     "completion": "...",              # optional: the realized output (text; tokenised without special tokens)
     "completion_token_ids": [...],    # optional, preferred: the model's own token ids
     "prompt": "...", "prompt_token_ids": [...]}   # optional: the exact prompt (else the `cot` prompt variant
                                                   # in the model's chat template)

Without a completion, one realized trace is sampled first. Then every checkpoint is continued N times
and the table (checkpoint, prefix tokens, leading labels with p, null share, S_eff, dominant set) is
printed, followed by the trajectory summary (endpoint, correctness, mechanism, switches, path length,
R_direct, t_commit). ``--json FILE`` also writes the continuation document and the labelled record.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HELP = __doc__


def add_parser(sub) -> argparse.ArgumentParser:
    from types import SimpleNamespace

    from ..generate.backends import named_backends
    from ..tasks import answer_names
    from ..generate.defaults import ESTIMATORS, TRAJECTORY_DEFAULTS, TRAJECTORY_SAMPLING_DEFAULTS

    # the defaults' one home, which SamplingConfig reads too; importing the sampler here would cost
    # `thinkprobe --help` a quarter of a second
    D = SimpleNamespace(**TRAJECTORY_DEFAULTS, **TRAJECTORY_SAMPLING_DEFAULTS)  # noqa: N806
    p = sub.add_parser("trajectory", help="sample and print the answer-distribution trajectory of one trace record",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("record", metavar="RECORD", help="a JSON trace record (question, gold, task, model ...), or -")
    p.add_argument("--model", default=None, help="model name or local folder (default: the record's, else smollm2)")
    p.add_argument("--backend", choices=named_backends(), default=named_backends()[0],
                   help="the backend that opens --model (thinkprobe.generate.backends: those that open a model "
                        "from its name; default %(default)s)")
    p.add_argument("--task", choices=answer_names(), help="task (default: the record's, else gsm8k)")
    p.add_argument("--n", type=int, default=D.n, help=f"continuations per checkpoint (default {D.n})")
    p.add_argument("--stride", type=int, default=D.stride, help=f"checkpoint stride in reasoning tokens (default {D.stride})")
    p.add_argument("--max-tokens", type=int, default=D.max_tokens,
                   help="token budget of one continuation (default: to its end or the end of the context)")
    p.add_argument("--trace-max-tokens", type=int, default=384,
                   help="token budget of the realized trace when the record has no completion (default 384)")
    p.add_argument("--temperature", type=float, default=D.temperature, help=f"sampling temperature (default {D.temperature})")
    p.add_argument("--top-p", type=float, default=D.top_p, help=f"nucleus sampling top-p (default {D.top_p})")
    p.add_argument("--seed", type=int, default=D.seed, help=f"base seed of every sampled continuation (default {D.seed})")
    p.add_argument("--estimator", choices=ESTIMATORS, default=D.estimator,
                   help="full: sample whole continuations (the paper); forced: close the reasoning at the prefix "
                        "and sample only the answer")
    p.add_argument("--max-reasoning-tokens", type=int, default=D.max_reasoning_tokens,
                   help="cap on checkpoint positions (0: none)")
    p.add_argument("--tau", type=float, default=0.8, help="commitment threshold (default 0.8)")
    p.add_argument("--json", metavar="FILE", help="write the continuation document and the record here")
    p.add_argument("--store", metavar="DIR", help="continuation store (resumable; default: a temporary folder)")
    p.set_defaults(func=run)
    return p


def _read_record(path: str) -> dict[str, Any]:
    raw = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    try:
        rec = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{path}: not a JSON record: {exc}") from exc
    if not isinstance(rec, dict):
        raise ValueError(f"{path}: the record must be a JSON object, not a {type(rec).__name__}")
    return rec


def _prompt_ids(rec: dict[str, Any], tok, task: str) -> list[int]:
    if rec.get("prompt_token_ids"):
        return [int(t) for t in rec["prompt_token_ids"]]
    if rec.get("prompt"):
        return tok.encode(rec["prompt"], add_special_tokens=False)
    if not rec.get("question"):
        raise ValueError("the record needs a 'question' (or a 'prompt' / 'prompt_token_ids')")
    from ..generate.questions import Question, format_prompt

    user = format_prompt(Question("cli", "cli", task, rec["question"], gold=rec.get("gold")), "cot")
    text = tok.apply_chat_template([{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True)
    return tok.encode(text, add_special_tokens=False)


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; bad input and engine faults become a ValueError with a clear message."""
    from ..generate.engine import EngineError

    try:
        return _run(args)
    except EngineError as exc:
        raise ValueError(str(exc)) from exc


def _run(args: argparse.Namespace) -> int:
    from ..generate.engine import SamplingSpec, open_engine
    from ..outputs import write_json
    from ..trajectories.aggregates import trace_summary
    from ..trajectories.checkpoints import RealizedTrace, engine_tokenizer_id
    from ..trajectories.distributions import dominant_set, effective_support, state_from_labels
    from ..trajectories.labelling import label_document
    from ..generate.modelspec import ModelSpec
    from ..trajectories.batches import sampling_config
    from ..trajectories.sampling import sample_traces

    rec = _read_record(args.record)
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout carries the table only
    if not getattr(args, "verbose", False):
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    task = args.task or rec.get("task") or "gsm8k"
    model = args.model or rec.get("model") or "smollm2"
    cfg = sampling_config({"n": args.n, "stride": args.stride, "estimator": args.estimator, "task": task,
                           "max_reasoning_tokens": args.max_reasoning_tokens,
                           "sampling": {"temperature": args.temperature, "top_p": args.top_p,
                                        "max_tokens": args.max_tokens, "seed": args.seed}})
    engine = open_engine(ModelSpec.named(model, args.backend))
    try:
        tok = engine.tokenizer()
        prompt = _prompt_ids(rec, tok, task)
        if rec.get("completion_token_ids"):
            completion, text = [int(t) for t in rec["completion_token_ids"]], rec.get("completion")
        elif rec.get("completion"):
            completion, text = tok.encode(rec["completion"], add_special_tokens=False), rec["completion"]
            print("thinkprobe: note: the completion was given as text and re-tokenised; give "
                  "completion_token_ids for the model's own tokens", file=sys.stderr)
        else:
            gen = engine.generate([prompt], [SamplingSpec(n=1, temperature=args.temperature, top_p=args.top_p,
                                                          max_tokens=args.trace_max_tokens, seed=args.seed)])[0]
            if gen.error:
                raise ValueError(f"could not sample the realized trace: {gen.error}")
            completion, text = list(gen.completions[0].token_ids), gen.completions[0].text
        trace = RealizedTrace(engine.model, "cli", str(rec.get("question_id", "record")), str(rec.get("run") or 1),
                              tuple(prompt), tuple(completion), text, engine_tokenizer_id(engine), task,
                              None if rec.get("gold") is None else str(rec["gold"]))
        store = args.store or tempfile.mkdtemp(prefix="thinkprobe-trajectory-")
        docs, stats = sample_traces(engine, [trace], cfg, store)
    finally:
        engine.close()
    doc = docs[0]
    if doc["status"] != "ok":
        raise ValueError(f"trace excluded: {doc['reason']}")
    record = label_document(doc, task, trace.gold)
    if args.json:
        write_json(args.json, {"continuations": doc, "record": record, "stats": stats})
    print(f"{'ckpt':>4} {'prefix':>6} {'null':>5} {'S_eff':>5}  {'dominant':<12} leading labels (p)")
    for c in record["checkpoints"]:
        if not c["labels"]:
            print(f"{c['checkpoint_index']:>4} {c['prefix_tokens']:>6}  {c['status']}: {c.get('reason')}")
            continue
        p = state_from_labels(c["labels"])
        top = sorted(((v, k) for k, v in p.items() if k is not None), key=lambda x: (-x[0], x[1]))[:4]
        dom = "|".join(sorted("null" if k is None else k for k in dominant_set(p)))
        print(f"{c['checkpoint_index']:>4} {c['prefix_tokens']:>6} {p.get(None, 0.0):>5.2f} "
              f"{effective_support(p):>5.2f}  {dom:<12} " + "  ".join(f"{k}:{v:.2f}" for v, k in top))
    if record["status"] == "ok":
        s = trace_summary(record, tau=args.tau)
        keys = ("gold", "endpoint_label", "correct", "mechanism", "switches", "recurrence", "path_length",
                "r_direct", "t_commit", "cot_tokens", "incomplete", "n_cut_budget", "n_cut_context", "n_null")
        print("  ".join(f"{k}={s.get(k)}" for k in keys))
    else:
        print(f"record {record['status']}: {record['reason']}")
    t = doc["totals"]
    print(f"sampled {t['sampled_tokens']} tokens; prefill computed {t['computed_prefill']} of "
          f"{t['prefix_tokens_sum']} prefix tokens (prefix cache); reasoning: {doc['reasoning']['how']}, "
          f"K={doc['reasoning']['k']}", file=sys.stderr)
    return 0
