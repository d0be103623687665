"""Configs bounded before they are walked, in the workflow itself (issue 37, item 5): Snakemake's own
``--configfile`` reading, as far as the project controls it (the Snakefile reads every config file with
:mod:`thinkprobe.yamlread` before its ``configfile:`` directive merges them)."""

from __future__ import annotations

import time

import pytest

from .test_reliability_round4 import BOMB
from .workflow_helpers import make_workdir, snakemake

pytestmark = pytest.mark.workflow


def test_an_alias_bomb_given_as_configfile_stops_the_workflow_naming_it(tmp_path):
    wd = make_workdir(tmp_path / "wd")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    t0 = time.perf_counter()
    proc = snakemake(wd, "-n", "--configfile", str(bomb), check=False, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"config file {bomb}: {bomb}: line 2: a YAML alias (*a) is refused" in out, out[-2000:]
    assert time.perf_counter() - t0 < 120
