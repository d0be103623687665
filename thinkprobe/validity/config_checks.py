"""The ``validity`` section's checks that the schema cannot make, run with the configuration before any job.

``config/schema.yaml`` names :func:`config_problems` in the ``validity`` block (``x-checks-from``): two sets of
one name (they would share a folder under results/validity/), a path or mapping file that is not there, a
mapping declared for another format than its set's. Each problem names the set and its key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def config_problems(config: dict[str, Any], base: str | Path = ".") -> list[str]:
    problems: list[str] = []
    section = config.get("validity") if isinstance(config.get("validity"), dict) else {}
    seen: set[str] = set()
    for i, entry in enumerate(section.get("sets") or []):
        if not isinstance(entry, dict):
            continue
        where = f"validity.sets[{i}] ({entry.get('name')})"
        if entry.get("name") in seen:
            problems.append(f"{where}.name: another set has this name (each set writes results/validity/<name>/)")
        seen.add(entry.get("name"))
        for key in ("path", "mapping"):
            value = entry.get(key)
            if isinstance(value, str) and not (Path(base) / value).exists():
                problems.append(f"{where}.{key} = {value!r}: no such file or folder")
        mapping = entry.get("mapping")
        if isinstance(mapping, str) and (Path(base) / mapping).is_file():
            from . import mapping as mapping_mod

            try:
                m = mapping_mod.load(Path(base) / mapping)
            except (OSError, ValueError, KeyError) as exc:
                problems.append(f"{where}.mapping: {exc}")
                continue
            if m.format != entry.get("format"):
                problems.append(f"{where}.mapping = {mapping!r}: a mapping for format {m.format!r}, not "
                                f"{entry.get('format')!r}")
    return problems
