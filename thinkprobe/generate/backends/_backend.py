"""What a model backend declares (:class:`Backend`): a leaf module that the backend files import.

A backend file (``thinkprobe/generate/backends/<name>.py``) holds one ``BACKEND = Backend(...)``: how its engine
is opened, which keys of a ``models:`` entry it reads and their defaults, what a job of it needs (GPUs, the
model's weights in the job's memory), which engine settings enter a protected continuation batch's identity
(:func:`thinkprobe.protect.identity`), and the checks of its entries that the schema cannot make. Everything
else reads these declarations through the registry (:mod:`thinkprobe.generate.backends`), so no module
outside it branches on a backend's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

from ..interface import Engine


def _none(model: Mapping[str, Any]) -> int:
    return 0


def _no_problems(name: str, entry: Mapping[str, Any], base: str) -> list[str]:
    return []


@dataclass(frozen=True)
class Backend:
    """One model backend.

    ``open(spec)`` opens the engine of a model's :class:`~thinkprobe.generate.modelspec.ModelSpec` (importing it
    lazily: the registry imports no engine). ``keys`` are the
    keys of a ``models:`` entry this backend reads (keys no backend declares are common to all), ``defaults`` their
    defaults (their one home is :mod:`thinkprobe.generate.defaults`; this names them, never repeats them);
    ``renamed`` its keys that were renamed (old -> new: an entry with the old key is refused naming the new one,
    :func:`thinkprobe.generate.modelspec.entry_problems`).
    ``settings(model_cfg)`` is the entry's engine settings with those defaults merged (the one merge: the spec
    holds it as ``ModelSpec.settings``, which the engines read), and ``identity_keys`` the settings that change
    which continuations are sampled, cut or recorded: they
    go into a protected batch's identity (:data:`thinkprobe.protect.PARTS`), performance knobs do not.

    Resources: ``gpus(model)`` is the GPUs one generation job asks SLURM for; ``loads_weights`` says the job holds
    the model's weights itself (its memory is sized for them, its folder or hub id is checked before any job
    starts); ``hub`` that it loads models by ``hub_id``. ``continuations``: it can sample the trajectories'
    continuations (a backend whose sampling code is keyed in ``trajectories.sampling.BACKEND_CODE``).
    ``lazy(spec, log)`` returns an engine whose identity is known without starting it, or None, from the model's
    :class:`~thinkprobe.generate.modelspec.ModelSpec` (not imported by a backend file: the spec imports the registry)
    (:func:`thinkprobe.generate.engine.engine_for_work`). ``problems(name, entry, base)`` are the checks of one
    used entry that the schema cannot make (a model folder missing on this machine), each naming its key.
    ``named(model)`` is the entry of a model named by one string on the command line (``thinkprobe trajectory
    --model``: vLLM's path or built-in name), or None where a model needs its config entry.
    """

    name: str
    description: str
    open: Callable[[Any], Engine]
    keys: tuple[str, ...] = ()
    renamed: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    defaults: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    settings: Callable[[Mapping[str, Any]], Mapping[str, Any]] = lambda model: {}
    identity_keys: tuple[str, ...] = ()
    gpus: Callable[[Mapping[str, Any]], int] = _none
    loads_weights: bool = False
    hub: bool = False
    continuations: bool = False
    lazy: Callable[..., Engine | None] | None = None
    problems: Callable[[str, Mapping[str, Any], str], list[str]] = _no_problems
    named: Callable[[str], dict[str, Any]] | None = None

    def engine_settings(self, model_cfg: Mapping[str, Any]) -> dict[str, Any]:
        """The :attr:`identity_keys` of a model's settings (defaults merged: stating a default and leaving it
        out are the same setting)."""
        values = self.settings(model_cfg)
        return {k: values.get(k) for k in self.identity_keys}
