"""Trace generation: one engine interface (vLLM, OpenAI-compatible endpoints), question sets and benchmark loaders.

Modules: ``interface`` (the engine interface and its dataclasses, a leaf), ``engine`` (:func:`open_engine`,
the factory), ``vllm_engine`` and ``http_engine`` (the two backends, imported only when opened), ``models``
(local model folders; SmolLM2 built in), ``hub`` (the Hugging Face cache), ``reasoning`` (reasoning/answer
split, looping detection), ``plan`` (collection planning at parse time), ``collect`` (the collection job),
``records`` (question records, reading question files), ``datasets`` (question sets by hub id),
``dataset_fetch`` (rule ``fetch_dataset``), ``questions`` (question sets, benchmark loaders), ``prompts``
(prompt variants and answer formats) and ``planner`` (the study planner, ``thinkprobe plan``).
"""

from .engine import Completion, Engine, EngineError, Generation, SamplingSpec, open_engine

__all__ = ["Completion", "Engine", "EngineError", "Generation", "SamplingSpec", "open_engine"]
