"""The generation interface every backend implements, and what it exchanges: a leaf module.

:class:`Engine` (what a backend provides), :class:`SamplingSpec` (one prompt's sampling parameters),
:class:`Generation` and :class:`Completion` (what comes back) and :class:`EngineError` (a fault of the engine
itself). The backends (:mod:`thinkprobe.generate.vllm_engine`, :mod:`thinkprobe.generate.http_engine`)
import these names from here, and :func:`thinkprobe.generate.engine.open_engine` imports the backends, so
the factory and its backends form no import circle. Callers may import the names from either module
(:mod:`thinkprobe.generate.engine` re-exports them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable


class EngineError(RuntimeError):
    """The engine cannot be opened or used at all (bad backend, missing key, model that does not load)."""


@dataclass(frozen=True)
class SamplingSpec:
    """One prompt's sampling parameters: ``n`` completions of at most ``max_tokens`` tokens.

    ``seed`` makes the request reproducible on vLLM for an identical call (same prompts, same batch make-up);
    ``None`` leaves it to the engine.
    """

    n: int = 1
    temperature: float = 0.6
    top_p: float = 0.95
    max_tokens: int = 512
    seed: int | None = None
    stop: tuple[str, ...] = ()
    skip_special_tokens: bool = True  # False: special tokens (e.g. a </think> token) stay in the text

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "temperature": self.temperature, "top_p": self.top_p,
                "max_tokens": self.max_tokens, "seed": self.seed, "stop": list(self.stop),
                **({} if self.skip_special_tokens else {"skip_special_tokens": False})}


@dataclass
class Completion:
    """One sampled completion: its text, the model's own token ids, and why it ended.

    ``finish_reason`` is ``"stop"`` (end of sequence or a stop string), ``"length"`` (``max_tokens`` or the
    context reached) or ``"error"``. ``reasoning`` is set by the HTTP backend when the server separated the
    reasoning (``reasoning_content``/``reasoning``) from the answer; the offline engine leaves it ``None``
    and returns the raw text, from which :mod:`thinkprobe.generate.reasoning` separates them.

    ``has_token_ids`` is False when the backend got no token ids for it (an endpoint that does not return
    them): ``token_ids`` is then empty, and ``n_tokens`` holds the count the server reported (its ``usage``,
    for a single completion), or None when it is unknown. Whoever reads the reasoning end must then read it
    from the text (:mod:`thinkprobe.trajectories.sampling`).
    """

    text: str
    token_ids: list[int]
    finish_reason: str
    reasoning: str | None = None
    stop_reason: str | int | None = None  # the stop string (str) or stop token id that ended it, when known
    has_token_ids: bool = True
    n_tokens: int | None = None  # without token ids: the server's count, when it gives one

    @property
    def token_count(self) -> int | None:
        """Tokens generated: from the ids when they came back, else the server's count (None: unknown)."""
        return len(self.token_ids) if self.has_token_ids else self.n_tokens


@dataclass
class Generation:
    """The result for one prompt: its completions, prompt size, prefix-cache reuse and wall time.

    ``cached_tokens`` is the number of prompt tokens served from the prefix cache (``None`` when the backend
    does not say). ``seconds`` is the wall time of the call that produced it (shared by a batch). ``info``
    may hold ``prompt_token_ids`` (the exact prompt tokens, when the backend knows them), ``max_tokens``
    (when the requested ``max_tokens`` was cut to what the context leaves) and ``transient`` (True when
    ``error`` is a fault of the engine or endpoint, e.g. 5xx after the retries, that a rerun may not repeat;
    absent for faults of the prompt itself).
    """

    completions: list[Completion]
    prompt_tokens: int
    cached_tokens: int | None
    seconds: float
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Engine(Protocol):
    """What every backend provides."""

    backend: str
    model: str
    version: str
    max_model_len: int

    def tokenizer(self) -> Any:
        """A Hugging Face tokenizer of the model (encode/decode/apply_chat_template)."""

    def generate(self, prompts: Sequence[str | Sequence[int]],
                 sampling: Sequence[SamplingSpec]) -> list[Generation]:
        """Sample every prompt in ONE engine call; one :class:`Generation` per prompt, in order.

        A prompt given as token ids is used verbatim (no re-tokenisation). A prompt given as text is
        tokenised as is, WITHOUT adding special tokens (a chat-templated prompt already carries them).
        """

    def close(self) -> None:
        """Release the engine (GPU memory, worker processes, HTTP sessions)."""
