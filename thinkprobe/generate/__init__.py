"""Trace generation: one engine interface (vLLM, OpenAI-compatible endpoints), question sets and benchmark loaders.

Modules: ``engine`` (the interface and :func:`open_engine`), ``vllm_engine`` and ``http_engine`` (the two
backends, imported only when opened), ``models`` (local model folders; SmolLM2 built in), ``reasoning``
(reasoning/answer split, looping detection), ``plan`` (collection planning at parse time), ``collect`` (the
collection job), ``questions`` (question sets, benchmark loaders, prompt variants).
"""

from .engine import Completion, Engine, EngineError, Generation, SamplingSpec, open_engine

__all__ = ["Completion", "Engine", "EngineError", "Generation", "SamplingSpec", "open_engine"]
