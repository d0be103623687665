"""Continuation sampling from reasoning prefixes: N continuations per checkpoint, resumable.

For every checkpoint j of a realized trace the prompt is ``prompt_ids + head + reasoning[:j]`` in the
model's own token ids (plus the answer suffix under the forced-answer estimator), and N continuations are
sampled with ``n=N`` in one request, so the prefill is computed once per prefix. The prefixes of a call
are sent to the engine in ONE ``generate`` call, each trace's checkpoints together and in ascending order:
with prefix caching on, every checkpoint reuses the cached KV blocks of its predecessor, so the prefill
computed per trajectory is about K tokens (plus the prompt once), not the sum of all prefix lengths.
The engine's ``cached_tokens`` is recorded per checkpoint; ``computed_prefill`` = prompt tokens - cached.

Resumability: a sampling job works through its prefixes in calls of ``prefixes_per_call`` prefixes (a
trace is never split across calls unless it alone has more) and, as soon as a call returns, writes one
*part file* per trace of the call into the :class:`ContinuationStore`, atomically. A killed job rerun loads
the parts and samples only what is missing: no finished checkpoint is redone. The store is keyed by trace
and by the hash of the sampling configuration, so parts of another configuration are never mixed in.

Continuations run "to the final answer": they stop at the end-of-sequence token, at a stop string of the
trace's prompt style (a base model's invented follow-up "Question:"), after ``max_tokens`` when it is set,
or at the end of the context (``max_tokens`` unset, the default: the budget is the room the prefix leaves
in ``max_model_len``). Each continuation records why (``stop``: :data:`STOP_REASONS`) and each checkpoint
its budget after trimming (``max_tokens``). Special tokens are kept in the text; where the tokenizer has a
``</think>`` token the reasoning end is found from the token ids (``think_closed``, ``answer_text``) when the
engine returned them, else from the text (an endpoint that returns no ids: ``think_from`` says which).

The raw text of every continuation is kept; labelling is a separate, cheap step
(:mod:`thinkprobe.trajectories.labelling`, re-exported here), so a parser change never costs GPU time. The
store of finished calls is :mod:`thinkprobe.trajectories.store`.

Bad input never stops a job: a trace whose tokenizer differs, or without token ids, becomes an
``excluded`` document naming the reason; a checkpoint whose prefix does not fit the context is recorded
``skipped`` (no labels) and the others go on; an engine error for one prompt is recorded ``error`` when
it is a property of the prompt (a refused request). A transient fault of the engine or endpoint (connection,
timeout, 5xx, 429, a malformed reply: :mod:`thinkprobe.generate.faults`) is never stored: the job stores
every other checkpoint, then raises :class:`~thinkprobe.generate.faults.TransientFailures`, and the next run
samples exactly those checkpoints.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from functools import lru_cache

from ..codedeps import code_modules, used_modules
from ..answers import DEFAULT_STOP
from .checkpoints import (Checkpoint, RealizedTrace, Reasoning, TraceError, check_tokenizer, checkpoints,
                          engine_tokenizer_id, find_reasoning, think_close_id)
from .checkpoints import _CLOSE as THINK_CLOSE
from ..generate.defaults import ESTIMATORS, FORCED_DEFAULTS, TRAJECTORY_DEFAULTS, TRAJECTORY_SAMPLING_DEFAULTS
from ..generate.faults import is_transient, transient_failures
from .forced import forced_suffix_ids
from .labelling import continuation_label, endpoint_label, label_document  # noqa: F401 - re-exported
from .stopping import StoppingRule
from .store import ContinuationStore  # noqa: F401 - re-exported


# The sampling code (issue 25, item 5): the functions that decide what each request asks for (prompt, budget,
# seed, stop strings), which checkpoints are sampled again, what is stored of each continuation and how a
# document is assembled; with sequential stopping, also the labels that decide how many are sampled. Its
# hash keys the store, the finished documents and the protection check, so samples taken by other code are
# never reused. Not part of it, though the walk from those functions reaches them: a package's __init__
# (run on import, it decides nothing) and the analysis it re-exports, the provenance helpers, the engine
# factory (``generate.engine``: it only picks the backend, which the identity names), the engines' process
# plumbing and model lookup (the cache folder too; the weights are keyed by the model's identity) and the
# defaults (their values enter the key as settings).
NOT_SAMPLING_CODE = frozenset({"__init__", "generate.__init__", "trajectories.__init__", "trajectories.distributions",
                               "trajectories.dynamics", "codedeps", "outputs", "cache", "generate.engine",
                               "generate.hub", "generate.models", "generate.reaper", "generate.defaults"})

# Stored work keyed by what made it (issue 34, item 3): the modules that only one backend or one estimator
# runs. A batch's code is the shared sampling code (the engine interface both backends run included) plus the
# code of ITS backend and ITS estimator, never another's: a fix in the HTTP client leaves every batch sampled
# with vLLM valid, an edit of the forced-answer estimator every batch of the full-continuation estimator. The walk from the
# sampling functions reaches every backend (a package's __init__ re-exports the factory, which imports them
# all), so the other backends' and estimators' modules are taken out of it here. One key per member of
# ``generate.engine.BACKENDS`` and ``generate.defaults.ESTIMATORS`` (a test holds them equal).
BACKEND_CODE = {"vllm": ("generate.vllm_engine",), "openai": ("generate.http_engine", "boundedjson")}
ESTIMATOR_CODE = {"full": (), "forced": ("trajectories.forced",)}


def _member_code(table: Mapping[str, tuple[str, ...]], what: str, name: str) -> tuple[str, ...]:
    if name not in table:
        raise ValueError(f"unknown {what} {name!r} (one of {', '.join(sorted(table))})")
    return table[name]


def sampling_code(stopping: bool, backend: str, estimator: str) -> list[str]:
    """The modules of the sampling code of a batch sampled through ``backend`` with ``estimator`` (what the
    functions below use, :mod:`thinkprobe.codedeps`, and the backend's engine; with ``stopping``, also the
    labels that decide how many are sampled), less :data:`NOT_SAMPLING_CODE` and less the modules of the
    other backends and estimators (:data:`BACKEND_CODE`, :data:`ESTIMATOR_CODE`)."""
    own = set(_member_code(BACKEND_CODE, "backend", backend)) | set(_member_code(ESTIMATOR_CODE, "estimator", estimator))
    others = {m for table in (BACKEND_CODE, ESTIMATOR_CODE) for mods in table.values() for m in mods} - own
    code = [trace_checkpoints, sample_checkpoints, _budget, _seed, _spec, _continuation, continuation_document]
    if stopping:
        code += [_labels_for_stopping, StoppingRule]
    entries = [(f.__module__.removeprefix("thinkprobe."), f.__name__) for f in code] + [(m, None) for m in own]
    return [m for m in used_modules(entries) if m not in NOT_SAMPLING_CODE and m not in others]


@lru_cache(maxsize=None)
def sampling_code_sha256(stopping: bool, backend: str, estimator: str) -> str:
    """sha256 of the :func:`sampling_code` sources (read once per process and combination)."""
    from ..outputs import source_hash

    return source_hash(sampling_code(stopping, backend, estimator))


def batch_code_sha256(cfg: SamplingConfig, backend: str) -> str:
    """The sampling code hash of a batch of ``cfg`` sampled through ``backend``: its stopping setting and
    estimator pick the code (:func:`sampling_code_sha256`)."""
    return sampling_code_sha256(cfg.stopping is not None, backend, cfg.estimator)


# Keys of a `trajectories.decodings` entry that say where it applies rather than how to sample.
DECODING_SCOPE = ("models", "question_sets")


def decoding_sampling(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """The sampling parameters of a decoding condition (its scope keys left out)."""
    return {k: v for k, v in (spec or {}).items() if k not in DECODING_SCOPE}


def decoded_sampling(traj: Mapping[str, Any], decoding: str = "default") -> dict[str, Any]:
    """The ``sampling`` block of a ``trajectories`` section with ``decodings[decoding]`` overlaid (the
    ``default`` decoding: ``sampling`` as it is); a decoding the section does not define is refused."""
    s = dict(traj.get("sampling") or {})
    if decoding != "default":
        specs = traj.get("decodings") or {}
        if decoding not in specs:
            raise ValueError(f"trajectories.decodings: no decoding named {decoding!r}")
        s.update(decoding_sampling(specs[decoding]))
    return s


def decoding_applies(spec: Mapping[str, Any] | None, model: str, question_set: str) -> bool:
    """Whether a decoding condition is sampled for ``model`` x ``question_set``: a matched comparison needs
    its conditions only where its pairs are (the paper's temperature comparison: four models, GSM8K), so a
    decoding may name the models and question sets it is for; unnamed means all."""
    spec = spec or {}
    return all(not spec.get(key) or name in spec[key]
               for key, name in (("models", model), ("question_sets", question_set)))

@dataclass(frozen=True)
class SamplingConfig:
    """Everything in the sampling settings that decides which continuations are sampled (the store is keyed
    by its hash, with the model, engine settings and code: :func:`store_digest`).

    The defaults are THE defaults of trajectory sampling, read from their one home
    (:mod:`thinkprobe.generate.defaults`), which ``config/schema.yaml`` reads too; the ``thinkprobe trajectory``
    options read them from here.
    ``max_tokens`` None (the default) lets every continuation run to its end or to the end of the context
    (the room the prefix leaves in ``max_model_len``): real reasoning models need thousands of tokens to
    reach their answer, and a budget cut labels the continuation null. ``stop`` maps a prompt style (the
    prompt variant the trace was collected with) to its stop strings; ``decoding`` names the decoding
    condition (``default``, or one of ``trajectories.decodings``) that the records carry.

    ``task`` is the task of the batch's questions (a question set has one) and ``answer_cue`` the forced-answer
    cue of that task: given, or (None) the task's own default (``Task.answer_cue``, resolved here from the
    registry, :mod:`thinkprobe.tasks`). Only the forced estimator appends a cue, so under any other estimator
    ``answer_cue`` is None and the settings (:meth:`as_dict`) hold none: a batch's settings hold the cue of its
    own task only, and only when it uses it. A forced batch whose task has no cue keeps ``answer_cue`` None, and
    each of its traces is excluded naming the task (:func:`trace_checkpoints`).
    """

    n: int = TRAJECTORY_DEFAULTS["n"]
    stride: int = TRAJECTORY_DEFAULTS["stride"]
    temperature: float = TRAJECTORY_SAMPLING_DEFAULTS["temperature"]
    top_p: float = TRAJECTORY_SAMPLING_DEFAULTS["top_p"]
    max_tokens: int | None = TRAJECTORY_SAMPLING_DEFAULTS["max_tokens"]
    seed: int | None = TRAJECTORY_SAMPLING_DEFAULTS["seed"]
    estimator: str = TRAJECTORY_DEFAULTS["estimator"]
    forced_max_tokens: int = FORCED_DEFAULTS["max_tokens"]
    task: str | None = None
    answer_cue: str | None = None
    max_reasoning_tokens: int = TRAJECTORY_DEFAULTS["max_reasoning_tokens"]
    stopping: StoppingRule | None = None
    stop: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_STOP))
    decoding: str = "default"

    def __post_init__(self):
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        if self.n < 1 or self.stride < 1 or self.forced_max_tokens < 1 or (self.max_tokens is not None
                                                                            and self.max_tokens < 1):
            raise ValueError("n, stride, max_tokens (when set) and forced_max_tokens must be >= 1")
        if self.estimator != "forced":
            object.__setattr__(self, "answer_cue", None)  # only the forced estimator appends one
        elif self.answer_cue is None and self.task is not None:
            from .. import tasks  # here, not at import: the registry is no part of the sampling code

            object.__setattr__(self, "answer_cue", tasks.get(self.task).answer_cue)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], decoding: str = "default") -> "SamplingConfig":
        """From the config's ``trajectories`` section (see config/schema.yaml); a key left out takes the
        dataclass default. ``task`` (the batch's task, which
        :meth:`thinkprobe.trajectories.batches.TrajectoryJobs.sampling` adds) picks that task's entry of
        ``forced.answer_cues``, else its default cue. A ``decoding`` other than ``default`` (the argument, else
        the section's ``decoding`` key) overlays ``decodings[decoding]`` (temperature, top_p, max_tokens, seed) on
        ``sampling`` when the section has ``decodings`` (else ``sampling`` is taken as already overlaid)."""
        d = cls()
        decoding = decoding if decoding != "default" else cfg.get("decoding") or "default"
        s = decoded_sampling(cfg, decoding) if "decodings" in cfg else dict(cfg.get("sampling") or {})
        st = cfg.get("stopping") or {}
        rule = (StoppingRule(**{k: st[k] for k in ("min_n", "round_size", "alpha", "threshold") if k in st})
                if st.get("enabled") else None)
        forced = cfg.get("forced") or {}
        stop = {**d.stop, **{k: tuple(v) for k, v in (cfg.get("stop") or {}).items()}}
        return cls(n=cfg.get("n", d.n), stride=cfg.get("stride", d.stride),
                   temperature=s.get("temperature", d.temperature), top_p=s.get("top_p", d.top_p),
                   max_tokens=s.get("max_tokens", d.max_tokens), seed=s.get("seed", d.seed),
                   estimator=cfg.get("estimator", d.estimator),
                   forced_max_tokens=forced.get("max_tokens", d.forced_max_tokens),
                   task=cfg.get("task"), answer_cue=(forced.get("answer_cues") or {}).get(cfg.get("task")),
                   max_reasoning_tokens=cfg.get("max_reasoning_tokens", d.max_reasoning_tokens), stopping=rule,
                   stop=stop, decoding=decoding)

    def stop_for(self, prompt_variant: str | None) -> tuple[str, ...]:
        """The stop strings of a trace collected with ``prompt_variant`` (unknown or None: none)."""
        return tuple(self.stop.get(prompt_variant or "", ()))

    def as_dict(self) -> dict[str, Any]:
        """The settings that decide a batch's continuations: what its identity, its store digest and its
        documents hold. The forced estimator's holds ``answer_cue``, the cue of the batch's own task; another
        estimator's holds no cue (it appends none), so editing a cue changes the settings of that task's forced
        batches only."""
        out = {"n": self.n, "stride": self.stride, "temperature": self.temperature, "top_p": self.top_p,
               "max_tokens": self.max_tokens, "seed": self.seed, "estimator": self.estimator,
               "forced_max_tokens": self.forced_max_tokens, "max_reasoning_tokens": self.max_reasoning_tokens,
               "stopping": self.stopping.as_dict() if self.stopping else None,
               "stop": {k: list(v) for k, v in sorted(self.stop.items())}}
        if self.estimator == "forced":
            out["answer_cue"] = self.answer_cue
        return out


@dataclass
class Checkpoints:
    """One trace's checkpoints and prompts, or the reason it is excluded."""

    trace: RealizedTrace
    reasoning: Reasoning | None = None
    checkpoints: list[Checkpoint] = field(default_factory=list)
    prompts: list[tuple[int, ...]] = field(default_factory=list)
    excluded: str | None = None
    skipped: dict[int, str] = field(default_factory=dict)  # checkpoint index -> reason

    @property
    def prompt_variant(self) -> str | None:
        """The prompt variant the trace was collected with (its stop strings), when the unit records it."""
        return (self.trace.extra or {}).get("prompt_variant")


def trace_checkpoints(trace: RealizedTrace, tokenizer, cfg: SamplingConfig, max_model_len: int,
                      model: str | None = None, fingerprint: str | None = None) -> Checkpoints:
    """Reasoning, checkpoints and the prompt of every checkpoint; never raises for bad input."""
    try:
        check_tokenizer(trace, tokenizer, model, fingerprint)
        reasoning = find_reasoning(trace.completion_ids, tokenizer)
        suffix: tuple[int, ...] = ()
        if cfg.estimator == "forced":
            if trace.task is None:
                raise TraceError(f"{trace.key}: the forced-answer estimator needs the task of the question")
            if cfg.task is not None and trace.task != cfg.task:
                raise TraceError(f"{trace.key}: a question of task {trace.task!r} in a batch of task {cfg.task!r} "
                                 "(whose answer cue it would be given)")
            if cfg.answer_cue is None:
                raise TraceError(f"no answer cue for task {trace.task!r}: give it in "
                                 f"trajectories.forced.answer_cues ({trace.task}: ...) or in its task file")
            suffix = forced_suffix_ids(tokenizer, cfg.answer_cue, reasoning.native)
        cps = checkpoints(reasoning, cfg.stride, tokenizer, cfg.max_reasoning_tokens)
    except (TraceError, ValueError) as exc:
        return Checkpoints(trace, excluded=str(exc))
    base = trace.prompt_ids + reasoning.head
    plan = Checkpoints(trace, reasoning, cps)
    for cp in cps:
        prompt = base + reasoning.tokens[:cp.prefix_tokens] + suffix
        plan.prompts.append(prompt)
        if len(prompt) >= max_model_len:
            plan.skipped[cp.index] = (f"prefix of {len(prompt)} tokens (prompt {len(trace.prompt_ids)} + reasoning "
                                      f"{cp.prefix_tokens}) does not fit the context of {max_model_len} tokens")
    return plan


def _seed(base: int | None, key: str, index: int, round_: int) -> int | None:
    if base is None:
        return None
    h = hashlib.sha256(f"{base}:{key}:{index}:{round_}".encode()).digest()
    return int.from_bytes(h[:4], "big") & 0x7FFFFFFF


def _labels_for_stopping(entry: Mapping[str, Any], task: str | None, cfg: SamplingConfig,
                         stop: Sequence[str] = ()) -> list:
    return [continuation_label(c, task, cfg, entry.get("native", False), stop=stop) for c in entry["continuations"]]


def sample_checkpoints(engine, plans: Sequence[Checkpoints], cfg: SamplingConfig, store: ContinuationStore,
                       prefixes_per_call: int = 64, log: Callable[[str], None] | None = None,
                       labels: Callable[..., list] | None = None) -> dict[str, Any]:
    """Sample every missing continuation of ``plans`` through ``engine``, persisting each call in ``store``.

    ``labels(entry, task, cfg, stop)`` labels a checkpoint's continuations for sequential stopping (needed
    when ``cfg.stopping`` is set; :func:`sample_traces` passes the labeller): passed in, so that the labelling
    code is part of the sampling code only where it decides how many continuations are sampled.

    Returns counters of this run: calls, prefixes sent, sampled tokens, prompt and cached tokens, seconds
    spent inside ``engine.generate``.
    """
    if cfg.stopping is not None and labels is None:
        raise ValueError("sequential stopping needs the labeller (labels=...): sample_traces passes it")
    log = log or (lambda msg: None)
    stats = {"calls": 0, "prefixes": 0, "sampled_tokens": 0, "prompt_tokens": 0, "cached_tokens": 0,
             "generate_seconds": 0.0, "checkpoints_reused": 0}
    n_target = cfg.n
    context_len = getattr(engine, "max_model_len", None)
    tok = _local_tokenizer(engine)
    close_id = think_close_id(tok) if tok is not None else None
    round_ = 0
    keys = [p.trace.key for p in plans if not p.excluded]
    failed: dict[tuple[str, int], str] = {}  # transient faults of this run: not stored, not retried in it
    while True:
        done = store.entries(keys)
        todo: list[tuple[Checkpoints, int, int]] = []
        for plan in plans:
            if plan.excluded:
                continue
            for cp in plan.checkpoints:
                if cp.index in plan.skipped or (plan.trace.key, cp.index) in failed:
                    continue
                entry = done.get((plan.trace.key, cp.index))
                if entry is not None and entry["status"] != "ok":
                    continue
                have = len(entry["continuations"]) if entry else 0
                if round_ == 0 and entry is not None:
                    stats["checkpoints_reused"] += 1
                if cfg.stopping is None:
                    more = n_target - have
                else:
                    have_labels = (labels(entry, plan.trace.task, cfg, cfg.stop_for(plan.prompt_variant))
                                   if entry else [])
                    more = cfg.stopping.next_n(have_labels, n_target)
                if more > 0:
                    todo.append((plan, cp.index, more))
        if not todo:
            if failed:
                raise transient_failures({f"{k} checkpoint {i}": v for (k, i), v in failed.items()},
                                         sum(len(p.checkpoints) for p in plans if not p.excluded), "checkpoints")
            return stats
        log(f"round {round_}: {len(todo)} prefixes to sample")
        for chunk in _calls(todo, prefixes_per_call):
            prompts = [plan.prompts[i] for plan, i, _ in chunk]
            specs = [_spec(cfg, more, _budget(cfg, len(plan.prompts[i]), context_len),
                           _seed(cfg.seed, plan.trace.key, i, round_), cfg.stop_for(plan.prompt_variant))
                     for plan, i, more in chunk]
            t0 = time.perf_counter()
            gens = engine.generate(prompts, specs)
            seconds = time.perf_counter() - t0
            entries = []
            for (plan, i, _), prompt, spec, gen in zip(chunk, prompts, specs, gens):
                cp = plan.checkpoints[i]
                if is_transient(gen):
                    failed[(plan.trace.key, cp.index)] = gen.error
                    continue
                budget = int(gen.info.get("max_tokens", spec.max_tokens))
                to_the_end = cfg.estimator != "forced" and cfg.max_tokens is None
                at_edge = context_len is not None and len(prompt) + budget >= context_len
                cut = "context" if to_the_end or at_edge else "budget"  # what a "length" finish ran into
                comps = [_continuation(c, cut, tok, close_id) for c in gen.completions]
                cached = gen.cached_tokens
                entries.append({
                    "trace": plan.trace.key, "checkpoint_index": cp.index, "prefix_tokens": cp.prefix_tokens,
                    "char_offset": cp.char_offset, "prompt_tokens": len(prompt), "cached_tokens": cached,
                    "computed_prefill": None if cached is None else len(prompt) - cached, "seed": spec.seed,
                    "max_tokens": budget, "stop": list(spec.stop),
                    "native": plan.reasoning.native, "status": "error" if gen.error else "ok",
                    "reason": gen.error, "continuations": comps})
                stats["sampled_tokens"] += sum(c["n_tokens"] or 0 for c in comps)
                stats["prompt_tokens"] += len(prompt)
                stats["cached_tokens"] += cached or 0
            store.write(entries, {"seconds": seconds, "prefixes": len(chunk), "round": round_})
            stats["calls"] += 1
            stats["prefixes"] += len(chunk)
            stats["generate_seconds"] += seconds
            log(f"call {stats['calls']}: {len(chunk)} prefixes, {seconds:.1f} s")
        round_ += 1


def _budget(cfg: SamplingConfig, prompt_tokens: int, max_model_len: int | None) -> int:
    """Token budget of one continuation: the forced budget, the configured ``max_tokens``, or (unset) the
    room the prompt leaves in the context; never more than that room (the engine would trim it anyway)."""
    room = None if max_model_len is None else max(1, max_model_len - prompt_tokens)
    if cfg.estimator == "forced":
        wanted = cfg.forced_max_tokens
    elif cfg.max_tokens is None:
        if room is None:
            raise ValueError("max_tokens is unset (run to the context's end) but the engine reports no max_model_len")
        return room
    else:
        wanted = cfg.max_tokens
    return wanted if room is None else min(wanted, room)


def _spec(cfg: SamplingConfig, n: int, max_new: int, seed: int | None, stop: Sequence[str] = ()):
    from ..generate.interface import SamplingSpec

    return SamplingSpec(n=n, temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=max_new, seed=seed,
                        stop=tuple(stop), skip_special_tokens=False)


#: Why a continuation stopped (``stop`` of a stored continuation): ``eos`` (end of text), ``stop_string``
#: (a configured stop string: the model began an invented follow-up), ``budget`` (``max_tokens`` reached),
#: ``context`` (the end of the context: the budget was the room left, or was trimmed to it), ``error``.
STOP_REASONS = ("eos", "stop_string", "budget", "context", "error")


def _local_tokenizer(engine):
    """The engine's tokenizer for reading ``</think>`` from token ids, or None where the engine has none here
    (an HTTP endpoint configured without a local ``tokenizer``): continuations are then read as text."""
    from ..generate.interface import EngineError

    try:
        return engine.tokenizer() if hasattr(engine, "tokenizer") else None
    except EngineError:
        return None


def _continuation(c, cut: str, tok, close_id: int | None) -> dict[str, Any]:
    """One stored continuation: text (special tokens kept), token count, finish and stop reason, and where
    the reasoning ends when the tokenizer has a ``</think>`` token.

    The reasoning end is read from the token ids only when the engine returned them (``think_from: ids``); an
    endpoint that returned none (``has_token_ids`` False) is read from the text (``think_from: text``), never
    taken as a continuation that did not close its reasoning. The token count is the ids' (or, without them,
    the server's count, else the local tokenizer's count of the text: ``n_tokens_from``); the stop reason
    tells a stop string (the engine's ``stop_reason`` is a string) from the end of sequence."""
    if c.finish_reason == "stop":
        stop = "stop_string" if isinstance(getattr(c, "stop_reason", None), str) else "eos"
    elif c.finish_reason == "length":
        stop = cut
    else:
        stop = "error"
    has_ids = getattr(c, "has_token_ids", True)
    out: dict[str, Any] = {"text": c.text, "n_tokens": len(c.token_ids), "finish_reason": c.finish_reason,
                           "stop": stop}
    if not has_ids:
        if getattr(c, "n_tokens", None) is not None:
            out.update(n_tokens=int(c.n_tokens), n_tokens_from="server")
        elif tok is not None:
            out.update(n_tokens=len(tok.encode(c.text, add_special_tokens=False)), n_tokens_from="text")
        else:
            out.update(n_tokens=None, n_tokens_from=None)
    if close_id is not None and has_ids:
        ids = list(c.token_ids)
        out.update(think_closed=close_id in ids, think_from="ids")
        if out["think_closed"]:
            out["answer_text"] = tok.decode(ids[ids.index(close_id) + 1:], skip_special_tokens=False)
    elif close_id is not None:
        pos = c.text.find(THINK_CLOSE)
        out.update(think_closed=pos >= 0, think_from="text")
        if pos >= 0:
            out["answer_text"] = c.text[pos + len(THINK_CLOSE):]
    return out


def _calls(todo: list, size: int) -> list[list]:
    """Consecutive calls of about ``size`` prefixes; a trace's prefixes stay in one call when they fit."""
    calls: list[list] = []
    current: list = []
    by_trace: dict[str, list] = {}
    for item in todo:
        by_trace.setdefault(item[0].trace.key, []).append(item)
    for items in by_trace.values():
        if current and len(current) + len(items) > size:
            calls.append(current)
            current = []
        for item in items:
            current.append(item)
            if len(current) >= size:
                calls.append(current)
                current = []
    if current:
        calls.append(current)
    return calls


def continuation_document(plan: Checkpoints, entries: Mapping[tuple[str, int], Mapping[str, Any]],
                          cfg: SamplingConfig, prov: Mapping[str, Any]) -> dict[str, Any]:
    """The per-trace output (``results/continuations/...json``): every checkpoint with its raw continuations."""
    t = plan.trace
    doc: dict[str, Any] = {"unit": t.ids(), "task": t.task, "gold": t.gold, "estimator": cfg.estimator,
                           "decoding": cfg.decoding, "prompt_variant": plan.prompt_variant,
                           "stop": list(cfg.stop_for(plan.prompt_variant)), "sampling": cfg.as_dict(),
                           "provenance": dict(prov)}
    if plan.excluded:
        return {**doc, "status": "excluded", "stage": "trajectory_sample", "reason": plan.excluded,
                "checkpoints": []}
    r = plan.reasoning
    rows = []
    totals = {"sampled_tokens": 0, "prompt_tokens": 0, "cached_tokens": 0, "computed_prefill": 0,
              "prefix_tokens_sum": 0}
    for cp, prompt in zip(plan.checkpoints, plan.prompts):
        row = {"checkpoint_index": cp.index, "prefix_tokens": cp.prefix_tokens, "char_offset": cp.char_offset,
               "prompt_tokens": len(prompt)}
        if cp.index in plan.skipped:
            rows.append({**row, "status": "skipped", "reason": plan.skipped[cp.index], "continuations": []})
            continue
        e = entries.get((t.key, cp.index))
        if e is None:
            rows.append({**row, "status": "missing", "reason": "not sampled", "continuations": []})
            continue
        comps = e["continuations"]
        rows.append({**row, "status": e["status"], "reason": e.get("reason"), "n": len(comps),
                     "max_tokens": e.get("max_tokens"),
                     "cached_tokens": e.get("cached_tokens"), "computed_prefill": e.get("computed_prefill"),
                     "calls": e.get("calls") or 1, "seeds": e.get("seeds"),
                     "sampled_tokens": sum(c.get("n_tokens") or 0 for c in comps), "continuations": comps})
        totals["sampled_tokens"] += rows[-1]["sampled_tokens"]
        totals["prompt_tokens"] += len(prompt)
        totals["prefix_tokens_sum"] += len(prompt)
        totals["cached_tokens"] += e.get("cached_tokens") or 0
        totals["computed_prefill"] += e.get("computed_prefill") or 0
    return {**doc, "status": "ok", "stage": None, "reason": None,
            "reasoning": {"how": r.how, "native": r.native, "k": r.k,
                          "k_sampled": plan.checkpoints[-1].prefix_tokens, "head_tokens": len(r.head),
                          "prompt_tokens": len(t.prompt_ids), "text": r.text, "answer_text": r.answer_text,
                          "cut": t.extra.get("finish_reason") == "length"},
            "totals": totals, "checkpoints": rows}


def sampling_provenance(engine, cfg: SamplingConfig, fingerprint: str | None = None) -> dict[str, Any]:
    from ..outputs import provenance

    return provenance(code_modules(sample_traces), cfg.as_dict(), [], engine={"backend": engine.backend, "model": engine.model,
                                                           "version": engine.version,
                                                           "max_model_len": engine.max_model_len},
                      tokenizer_sha256=fingerprint, sampling_code_sha256=batch_code_sha256(cfg, engine.backend))


def store_digest(cfg: SamplingConfig, engine, identity: Mapping[str, Any] | None = None) -> str:
    """The continuation store's key for samples of ``cfg`` through ``engine`` (the folder name of a trace's
    parts, with the trace's hash): the batch's ``identity`` (:func:`thinkprobe.protect.identity`: settings,
    model, engine settings, sampling code) when the workflow gives it, else one built from ``cfg``, the
    engine's backend and model and the sampling code; plus the context length the engine really has (an
    endpoint's, unknown before it answers). Two decodings with the same settings share it: their
    continuations are the same samples."""
    from .. import protect

    ident = dict(identity) if identity is not None else protect.identity(
        cfg.as_dict(), {"name": engine.model, "backend": engine.backend}, batch_code_sha256(cfg, engine.backend))
    blob = json.dumps([ident, getattr(engine, "max_model_len", None)], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def sample_traces(engine, traces: Sequence[RealizedTrace], cfg: SamplingConfig, store_dir: str | os.PathLike,
                  prefixes_per_call: int = 64, log: Callable[[str], None] | None = None,
                  identity: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Plan, sample (resuming from ``store_dir``) and assemble one continuation document per trace.

    The store (:class:`ContinuationStore` rooted at ``store_dir``, keyed by :func:`store_digest` of
    ``identity``) is kept: it is the durable record of every continuation sampled. Returns the documents, in
    the order of ``traces``, and the run counters.
    """
    tok = engine.tokenizer()
    fp = engine_tokenizer_id(engine)
    plans = [trace_checkpoints(t, tok, cfg, engine.max_model_len, engine.model, fp) for t in traces]
    store = ContinuationStore(store_dir, store_digest(cfg, engine, identity),
                              {t.key: t.content_hash() for t in traces}, log=log)
    stats = sample_checkpoints(engine, plans, cfg, store, prefixes_per_call, log,
                         labels=_labels_for_stopping if cfg.stopping is not None else None)
    entries = store.entries([p.trace.key for p in plans if not p.excluded])
    prov = sampling_provenance(engine, cfg, fp)
    return [continuation_document(p, entries, cfg, prov) for p in plans], {**stats, "store": str(store.root)}
