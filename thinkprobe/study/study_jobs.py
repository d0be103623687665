"""The study-wide jobs of a run: the tables, statistics, figures and pages that read the whole study, one job
each, counted as the workflow's default target (``rule all``, Snakefile) plans them, and which of them SLURM runs.

The planner (:mod:`thinkprobe.study.planner`) counts them so that its SLURM jobs are what the run submits
(``tests/test_plan_vs_dryrun.py`` compares both with ``snakemake -n``). Which rules are study-wide, under which
condition the default target runs them, and whether each runs in the Snakemake process (``localrules``) is
declared once in :data:`thinkprobe.rulebook.RULES` (``Rule.study``, ``Rule.local``), which the rule files read
too; this module only evaluates the conditions on a configuration (:func:`conditions`):

* ``always``: the tables, profiles, report figures and pages (``aggregate``, ``profiles``, ``figures``,
  ``report_tables``, ``model_summaries``: one job writes every model's page);
* ``pages``: ``pages.enabled`` (``trace_pages``: one job, every sampled unit's page);
* ``stats``: ``stats.enabled`` (one job per statistics rule and one ``stats_fig_<name>`` per figure of
  :data:`thinkprobe.rulebook.STATS_FIGURES`); ``stats.sensitivity`` also needs ``stats.sensitivity_encoder``;
  ``stats.agreement`` an input read through the ``steering-thinking-llms`` adapter that names files
  (:func:`agreement_files`, which ``rules/stats.smk`` reads its ``AGREEMENT_FILES`` with);
* ``trajectories``: ``trajectories.enabled`` with at least one sampling batch (``traj_tables``, ``traj_join``);
* ``validity.compare_typers``: ``aggregate_typer``, ``profiles_typer``, ``typer_comparison`` (rules/validity.smk;
  its per-batch ``graph_typer`` and ``metrics_typer`` are counted with the analysis batches). The jobs of
  ``validity.sets`` (``validate_set``, one per set and typer) are not study-wide: the planner counts them in a
  row of their own.

No rule file is read: the package needs no checkout for this count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from .. import rulebook

AGREEMENT_ADAPTER = "steering-thinking-llms"


def agreement_files(inputs: Iterable[Mapping[str, Any]], base: str | Path = ".") -> list[str]:
    """The files of the ``inputs`` entries read through the corpus adapter (git entries resolved to their
    clones), a relative path under ``base``: the inputs of ``stats_agreement`` (rules/stats.smk ``AGREEMENT_FILES``)."""
    from ..units import input_roots

    roots = [Path(e["path"]) for e in inputs if e.get("adapter") == AGREEMENT_ADAPTER]
    return sorted({str(f) for p in roots for f in input_roots(p if p.is_absolute() else Path(base) / p)})


def _has_agreement_files(config: Mapping[str, Any], base: str | Path) -> bool:
    from ..corpus_git import corpus_cache, resolve_inputs

    entries = [e for e in config.get("inputs") or [] if e.get("adapter") == AGREEMENT_ADAPTER]
    if not entries:
        return False
    resolved, _pending, _problems = resolve_inputs(entries, corpus_cache(config["resources"]["corpus_cache"]))
    return bool(agreement_files(resolved, base))


def conditions(config: Mapping[str, Any], sampling_batches: int, base: str | Path = ".") -> dict[str, bool]:
    """Each condition of :data:`thinkprobe.rulebook.STUDY_WHEN` -> whether it holds for this study."""
    stats = config["stats"]
    when = {
        "always": True,
        "pages": bool(config["pages"]["enabled"]),
        "stats": bool(stats["enabled"]),
        "stats.sensitivity": bool(stats["enabled"] and stats["sensitivity_encoder"]),
        "stats.agreement": bool(stats["enabled"]) and _has_agreement_files(config, base),
        "trajectories": bool(config["trajectories"]["enabled"] and sampling_batches),
        "validity.compare_typers": bool(config["validity"]["compare_typers"]),
    }
    if set(when) != set(rulebook.STUDY_WHEN):
        raise ValueError(f"thinkprobe.study.study_jobs.conditions evaluates {sorted(when)}, but the rule book's "
                         f"conditions are {sorted(rulebook.STUDY_WHEN)}: teach it the new one")
    return when


def study_rules(config: Mapping[str, Any], sampling_batches: int, base: str | Path = ".") -> list[str]:
    """The study-wide rules the default target runs (one job each), in the order of the rule book."""
    return rulebook.study_rules(conditions(config, sampling_batches, base))


def study_jobs(config: Mapping[str, Any], sampling_batches: int, base: str | Path = ".") -> dict[str, bool]:
    """Each study-wide rule -> whether it is a SLURM job (False: it runs in the Snakemake process)."""
    return {rule: not rulebook.is_local(rule, config) for rule in study_rules(config, sampling_batches, base)}
