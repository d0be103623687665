"""The checks of the ``models:`` entries that the schema cannot make, each by the entry's backend.

First the keys of every entry, against the backend registry (:func:`thinkprobe.generate.modelspec.entry_problems`,
their one home: the schema lists the keys but leaves this check to it).

Named by the ``models`` block of ``config/schema.yaml`` (``x-checks-from``) and run by
:func:`thinkprobe.config.validate_config`, before any job starts: every model a collection job (or enabled
trajectories) will open is checked by its backend's ``problems`` (:mod:`thinkprobe.generate.backends`: a vLLM
model must be loadable offline here, a replay file must exist), and a model the trajectories sample must be of
a backend that samples continuations. An unknown backend is the schema's error (its enum is the registry), not
repeated here.
"""

from __future__ import annotations

import os
from typing import Any

from . import backends
from .modelspec import ModelSpec, ModelSpecError, entry_problems


def config_problems(config: dict[str, Any], base: str | os.PathLike = ".") -> list[str]:
    """The key problems of every model entry (:func:`~thinkprobe.generate.modelspec.entry_problems`: an unknown
    or renamed key), then the problems of the models the configured work uses, each naming its key."""
    models = config.get("models") if isinstance(config.get("models"), dict) else {}
    keys = [p for name, entry in sorted(models.items()) if isinstance(entry, dict)
            for p in entry_problems(name, entry, planned=False)]
    jobs = (config.get("collection") or {}).get("jobs") if isinstance(config.get("collection"), dict) else None
    used = {str(j.get("model")) for j in jobs or [] if isinstance(j, dict)}
    traj = config.get("trajectories") if isinstance(config.get("trajectories"), dict) else {}
    sampled = {str(m) for m in traj.get("models") or []} if traj.get("enabled") else set()
    problems = keys
    for name in sorted((used | sampled) & set(models)):
        entry = models[name] if isinstance(models[name], dict) else {}
        try:
            backend = ModelSpec.from_config(name, entry).kind
        except (ModelSpecError, backends.UnknownBackend):  # named above, or by the schema (its backend enum)
            continue
        problems += backend.problems(name, entry, str(base))
        if name in sampled and not backend.continuations:
            problems.append(f"models.{name}: backend {backend.name} samples no continuations (trajectories.models "
                            f"names it); backends that do: {', '.join(backends.continuation_names())}")
    return problems

