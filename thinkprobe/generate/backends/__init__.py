"""The model backends: one file per backend, each declaring everything about it.

A backend (``thinkprobe/generate/backends/<name>.py``) declares, in one ``BACKEND = Backend(...)``
(:class:`~thinkprobe.generate.backends._backend.Backend`): how its engine is opened, the keys of a ``models:``
entry it reads and their defaults, the resources its jobs need (GPUs, the weights in the job's memory), what
enters a protected continuation batch's identity, and the checks of its entries. The schema's backend enum
(``x-enum-from``, :mod:`thinkprobe.config`), :func:`thinkprobe.generate.engine.open_engine`, the job resources
(:mod:`thinkprobe.generate.jobres`, :mod:`thinkprobe.generate.collection_jobs`), the start-up checks
(:mod:`thinkprobe.generate.models`, :mod:`thinkprobe.study.study_checks`) and the protection check
(:mod:`thinkprobe.protect`) read this registry; an unknown backend is an error naming the known ones
(docs/adding-a-backend.md).

The registry follows the project's layout (DESIGN.md section 2): a dict filled by :func:`register` (with each
backend file's ``BACKEND``), :func:`get` raising an error that names the known members, :func:`names`. A backend
file imports only :mod:`._backend` and its defaults, never this module nor its engine at import time, so
importing the registry starts nothing and no import goes in a circle.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..interface import EngineError
from ._backend import Backend  # noqa: F401 - re-exported: what a backend file declares


class UnknownBackend(EngineError, ValueError):
    """A backend name that no file of :mod:`thinkprobe.generate.backends` registers."""


_REGISTRY: dict[str, Backend] = {}


def register(backend: Backend) -> Backend:
    """Add ``backend`` to the registry (each backend file's ``BACKEND``, below; a test's own); a second backend
    of one name is refused."""
    if backend.name in _REGISTRY and _REGISTRY[backend.name] is not backend:
        raise ValueError(f"backend {backend.name!r} is registered twice")
    _REGISTRY[backend.name] = backend
    return backend


def get(name: Any) -> Backend:
    """The backend called ``name``; an unknown name raises :class:`UnknownBackend` naming the known ones.

    >>> get("vllm").loads_weights
    True
    >>> get("tgi")
    Traceback (most recent call last):
    ...
    thinkprobe.generate.backends.UnknownBackend: unknown backend 'tgi': known backends are openai, replay, vllm
    """
    if name not in _REGISTRY:
        raise UnknownBackend(f"unknown backend {name!r}: known backends are {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def of(model_cfg: Mapping[str, Any]) -> Backend:
    """The backend of a model's entry (its ``backend`` key); an unknown one raises :class:`UnknownBackend`
    naming the model and the known backends."""
    try:
        return get(model_cfg.get("backend"))
    except UnknownBackend as exc:
        raise UnknownBackend(f"model {model_cfg.get('name', '?')!r}: {exc}") from None


def identity_settings(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The engine settings of a stated entry, or of a stored record of one, that enter a protected batch's
    identity (its backend's :meth:`Backend.engine_settings`); none for a backend no file registers (an old
    record), so a record is read whatever wrote it.

    >>> identity_settings({"backend": "openai"}), identity_settings({"backend": "gone"})
    ({'max_model_len': None, 'return_token_ids': 'auto'}, {})
    """
    name = entry.get("backend")
    return _REGISTRY[name].engine_settings(entry) if name in _REGISTRY else {}


def names() -> list[str]:
    """Every backend, sorted (the schema's enum of a model's ``backend``)."""
    return sorted(_REGISTRY)


def named_backends() -> list[str]:
    """The backends that sample continuations and open a model from its name alone (``Backend.named``:
    ``thinkprobe trajectory --backend``), sorted."""
    return [n for n in continuation_names() if _REGISTRY[n].named is not None]


def continuation_names() -> list[str]:
    """The backends that sample the trajectories' continuations (one row each in docs/sampling-store.md)."""
    return [n for n in names() if _REGISTRY[n].continuations]


from . import openai, replay, vllm  # noqa: E402 - every backend file

for _module in (openai, replay, vllm):
    register(_module.BACKEND)
