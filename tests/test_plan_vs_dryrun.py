"""The plan is the run: `thinkprobe plan`'s SLURM jobs per rule equal what `snakemake -n` through the SLURM profile
would submit, on the embedded default (collection, trajectory sampling and its labelling). The analysis jobs'
count (group jobs of batches) is checked with the analysis batching (tests of rules/*.smk grouping); here every
rule the planner lists besides `analysis` is compared."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter

import pytest

from tests.workflow_helpers import REPO, default_config, make_workdir, snakemake

pytestmark = pytest.mark.workflow


def submitted(dry_run: str) -> Counter:
    """Jobs a dry run through a SLURM profile would submit, per rule: each top-level `rule X:` block (a local
    rule prints `localrule`, a group job's members are indented under `Group job`); `all` runs nothing."""
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
