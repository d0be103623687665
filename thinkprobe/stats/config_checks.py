"""The ``stats`` section's checks that the schema cannot make, run with the configuration before any job.

``config/schema.yaml`` names :func:`config_problems` in the ``stats`` block (``x-checks-from``), and
:func:`thinkprobe.config.validate_config` runs it: the configuration layer names no statistics module, the
statistics provide their own checks (docs/development.md, "Layers and imports").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def config_problems(config: dict[str, Any], base: str | Path = ".") -> list[str]:
    """A second encoder (``stats.sensitivity_encoder``) not available here; a ``stats.permutations`` too small
    for ``stats.permutation_mcse_max``. Each problem names its key; loads no model."""
    problems: list[str] = []
    stats = config.get("stats") if isinstance(config.get("stats"), dict) else {}
    second = stats.get("sensitivity_encoder")
    if second and isinstance(second, str):
        from .sensitivity import second_encoder_problem

        problem = second_encoder_problem(second)
        if problem:
            problems.append(f"stats.sensitivity_encoder = {second!r}: not available: {problem}")
    perms, bound = stats.get("permutations"), stats.get("permutation_mcse_max")
    if isinstance(perms, int) and isinstance(bound, (int, float)) and 0 < bound < 0.5:
        from .permutation import check_permutations

        try:
            check_permutations(perms, bound)
        except ValueError as exc:
            problems.append(str(exc))
    return problems
