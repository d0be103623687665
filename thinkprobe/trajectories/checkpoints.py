"""Realized traces, their reasoning in the model's own tokens, and the prefix checkpoints.

A *realized trace* is one collected completion: the prompt (token ids, or text tokenised verbatim) and the
completion's token ids as the model produced them. Its *reasoning* is the part of the completion before
the final answer:

* native reasoners (``<think>`` in the completion or in the chat template): the tokens between the
  opening ``<think>`` (kept in the fixed context, with the prompt) and the closing ``</think>``; a
  completion with ``</think>`` but no opening tag (the template put ``<think>`` in the prompt) has its
  reasoning before ``</think>``; an unclosed ``<think>`` (the budget ran out) has all tokens after it;
* prompted chain of thought (no ``</think>`` anywhere): the tokens before the **last answer statement**,
  the last match of :data:`ANSWER_STATEMENT` (``####``, ``\\boxed{``, "final answer", "the answer is",
  "answer:"), case-insensitive. Our reading of "the chain of thought up to the answer statement": the
  final answer is the last one the model states, so an early "the answer is 5 ... wait" stays part of the
  reasoning. A completion without any answer statement is reasoning throughout.

The boundary is found in characters of the decoded completion and mapped back to tokens: the reasoning is
the longest token prefix whose decoded text ends at or before the boundary (a token that straddles the
boundary, e.g. ``"\\n</think>"`` merged, belongs to the answer). Everything is in the model's own token ids,
so the 16-token stride is exact and no text is ever re-tokenised.

With K reasoning tokens, the checkpoints are J = {0, s, 2s, ...} plus K always (paper App. A.5); 0 is the
empty prefix. K = 0 gives the single checkpoint 0. Each checkpoint also carries the character offset of
its prefix inside the decoded reasoning text (``len(decode(r[:j]))``), which the structure x dynamics join
maps onto Thought Units.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..units import unit_path

ANSWER_STATEMENT = re.compile(
    r"####|\\boxed\s*\{|\bfinal\s+answer\b|\bthe\s+(?:correct\s+)?answer\s+is\b|\banswer\s*:", re.IGNORECASE)
_OPEN, _CLOSE = "<think>", "</think>"


class TraceError(ValueError):
    """A realized trace cannot be used (no token ids, unreadable record); the message names the trace."""


class TokenizerMismatch(TraceError):
    """The sampling model's tokenizer is not the one that produced the trace's token ids."""


@dataclass(frozen=True)
class RealizedTrace:
    """One collected completion, in the model's own token ids, with the ids of its unit."""

    model: str
    question_set: str
    question_id: str
    run: str
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    completion_text: str | None = None
    tokenizer_id: str | None = None
    task: str | None = None
    gold: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.model}/{self.question_set}/{self.question_id}/{self.run}"

    def content_hash(self) -> str:
        """sha256 of the prompt and completion token ids."""
        return hashlib.sha256(json.dumps([list(self.prompt_ids), list(self.completion_ids)]).encode()).hexdigest()

    def ids(self) -> dict[str, str]:
        return {"model": self.model, "question_set": self.question_set, "question_id": self.question_id,
                "run": str(self.run)}


@dataclass(frozen=True)
class Reasoning:
    """The reasoning part of a completion: ``head`` (kept in every prefix) and the K reasoning tokens."""

    head: tuple[int, ...]
    tokens: tuple[int, ...]
    answer: tuple[int, ...]
    how: str          # "think", "close-only", "unclosed", "answer-statement", "whole"
    native: bool      # a <think> reasoner: the forced estimator closes </think>
    text: str         # decode(tokens)
    answer_text: str  # decode(answer): the realized trace's own final answer

    @property
    def k(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class Checkpoint:
    index: int          # position in J
    prefix_tokens: int  # j: reasoning tokens in the prefix
    char_offset: int    # len(decode(reasoning[:j]))


def tokenizer_fingerprint(tokenizer) -> str:
    """sha256 of the tokenizer's vocabulary and special tokens: equal fingerprints, equal token ids.

    Used when the engine gives no ``tokenizer_sha256`` of its own (see :func:`engine_tokenizer_id`);
    sampling refuses a trace whose recorded identity differs from the sampling model's.
    """
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    special = {k: str(v) for k, v in sorted((tokenizer.special_tokens_map or {}).items())}
    return hashlib.sha256(json.dumps([vocab, special], ensure_ascii=False).encode()).hexdigest()


def engine_tokenizer_id(engine) -> str:
    """The tokenizer identity the collection stage records for an engine's traces.

    The engine's ``tokenizer_sha256`` (sha256 of the model folder's ``tokenizer.json``, what
    :mod:`thinkprobe.generate` stores in a collected trace's provenance) when it has one, else
    :func:`tokenizer_fingerprint` of its tokenizer.
    """
    return getattr(engine, "tokenizer_sha256", None) or tokenizer_fingerprint(engine.tokenizer())


def _decode(tokenizer, ids: Sequence[int]) -> str:
    return tokenizer.decode(list(ids), skip_special_tokens=False) if ids else ""


def check_tokenizer(trace: RealizedTrace, tokenizer, model: str | None = None, fingerprint: str | None = None) -> None:
    """Refuse a trace that another tokenizer produced, with an error naming the trace and the evidence.

    Three checks, each sufficient to refuse: a different model name (when ``model`` is given); a recorded
    tokenizer fingerprint different from this tokenizer's; token ids outside this vocabulary, or ids that
    do not decode to the stored completion text (whitespace ignored).
    """
    if model is not None and trace.model != model:
        raise TokenizerMismatch(f"{trace.key}: the trace was produced by model {trace.model!r}, not by the "
                                f"sampling model {model!r}; its token ids mean nothing to another tokenizer")
    if trace.tokenizer_id:
        fp = fingerprint or tokenizer_fingerprint(tokenizer)
        if trace.tokenizer_id != fp:
            raise TokenizerMismatch(f"{trace.key}: the trace's tokenizer (sha256 {trace.tokenizer_id[:12]}...) "
                                    f"differs from the sampling model's ({fp[:12]}...)")
    size = len(tokenizer)
    bad = [t for t in (*trace.prompt_ids, *trace.completion_ids) if not 0 <= int(t) < size]
    if bad:
        raise TokenizerMismatch(f"{trace.key}: token id {bad[0]} is outside the sampling tokenizer's "
                                f"vocabulary of {size}: the trace comes from another tokenizer")
    if trace.completion_text is not None and trace.completion_ids:
        decoded = tokenizer.decode(list(trace.completion_ids), skip_special_tokens=True)
        if "".join(decoded.split()) != "".join(trace.completion_text.split()):
            raw = _decode(tokenizer, trace.completion_ids)
            if "".join(raw.split()) != "".join(trace.completion_text.split()):
                raise TokenizerMismatch(f"{trace.key}: the completion's token ids do not decode to its stored "
                                        "text under the sampling tokenizer: the trace comes from another tokenizer")


def _tokens_before(tokenizer, ids: Sequence[int], pos: int) -> int:
    """The largest k with ``len(decode(ids[:k])) <= pos`` (binary search; decoded length grows with k)."""
    lo, hi = 0, len(ids)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(_decode(tokenizer, ids[:mid])) <= pos:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _tokens_through(tokenizer, ids: Sequence[int], pos: int) -> int:
    """The smallest k with ``len(decode(ids[:k])) >= pos``."""
    lo, hi = 0, len(ids)
    while lo < hi:
        mid = (lo + hi) // 2
        if len(_decode(tokenizer, ids[:mid])) >= pos:
            hi = mid
        else:
            lo = mid + 1
    return lo


def think_close_id(tokenizer) -> int | None:
    """The token id of ``</think>`` when the tokenizer has it as one token (a special or added token of a
    native reasoner's tokenizer), else None (the tag is spelled in several ordinary tokens).

    With such a token the reasoning end is found from the token ids, not from decoded text: an engine that
    skips special tokens when detokenising would drop the tag from the text."""
    try:
        ids = tokenizer.encode(_CLOSE, add_special_tokens=False)
    except Exception:  # noqa: BLE001 - a toy tokenizer without encode: read from the text
        return None
    return int(ids[0]) if len(ids) == 1 else None


def find_reasoning(completion_ids: Sequence[int], tokenizer, native: bool | None = None) -> Reasoning:
    """Split a completion into head, reasoning tokens and answer tokens (see the module docstring).

    ``native`` forces the reading (True: ``<think>`` rules; False: answer statement); None decides from the
    text (``</think>`` or ``<think>`` present -> native).

    >>> class Chars:  # a toy tokenizer: one token per character
    ...     def decode(self, ids, skip_special_tokens=False): return "".join(map(chr, ids))
    >>> r = find_reasoning([ord(c) for c in "2+2=4. The answer is 4."], Chars())
    >>> r.text, r.answer_text, r.how
    ('2+2=4. ', 'The answer is 4.', 'answer-statement')
    >>> r = find_reasoning([ord(c) for c in "<think>hmm</think>4"], Chars())
    >>> r.text, r.answer_text, len(r.head), r.native
    ('hmm', '</think>4', 7, True)
    """
    ids = [int(t) for t in completion_ids]
    text = _decode(tokenizer, ids)
    close_id = think_close_id(tokenizer)
    has_think = _CLOSE in text or _OPEN in text or (close_id is not None and close_id in ids)
    native = has_think if native is None else native
    k_head = 0
    if native and close_id is not None and close_id in ids:  # the reasoning ends at the </think> token itself
        o = text.find(_OPEN)
        k_end = ids.index(close_id)
        if 0 <= o and _tokens_through(tokenizer, ids, o + len(_OPEN)) <= k_end:
            k_head, how = _tokens_through(tokenizer, ids, o + len(_OPEN)), "think"
        else:
            how = "close-only"
    elif native and has_think:
        o = text.find(_OPEN)
        c = text.find(_CLOSE, o + len(_OPEN) if o >= 0 else 0)
        if o >= 0 and (c < 0 or o < c):
            k_head = _tokens_through(tokenizer, ids, o + len(_OPEN))
        if c >= 0:
            k_end, how = _tokens_before(tokenizer, ids, c), ("think" if o >= 0 and o < c else "close-only")
        else:
            k_end, how = len(ids), "unclosed"
    else:
        last = None
        for last in ANSWER_STATEMENT.finditer(text):
            pass
        if last is not None:
            k_end, how = _tokens_before(tokenizer, ids, last.start()), "answer-statement"
        else:
            k_end, how = len(ids), "whole"
    k_end = max(k_end, k_head)
    head, tokens, answer = tuple(ids[:k_head]), tuple(ids[k_head:k_end]), tuple(ids[k_end:])
    return Reasoning(head, tokens, answer, how, bool(native), _decode(tokenizer, tokens), _decode(tokenizer, answer))


def checkpoint_positions(k: int, stride: int) -> list[int]:
    """J = {0, s, 2s, ...} plus K always.

    >>> checkpoint_positions(40, 16)
    [0, 16, 32, 40]
    >>> checkpoint_positions(32, 16)
    [0, 16, 32]
    >>> checkpoint_positions(0, 16)
    [0]
    """
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    if k < 0:
        raise ValueError(f"K must be >= 0, got {k}")
    pos = list(range(0, k + 1, stride))
    if pos[-1] != k:
        pos.append(k)
    return pos


def checkpoints(reasoning: Reasoning, stride: int, tokenizer, max_reasoning_tokens: int = 0) -> list[Checkpoint]:
    """The checkpoints of a reasoning, with the character offset of each prefix in ``reasoning.text``.

    ``max_reasoning_tokens`` > 0 caps the positions (a reduced budget for demonstrations): positions above
    the cap are dropped and the cap itself becomes the last checkpoint.
    """
    k = reasoning.k if max_reasoning_tokens <= 0 else min(reasoning.k, max_reasoning_tokens)
    return [Checkpoint(i, j, len(_decode(tokenizer, reasoning.tokens[:j])))
            for i, j in enumerate(checkpoint_positions(k, stride))]


def _ids(value: Any, what: str, key: str) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, int) and not isinstance(t, bool) for t in value):
        raise TraceError(f"{key}: {what} must be a list of integer token ids")
    return tuple(value)


def realized_from_unit(doc: Mapping[str, Any], tokenizer=None, task: str | None = None,
                       gold: str | None = None) -> RealizedTrace:
    """A :class:`RealizedTrace` from a collected trace unit file (``results/traces/...json``).

    The collection stage writes ``generation: {prompt, token_ids, response, ...}`` and ``question: {task,
    gold, ...}``. Read: the completion's token ids (``generation.token_ids``, or ``completion_token_ids``),
    the prompt (``generation.prompt_token_ids``, else the text ``generation.prompt`` tokenised verbatim
    without special tokens, as the engine does), the stored completion text (``generation.response``, used
    to check the tokenizer), why the collection stopped (``generation.finish_reason``: ``length`` when the
    trace was cut by its budget; in ``extra``), the tokenizer fingerprint (``tokenizer_sha256``) when recorded, and task and
    gold from the arguments or the unit's ``question``. Raises :class:`TraceError` naming the unit when
    something is missing.
    """
    unit = doc.get("unit") or {}
    key = unit_path(unit, missing="?")
    if doc.get("status") != "ok":
        raise TraceError(f"{key}: the trace unit is {doc.get('status')!r}: {doc.get('reason') or 'no reason given'}")
    places = [doc.get("generation") or {}, doc, doc.get("trace") or {}, doc.get("question") or {}]

    def find(*names: str) -> Any:
        for place in places:
            if isinstance(place, Mapping):
                for name in names:
                    if place.get(name) is not None:
                        return place[name]
        return None

    comp = find("completion_token_ids", "token_ids", "output_token_ids")
    if comp is None:
        raise TraceError(f"{key}: the trace has no completion token ids (a trace imported as text cannot be "
                         "cut into token checkpoints; collect it with thinkprobe)")
    prompt = find("prompt_token_ids")
    if prompt is None:
        text = find("prompt", "prompt_text")
        if not isinstance(text, str) or tokenizer is None:
            raise TraceError(f"{key}: the trace has neither prompt token ids nor a prompt text")
        prompt = tokenizer.encode(text, add_special_tokens=False)
    prov = doc.get("provenance") or {}
    fp = find("tokenizer_sha256") or prov.get("tokenizer_sha256")
    ctext = find("completion_text", "response", "raw_text")
    variant = prov.get("prompt_variant") or find("prompt_variant")
    finish = find("finish_reason")
    extra = {k: v for k, v in (("prompt_variant", variant), ("finish_reason", finish)) if isinstance(v, str)}
    return RealizedTrace(str(unit.get("model", "")), str(unit.get("question_set", "")),
                         str(unit.get("question_id", "")), str(unit.get("run", "")),
                         _ids(prompt, "prompt token ids", key), _ids(comp, "completion token ids", key),
                         ctext if isinstance(ctext, str) else None, fp if isinstance(fp, str) else None,
                         task or find("task"), gold if gold is not None else find("gold"), extra)
