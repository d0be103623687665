"""Cross-section checks of a configuration at planning time, before any job: names that must exist elsewhere.

The schema checks each value on its own; these checks need what the inputs and the collection plan hold:

* every ``units.models`` entry is a model of the inputs or a collected model (a typo would otherwise add a
  model whose every unit is ``missing``, silently, whenever collection supplies the rest of the grid);
* every ``trajectories.models`` x ``trajectories.question_sets`` pair is collected by ``collection.jobs``
  (its realized traces come from the collection rules; otherwise Snakemake stops later with a raw
  ``MissingInputException``).
"""

from __future__ import annotations

from typing import Iterable

from .traces import safe_id


def unknown_grid_models(configured: Iterable[str], found_models: Iterable[str], collected: Iterable[str]) -> str | None:
    """The error for ``units.models`` entries that name no model of the inputs or the collection, or None."""
    have = {safe_id(str(m)) for m in found_models} | {safe_id(str(m)) for m in collected}
    unknown = [str(m) for m in configured if safe_id(str(m)) not in have]
    if not unknown:
        return None
    return (f"units.models: {unknown} name no model of the inputs ({sorted(set(map(str, found_models))) or 'none'}) "
            f"and no collected model (collection.jobs: {sorted(set(map(str, collected))) or 'none'})")


def uncollected_trajectories(models: Iterable[str], question_sets: Iterable[str],
                             collected_pairs: Iterable[tuple[str, str]]) -> str | None:
    """The error for trajectory model x question set pairs that no collection job produces, or None."""
    pairs = set(collected_pairs)
    missing = [f"{m} x {q}" for m in models for q in question_sets if (m, q) not in pairs]
    if not missing:
        return None
    have = ", ".join(f"{m} x {q}" for m, q in sorted(pairs)) or "none"
    return (f"trajectories: {', '.join(missing)} is not collected (the realized traces come from collection.jobs, "
            f"which collects: {have}); add a collection job or remove it from trajectories.models/question_sets")
