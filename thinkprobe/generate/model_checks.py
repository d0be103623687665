"""The checks of the ``models:`` entries that the schema cannot make, each by the entry's backend.

Named by the ``models`` block of ``config/schema.yaml`` (``x-checks-from``) and run by
:func:`thinkprobe.config.validate_config`, before any job starts: every model a collection job (or enabled
trajectories) will open is checked by its backend's ``problems`` (:mod:`thinkprobe.generate.backends`: a vLLM
model must be loadable offline here, a replay file must exist), and a model the trajectories sample must be of
a backend that samples continuations. A key that only other backends read (``base_url`` on a vLLM model,
``engine`` on an endpoint) is refused for every entry, naming the backends it belongs to: it would be ignored
silently. An unknown backend is the schema's error (its enum is the registry), not repeated here.
"""

from __future__ import annotations

import os
from typing import Any

from . import backends


def config_problems(config: dict[str, Any], base: str | os.PathLike = ".") -> list[str]:
    """The problems of the models the configured work uses, each naming its key."""
    models = config.get("models") if isinstance(config.get("models"), dict) else {}
    jobs = (config.get("collection") or {}).get("jobs") if isinstance(config.get("collection"), dict) else None
    used = {str(j.get("model")) for j in jobs or [] if isinstance(j, dict)}
    traj = config.get("trajectories") if isinstance(config.get("trajectories"), dict) else {}
    sampled = {str(m) for m in traj.get("models") or []} if traj.get("enabled") else set()
    problems = foreign_keys(models)
    for name in sorted((used | sampled) & set(models)):
        entry = models[name] if isinstance(models[name], dict) else {}
        if entry.get("backend") not in backends.names():
            continue
        backend = backends.of(entry)
        problems += backend.problems(name, entry, str(base))
        if name in sampled and not backend.continuations:
            problems.append(f"models.{name}: backend {backend.name} samples no continuations (trajectories.models "
                            f"names it); backends that do: {', '.join(backends.continuation_names())}")
    return problems


def foreign_keys(models: dict[str, Any]) -> list[str]:
    """One problem per key of an entry that its backend does not read but another backend declares
    (:attr:`~thinkprobe.generate.backends.Backend.keys`; keys no backend declares are common to all).

    >>> foreign_keys({"m": {"backend": "vllm", "path": "smollm2", "base_url": "http://h/v1"}})
    ['models.m.base_url: a key of backend openai, not of vllm (the backend of models.m)']
    """
    problems = []
    for name, entry in sorted(models.items()):
        if not isinstance(entry, dict) or entry.get("backend") not in backends.names():
            continue
        own = set(backends.of(entry).keys)
        for key in sorted(entry):
            owners = [n for n in backends.names() if key in backends.get(n).keys]
            if owners and key not in own:
                problems.append(f"models.{name}.{key}: a key of backend {' and '.join(owners)}, not of "
                                f"{entry['backend']} (the backend of models.{name})")
    return problems
