"""The SLURM plugin's own placement keys beside resources.slurm (docs/cluster.md "Day one"): `slurm_partition`
in a profile's default-resources wins over resources.slurm for every job, and set-resources wins for its rule,
as Snakemake orders them (dry runs of the bundled traces' analysis, resources read from Snakemake's job list)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.workflow_helpers import analysis_config, make_workdir, snakemake

pytestmark = pytest.mark.workflow


def _partitions(wd, *args) -> Counter:
    out = snakemake(wd, "-n", *args, timeout=600)
    return Counter(re.findall(r"slurm_partition=([\w-]+)", out.stdout + out.stderr))


def test_default_resources_and_set_resources_placement_keys_win_over_resources_slurm(tmp_path):
    cfg = analysis_config()
    cfg["resources"]["slurm"] = {"cpu": {"partition": ""}}
    wd = make_workdir(tmp_path, cfg)
    by_profile = _partitions(wd, "--default-resources", "slurm_partition=fromprofile",
                             "--set-resources", "report:slurm_partition=fromset")
    assert by_profile["fromset"] == 1 and by_profile["fromprofile"] >= 10, by_profile
    assert set(by_profile) == {"fromprofile", "fromset"}
