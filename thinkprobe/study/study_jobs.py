"""The study-wide jobs of a run: the tables, statistics, figures and pages that read the whole study, one job
each, counted as the workflow's default target (``rule all``, Snakefile) plans them, and which of them SLURM runs.

The planner (:mod:`thinkprobe.study.planner`) counts them so that its SLURM jobs are what the run submits
(``tests/test_plan_vs_dryrun.py`` compares both with ``snakemake -n``). Which rules the default target reaches
follows the Snakefile's ``all`` and the rule files:

* always: ``aggregate``, ``profiles`` (rules/metrics.smk), ``figures``, ``report_tables`` (rules/report.smk),
  ``model_summaries`` (rules/pages.smk: one job writes every model's page);
* ``pages.enabled``: ``trace_pages`` (one job, every sampled unit's page);
* ``stats.enabled`` (rules/stats.smk ``STATS_TARGETS``): one job per statistics rule, ``stats_sensitivity`` only
  with ``stats.sensitivity_encoder``, ``stats_agreement`` only when an input read through the
  ``steering-thinking-llms`` adapter names files (``AGREEMENT_FILES``), and one ``stats_fig_<name>`` per entry of
  ``STATS_FIGURES``;
* ``trajectories.enabled`` with at least one sampling batch: ``traj_tables``, ``traj_join``
  (rules/trajectories.smk ``TRAJ_TARGETS``);
* ``validity.compare_typers``: ``aggregate_typer``, ``profiles_typer``, ``typer_comparison`` (rules/validity.smk;
  its per-batch ``graph_typer`` and ``metrics_typer`` are counted with the analysis batches). The jobs of
  ``validity.sets`` (``validate_set``, one per set and typer, and the target ``validate``) are not counted.

Whether a rule is a SLURM job or runs in the Snakemake process (``localrule: True``) is read from the rule files
themselves (:func:`rule_flags`), the one place that decides it, as :func:`thinkprobe.codedeps.rule_scripts`
reads their scripts; ``STATS_FIGURES``'s names likewise (:func:`stats_figures`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

RULES_DIR = Path(__file__).resolve().parents[2] / "rules"  # the rule files, in a checkout of the repository
ALWAYS = ("aggregate", "profiles", "figures", "report_tables", "model_summaries")
STATS_RULES = ("stats_kruskal", "stats_dunn", "stats_spearman", "stats_stability", "stats_cycles", "stats_confound",
               "stats_ablation", "stats_robustness", "stats_claims", "stats_summary", "stats_pages")
TRAJECTORY_RULES = ("traj_tables", "traj_join")
TYPER_RULES = ("aggregate_typer", "profiles_typer", "typer_comparison")  # validity.compare_typers
AGREEMENT_ADAPTER = "steering-thinking-llms"


def rule_flags(rules_dir: str | Path = RULES_DIR) -> dict[str, str]:
    """Every rule of ``rules_dir/*.smk`` -> the text of its ``localrule:`` directive ('' when it has none), read
    from the text (no Snakemake). A rule defined in a loop is listed under its name's text (``stats_fig_{_fig}``)."""
    out: dict[str, str] = {}
    for smk in sorted(Path(rules_dir).glob("*.smk")):
        text = smk.read_text(encoding="utf-8")
        starts = list(re.finditer(r"^[ \t]*(?:rule|checkpoint)\b[ \t]*(\w*)[ \t]*:", text, re.M))
        for k, m in enumerate(starts):
            block = text[m.start(): starts[k + 1].start() if k + 1 < len(starts) else len(text)]
            name = m.group(1) or re.search(r"name:\s*\n\s*f?\"([^\"]+)\"", block).group(1)
            local = re.search(r"^[ \t]*localrule:[ \t]*([^#\n]*)", block, re.M)
            out[name] = local.group(1).strip() if local else ""
    return out


def stats_figures(rules_dir: str | Path = RULES_DIR) -> list[str]:
    """The names of rules/stats.smk's ``STATS_FIGURES`` (one ``stats_fig_<name>`` job each), read from its text."""
    text = (Path(rules_dir) / "stats.smk").read_text(encoding="utf-8")
    block = re.search(r"^STATS_FIGURES = \{\n(.*?)^\}", text, re.M | re.S)
    if block is None:
        raise ValueError(f"{Path(rules_dir) / 'stats.smk'}: no STATS_FIGURES = {{...}} block to count the figures of")
    return re.findall(r"^[ \t]+\"(\w+)\":", block.group(1), re.M)


def is_local(flag: str, rule: str, config: Mapping[str, Any]) -> bool:
    """Whether a rule with ``localrule: <flag>`` runs in the Snakemake process (no SLURM job)."""
    if flag in ("", "False"):
        return False
    if flag == "True":
        return True
    if flag == 'config["resources"]["fetch_local"]':
        return bool(config["resources"]["fetch_local"])
    raise ValueError(f"rule {rule}: localrule: {flag!r} is not a value the planner can evaluate (True, False or "
                     "config[\"resources\"][\"fetch_local\"]); thinkprobe.study.study_jobs.is_local must learn it")


def agreement_files(config: Mapping[str, Any], base: str | Path = ".") -> bool:
    """Whether an input read through the corpus adapter names files (rules/stats.smk ``AGREEMENT_FILES``)."""
    from ..corpus_git import corpus_cache, resolve_inputs
    from ..units import input_roots

    entries = [e for e in config.get("inputs") or [] if e.get("adapter") == AGREEMENT_ADAPTER]
    if not entries:
        return False
    resolved, _pending, _problems = resolve_inputs(entries, corpus_cache(config["resources"]["corpus_cache"]))
    return any(input_roots(p if p.is_absolute() else Path(base) / p) for p in (Path(e["path"]) for e in resolved))


def study_rules(config: Mapping[str, Any], sampling_batches: int, base: str | Path = ".") -> list[str]:
    """The study-wide rules the default target runs (one job each), in the order of the module's docstring."""
    rules = list(ALWAYS)
    if config["pages"]["enabled"]:
        rules.append("trace_pages")
    stats = config["stats"]
    if stats["enabled"]:
        rules += STATS_RULES
        if stats["sensitivity_encoder"]:
            rules.append("stats_sensitivity")
        if agreement_files(config, base):
            rules.append("stats_agreement")
        rules += [f"stats_fig_{name}" for name in stats_figures()]
    if config["trajectories"]["enabled"] and sampling_batches:
        rules += TRAJECTORY_RULES
    if config["validity"]["compare_typers"]:
        rules += TYPER_RULES
    return rules


def study_jobs(config: Mapping[str, Any], sampling_batches: int, base: str | Path = ".") -> dict[str, bool]:
    """Each study-wide rule -> whether it is a SLURM job (False: it runs in the Snakemake process)."""
    flags = rule_flags()
    out = {}
    for rule in study_rules(config, sampling_batches, base):
        key = "stats_fig_{_fig}" if rule.startswith("stats_fig_") else rule
        if key not in flags:
            raise ValueError(f"rule {key} is not in {RULES_DIR}: thinkprobe.study.study_jobs lists a rule the "
                             "workflow no longer has")
        out[rule] = not is_local(flags[key], rule, config)
    return out
