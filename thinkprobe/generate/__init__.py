"""Trace generation: one engine interface (vLLM, OpenAI-compatible endpoints), question sets and benchmark loaders.

Modules: ``interface`` (the engine interface and its dataclasses, a leaf), ``engine`` (``open_engine``, the
factory), ``backends`` (the registry of model backends, one file each: docs/adding-a-backend.md),
``vllm_engine`` and ``http_engine`` (the engines of two of them, imported only when opened), ``models``
(local model folders; SmolLM2 built in), ``hub`` (the Hugging Face cache), ``reasoning`` (reasoning/answer
split, looping detection), ``collection_jobs`` (the collection jobs, planned at parse time), ``unit_store`` (the
collection job's store of finished units; the job itself is :mod:`thinkprobe.stages.collect`), ``records``
(question records, reading question files), ``datasets`` (question sets by hub id), ``dataset_fetch`` (rule
``fetch_dataset``), ``questions`` (question sets, benchmark loaders), ``prompts`` (prompt variants and answer
formats) and ``jobres`` (a generation job's resources). The study planner, which needs trajectories too, is
:mod:`thinkprobe.study.planner`, a layer above.
"""

# The interface only, not the factory: importing the package (which every module of it does) must not import
# the registry and every backend's declaration, and the sampling code's walk (trajectories.sampling, which
# reads a package's __init__) must not reach them: they decide no sample (docs/sampling-store.md).
# The factory is thinkprobe.generate.engine.open_engine.
from .interface import Completion, Engine, EngineError, Generation, SamplingSpec

__all__ = ["Completion", "Engine", "EngineError", "Generation", "SamplingSpec"]
