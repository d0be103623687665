"""The plan is the run: `thinkprobe plan`'s jobs and SLURM jobs equal what `snakemake -n` through the SLURM profile
schedules and would submit: on the embedded default per generation rule (collection, trajectory sampling and its
labelling), and on collection-only studies every rule, the study-wide tables, statistics, figures and pages
included, with the SLURM jobs told from the local ones by Snakemake's own record of its local rules."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from tests.workflow_helpers import REPO, default_config, make_workdir, snakemake

pytestmark = pytest.mark.workflow


def submitted(dry_run: str) -> Counter:
    """Jobs a dry run through a SLURM profile schedules at top level, per rule: each `rule X:` block that is not
    indented (a group job's members are, under `Group job`; a dry run prints local rules as `rule X:` too, so
    this counts only rules known not to be local); `all` runs nothing."""
    return Counter(r for r in re.findall(r"^rule (\w+):", dry_run, re.M) if r != "all")


def test_the_planners_slurm_jobs_per_rule_are_the_dry_runs(tmp_path):
    wd = make_workdir(tmp_path / "wd", default_config())
    out = snakemake(wd, "-n", "--profile", str(REPO / "profiles" / "slurm-local"), timeout=600)
    dry = submitted(out.stdout + out.stderr)
    plan = subprocess.run([sys.executable, "-m", "thinkprobe.cli", "plan", "--directory", str(wd), "--json"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert plan.returncode == 0, plan.stderr
    rows = json.loads(plan.stdout)["rows"]
    planned = {r["rule"]: r["slurm_jobs"] for r in rows if not r["detail"]}  # the per-rule totals
    for rule in ("collect", "traj_sample", "traj_label"):
        assert planned[rule] == dry[rule] > 0, (rule, planned, dry)


LOCAL_RULES = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import OutputSettings, ResourceSettings

with SnakemakeApi(OutputSettings()) as api:
    wf = api.workflow(resource_settings=ResourceSettings(cores=1), snakefile=Path(sys.argv[1]),
                      workdir=Path(sys.argv[2]))._workflow
    # Snakemake's own record of the localrule directives (Workflow.is_local without an executor says every rule)
    print(json.dumps(sorted(r.name for r in wf.rules if r.group is None and r.name in wf._localrules)))
"""


def _local_rules(wd) -> set[str]:
    """The rules Snakemake itself runs in its own process (its parse of the workflow, not the planner's reading of
    the rule files): a dry run prints every job alike, whether it would be submitted or not."""
    out = subprocess.run([sys.executable, "-c", LOCAL_RULES, str(REPO / "Snakefile"), str(wd)], capture_output=True,
                         text=True, cwd=wd, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def _job_stats(dry_run: str) -> Counter:
    table = dry_run.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return Counter({m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M)})


@pytest.mark.parametrize("shape", ["stats-and-pages", "no-trajectories-no-pages", "imported-and-collected",
                                   "both-typers"])
def test_the_planners_jobs_and_slurm_jobs_are_the_dry_runs_study_wide_jobs_included(tmp_path, shape):
    """Every job the dry run schedules, per rule, is one the planner counts, the study-wide ones included (tables,
    statistics, figures, pages); and its SLURM jobs are the jobs the run submits: the top-level jobs of rules that
    are not local (Snakemake's own record of them) plus one per group job. The imported shape keeps the default's
    imported demo traces beside its collected set (one import job per analysis batch, in the batch's group). The
    both-typers shape adds validity.compare_typers (two more jobs per batch, in its group; three study-wide) and an
    annotated set of validity.sets (one validate_set job per typer, each submitted on its own)."""
    cfg = default_config()
    if shape != "imported-and-collected":
        cfg["inputs"] = []
    else:
        assert cfg["inputs"], "the embedded default imports traces"
        cfg["resources"]["batch_questions"] = 2  # several batches of the imported set
    if shape == "stats-and-pages":
        cfg["stats"]["enabled"] = True
        cfg["pages"]["enabled"] = True
    else:
        cfg["trajectories"]["enabled"] = False
        cfg["pages"]["enabled"] = False
    if shape == "both-typers":
        cfg["validity"] = {"compare_typers": True, "sets": [
            {"name": "anchors", "format": "thought_anchors", "path": "anchors",
             "mapping": str(REPO / "config" / "validity" / "thought_anchors.yaml")}]}
    wd = make_workdir(tmp_path / "wd", cfg)
    if shape == "both-typers":  # the set's copy, relative to the working directory
        shutil.copytree(REPO / "tests" / "data" / "validity" / "thought_anchors", wd / "anchors")
    out = snakemake(wd, "-n", "--profile", str(REPO / "profiles" / "slurm-local"), timeout=600)
    text = out.stdout + out.stderr
    stats = _job_stats(text)
    plan = subprocess.run([sys.executable, "-m", "thinkprobe.cli", "plan", "--directory", str(wd), "--json"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    per_rule = {r["rule"]: r for r in planned["rows"] if not r["detail"] or r["detail"] == "(all)"}
    study = planned["study_jobs"]
    # every rule of the dry run, and nothing else: analysis is segment + graph + metrics, `all` runs nothing
    expected = Counter({**{r: 1 for r in study}})
    for rule in ("collect", "traj_sample", "traj_label", "fetch_model"):
        if rule in per_rule:
            expected[rule] = per_rule[rule]["jobs"]
    analysis = [r for r in planned["rows"] if r["rule"] == "analysis" and r["detail"].startswith("(all models)")]
    imported = sum(r["slurm_jobs"] for r in analysis if r["detail"].endswith(", imported"))
    assert (imported > 1) is (shape == "imported-and-collected"), analysis
    expected["segment"] = expected["graph"] = expected["metrics"] = sum(r["slurm_jobs"] for r in analysis)
    if imported:
        expected["import_traces"] = imported
    if shape == "both-typers":
        expected["graph_typer"] = expected["metrics_typer"] = expected["segment"]
        expected["validate_set"] = per_rule["validate_set"]["slurm_jobs"]
        assert per_rule["validate_set"]["jobs"] == 2  # one set under each typer
    assert +expected == stats - Counter({"all": 1, "total": stats["total"]}), (expected, stats)
    assert sum(r["jobs"] for r in per_rule.values() if r["rule"] != "total") + 1 == stats["total"]
    # what SLURM gets: top-level jobs of rules that are not local, one per group job
    local = _local_rules(wd)
    assert {r for r, on_slurm in study.items() if not on_slurm} == {r for r in study if r in local}
    top = Counter(r for r in re.findall(r"^rule (\w+):", text, re.M) if r not in local and r != "all")
    groups = len(re.findall(r"Group job analysis", text))
    total = next(r for r in planned["rows"] if r["rule"] == "total")
    assert total["slurm_jobs"] == sum(top.values()) + groups, (total, top, groups)
    assert per_rule["study"]["slurm_jobs"] == sum(n for r, n in top.items() if r in study)
    if shape == "both-typers":
        assert {"aggregate_typer", "profiles_typer", "typer_comparison"} <= set(study)
    if shape == "stats-and-pages":
        assert {"stats_cycles", "traj_join", "trace_pages"} <= set(study) and study["stats_cycles"]
    else:
        assert not {"traj_join", "trace_pages", "stats_cycles"} & set(study)
