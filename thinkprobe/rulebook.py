"""What the library knows of the workflow's rules, declared once: for every rule with a script, its script, what
its code hash covers besides the script's imports, whether it runs in the Snakemake process, and whether the
default target runs it once per study; and the statistics figures (one ``stats_fig_<name>`` rule each).

Why here: the rule files (``rules/*.smk``) are workflow files, not part of the package, yet the library needs
these facts without them: the code hashes of the results snapshot (:func:`thinkprobe.study.snapshot.stage_hashes`),
the planner's count of study-wide jobs and which of them are SLURM jobs (:mod:`thinkprobe.study.study_jobs`), and
the code-hash tests. So the facts live in the package, and the rule files read them from here (``rules/common.smk``):

* ``code=rule_code("<rule>")``: the rule's ``code`` param, :func:`thinkprobe.codedeps.script_code` of its
  script and :attr:`Rule.data`;
* ``rules/common.smk`` declares every rule :func:`local_rules` returns as local, so no rule with a script writes
  ``localrule:`` itself;
* ``rules/stats.smk`` makes one ``stats_fig_<name>`` rule per entry of :data:`STATS_FIGURES`.

The one fact a rule file still writes itself is its ``script:`` path (:func:`script_path`), as a literal:
Snakemake's ``code`` rerun trigger records the text of that directive, so an expression there would rerun every job
of every study once. Nothing here reads a rule file. ``tests/test_rulebook.py`` asks Snakemake itself (the parsed
workflow's rules) whether the rules and this table agree, in both directions: every rule with a script declared
here, every declared rule in the workflow, and each one's script, ``code`` param and locality the table's.

**Adding a rule with a script** takes two places: its :class:`Rule` in :data:`RULES` (under its rule file's
heading below), and the rule in its ``rules/<file>.smk`` with ``code=rule_code("<rule>")`` among its params
(unless :attr:`Rule.no_code` says why it has none), ``script: "../workflow/scripts/<its script>"`` and no
``localrule:``. A rule without a script (a target such as ``rule stats``) is not declared here.

**The scripts** (``workflow/scripts/*.py``) are workflow files too: the workflow hands each rule's path to
:func:`~thinkprobe.codedeps.script_code` itself (``workflow.source_path``, relative to the rule files). The
library finds them beside the package, in a checkout of the repository (:data:`thinkprobe.codedeps.SCRIPTS_DIR`);
:func:`scripts_dir` checks that they are there and says what is missing when they are not (a package installed
without its checkout computes everything here but the code hashes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

RULE_SCRIPTS = "../workflow/scripts"  # the scripts' folder relative to the rule files (rules/*.smk): `script:` paths
# the conditions under which the default target (rule all, Snakefile) runs one job of a study-wide rule, read by
# thinkprobe.study.study_jobs: "always", or the config switch (and requirement) that brings the rule in
STUDY_WHEN = ("always", "pages", "stats", "stats.sensitivity", "stats.agreement", "trajectories",
              "validity.compare_typers")


@dataclass(frozen=True)
class Rule:
    """One rule with a script.

    ``script``: its file in ``workflow/scripts``. ``data``: what its code hash covers besides the modules its
    script's imports reach (:func:`thinkprobe.codedeps.script_code`'s ``data``: a module the rule's inputs depend
    on, e.g. ``"tracefiles"``, where the trace files lie). ``no_code``: why the rule has no ``code`` param ('' =
    it has one). ``local``: whether it runs in the Snakemake process (no SLURM job): True, False, or the dotted
    config key that decides (``"resources.fetch_local"``). ``study``: when the default target runs one job of it
    for the whole study (one of :data:`STUDY_WHEN`; None: it is no study-wide job).
    """

    script: str
    data: tuple[str, ...] = ()
    no_code: str = ""
    local: bool | str = False
    study: str | None = None

    def __post_init__(self) -> None:
        if self.study is not None and self.study not in STUDY_WHEN:
            raise ValueError(f"Rule({self.script!r}): study={self.study!r} is not one of {STUDY_WHEN}")
        if self.no_code and self.data:
            raise ValueError(f"Rule({self.script!r}): a rule without a code param has no data to hash")


@dataclass(frozen=True)
class Figure:
    """One statistics figure (rule ``stats_fig_<name>``, drawn by :func:`thinkprobe.stages.stats.draw`):
    ``inputs``, the figure's input name -> the table it reads (a key of ``STATS_TABLES`` in ``rules/stats.smk``,
    or ``"profiles"``); ``options``, the ``stats`` config keys it takes."""

    inputs: Mapping[str, str]
    options: tuple[str, ...] = field(default=())


# The statistics figures, in the order of their rules.
STATS_FIGURES: dict[str, Figure] = {
    "radar": Figure({"profiles": "profiles"}),
    "effects": Figure({"kruskal": "kruskal"}, ("effect_small", "effect_large")),
    "model_domain": Figure({"profiles": "profiles"}),
    "dunn": Figure({"dunn": "dunn"}),
    "spearman": Figure({"spearman": "spearman"}),
    "cycles": Figure({"cycles": "cycles", "summary": "cycles_summary"}, ("cycle_cap",)),
    "cv": Figure({"cv": "cv"}),
    "cosine": Figure({"cosine": "cosine"}),
    "length": Figure({"confound": "length_confound"}),
}

_FETCH_LOCAL = "resources.fetch_local"  # the login node has the network; false: the fetches are SLURM jobs
_DOWNLOAD = "a download into the shared model cache"

RULES: dict[str, Rule] = {
    # rules/collect.smk
    "import_traces": Rule("import_traces.py"),
    "collect": Rule("collect.py"),
    # rules/segment.smk, graph.smk, metrics.smk: the analysis (segment and the ablation read trace files, so
    # where they lie is part of their hash)
    "segment": Rule("segment.py", data=("tracefiles",)),
    "graph": Rule("graph.py"),
    "metrics": Rule("metrics.py"),
    "aggregate": Rule("aggregate.py", local=True, study="always"),
    "profiles": Rule("profiles.py", local=True, study="always"),
    # rules/models.smk: no code param on the fetches: a manifest describes the shared cache, not an output of
    # our code, and re-fetching after a code edit would fetch every model again
    "fetch_model": Rule("fetch_model.py", no_code=_DOWNLOAD, local=_FETCH_LOCAL),
    "fetch_models": Rule("write_lock.py", no_code="writes the lock from the manifests (a rule without output)",
                         local=True),
    "fetch_dataset": Rule("fetch_dataset.py", no_code=_DOWNLOAD, local=_FETCH_LOCAL),
    "fetch_datasets": Rule("write_lock.py", no_code="writes the lock (a rule without output)", local=True),
    "fetch_corpus": Rule("fetch_corpus.py", no_code="clones what is missing (a rule without output)", local=True),
    "plan": Rule("plan.py", local=True),
    # rules/report.smk
    "figures": Rule("figures.py", local=True, study="always"),
    "report_tables": Rule("report_tables.py", local=True, study="always"),
    # rules/pages.smk: like the figures, no SLURM job of its own (a page costs milliseconds unless its
    # trajectory's reasoning must be analysed anew, see thinkprobe.stages.page_sources)
    "trace_pages": Rule("trace_pages.py", local=True, study="pages"),
    "model_summaries": Rule("model_summaries.py", local=True, study="always"),
    # rules/stats.smk
    "stats_kruskal": Rule("stats_kruskal.py", local=True, study="stats"),
    "stats_dunn": Rule("stats_dunn.py", local=True, study="stats"),
    "stats_spearman": Rule("stats_spearman.py", local=True, study="stats"),
    "stats_stability": Rule("stats_stability.py", local=True, study="stats"),
    "stats_cycles": Rule("stats_cycles.py", study="stats"),
    "stats_confound": Rule("stats_confound.py", local=True, study="stats"),
    "stats_ablation": Rule("stats_ablation.py", data=("tracefiles",), study="stats"),
    "stats_robustness": Rule("stats_robustness.py", local=True, study="stats"),
    "stats_claims": Rule("stats_claims.py", local=True, study="stats"),
    "stats_summary": Rule("stats_summary.py", local=True, study="stats"),
    "stats_pages": Rule("stats_pages.py", local=True, study="stats"),
    "stats_sensitivity": Rule("stats_sensitivity.py", data=("tracefiles",), study="stats.sensitivity"),
    "stats_agreement": Rule("stats_agreement.py", study="stats.agreement"),
    **{f"stats_fig_{name}": Rule("stats_figure.py", local=True, study="stats") for name in STATS_FIGURES},
    # rules/trajectories.smk: traj_sample's outputs are protected GPU data that a code edit must never
    # regenerate implicitly (their provenance and the continuation store's key record the sampling code)
    "traj_sample": Rule("traj_sample.py", no_code="protected continuations"),
    "traj_label": Rule("traj_label.py"),
    "traj_tables": Rule("traj_tables.py", study="trajectories"),
    "traj_join": Rule("traj_join.py", study="trajectories"),
    # rules/validity.smk: the study under the other typer (validity.compare_typers; graph_typer and metrics_typer
    # run per analysis batch, in its group job) and the annotated sets (validity.sets)
    "graph_typer": Rule("graph_typer.py"),
    "metrics_typer": Rule("metrics_typer.py"),
    "aggregate_typer": Rule("aggregate.py", local=True, study="validity.compare_typers"),
    "profiles_typer": Rule("profiles.py", local=True, study="validity.compare_typers"),
    "typer_comparison": Rule("typer_comparison.py", local=True, study="validity.compare_typers"),
    "validate_set": Rule("validate_set.py"),
}


class WorkflowFilesMissing(RuntimeError):
    """The workflow's scripts are not beside the package (it was installed or copied without its checkout)."""


def rule(name: str) -> Rule:
    """The declaration of rule ``name``; an error naming the declared rules when there is none."""
    try:
        return RULES[name]
    except KeyError:
        raise KeyError(f"rule {name!r} is not declared in thinkprobe/rulebook.py (RULES); declared: "
                       f"{', '.join(sorted(RULES))}") from None


def script_path(name: str) -> str:
    """A rule's ``script:`` as its rule file writes it (relative to ``rules/``): ``../workflow/scripts/<script>``.

    >>> script_path("graph")
    '../workflow/scripts/graph.py'
    """
    return f"{RULE_SCRIPTS}/{rule(name).script}"


def is_local(name: str, config: Mapping[str, Any]) -> bool:
    """Whether rule ``name`` runs in the Snakemake process under ``config`` (the validated configuration).

    >>> is_local("fetch_model", {"resources": {"fetch_local": False}}), is_local("aggregate", {})
    (False, True)
    """
    local = rule(name).local
    if isinstance(local, bool):
        return local
    value: Any = config
    for key in local.split("."):
        value = value[key]
    return bool(value)


def local_rules(config: Mapping[str, Any]) -> list[str]:
    """The rules that run in the Snakemake process under ``config``: what ``rules/common.smk`` declares as
    ``localrules``."""
    return [name for name in RULES if is_local(name, config)]


def scripts_dir(folder: str | Path | None = None, scripts: tuple[str, ...] | None = None) -> Path:
    """The folder of the rule scripts: ``folder``, else the checkout's ``workflow/scripts`` beside the package
    (:data:`thinkprobe.codedeps.SCRIPTS_DIR`); an error saying what is missing when it lacks one of ``scripts``
    (None: every declared rule's script)."""
    from .codedeps import SCRIPTS_DIR

    where = Path(folder) if folder is not None else SCRIPTS_DIR
    wanted = scripts if scripts is not None else tuple(r.script for r in RULES.values())
    missing = sorted({s for s in wanted if not (where / s).is_file()})
    if missing:
        raise WorkflowFilesMissing(
            f"the rule scripts are not in {where} (missing: {', '.join(missing)}): a rule's code hash is the hash of "
            "the modules its script reaches, so it needs the workflow's scripts, which a checkout of the "
            "repository holds beside the package (workflow/scripts)")
    return where


def code(name: str, folder: str | Path | None = None) -> str:
    """Rule ``name``'s ``code`` param: :func:`thinkprobe.codedeps.script_code` of its script (in ``folder``, else
    in :func:`scripts_dir`) and its :attr:`Rule.data`. An error for a rule that has no code param, saying why."""
    from .codedeps import script_code

    r = rule(name)
    if r.no_code:
        raise ValueError(f"rule {name} has no code param on purpose ({r.no_code}): thinkprobe/rulebook.py")
    return script_code(scripts_dir(folder, (r.script,)) / r.script, *r.data)


def study_rules(when: Mapping[str, bool]) -> list[str]:
    """The study-wide rules whose condition (:attr:`Rule.study`) ``when`` holds, in the order of :data:`RULES`.

    >>> study_rules({"always": True})
    ['aggregate', 'profiles', 'figures', 'report_tables', 'model_summaries']
    """
    return [name for name, r in RULES.items() if r.study is not None and when.get(r.study)]
