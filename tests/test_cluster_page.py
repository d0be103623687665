"""docs/cluster.md's day-one block, run as written and in order on the local SLURM cluster: its commands are read
from the page (between `<!-- day-one -->` and `<!-- /day-one -->`), so the page cannot drift from what works.

Substituted, and only these: `my-study.yaml` is a local study config (the bundled traces' analysis, placed on the
test cluster's partition); `profiles/slurm` (conda, a production cluster) is `profiles/slurm-local`; the commands
run in a study directory that is a copy of the checkout (Snakefile, rules, package) with the checkout's `.venv`
and `profiles`, so the run's results stay out of the repository, and `scripts/setup.sh` is the checkout's own
(run from a copy it would re-point the venv's editable install at the copy). The preflight exits 2 here, as it
must: the test cluster's node has no NVIDIA driver, which it has to say."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest
import yaml

from tests.test_slurm import _cluster_up
from tests.workflow_helpers import REPO, analysis_config, make_workdir

from .conftest import missing

pytestmark = [pytest.mark.slurm, pytest.mark.workflow, pytest.mark.slow]


def day_one_commands() -> list[str]:
    text = (REPO / "docs" / "cluster.md").read_text()
    m = re.search(r"<!-- day-one -->\n```bash\n(.*?)```\n<!-- /day-one -->", text, re.S)
    assert m, "docs/cluster.md has no marked day-one block"
    lines = [ln.split("#", 1)[0].strip() for ln in m.group(1).splitlines()]
    return [ln for ln in lines if ln]


def test_the_day_one_block_names_every_step_in_order():
    cmds = day_one_commands()
    steps = ["--version", "setup.sh", "preflight", "fetch_datasets fetch_models --cores", "plan", "-n --profile",
             "--profile profiles/slurm --configfile"]
    at = [next(i for i, c in enumerate(cmds) if s in c) for s in steps]
    assert at == sorted(at), cmds


def test_the_day_one_block_runs_as_written_on_the_local_cluster(tmp_path):
    reason = _cluster_up()
    if reason:
        missing(reason)
    wd = make_workdir(tmp_path / "study", analysis_config(), package_copy=True)
    for name in (".venv", "profiles"):
        (wd / name).symlink_to(REPO / name)
    study = tmp_path / "my-study.yaml"
    study.write_text(yaml.safe_dump({"resources": {"slurm": {"cpu": {"partition": "debug"}}}}))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for cmd in day_one_commands():
        cmd = cmd.replace("my-study.yaml", shlex.quote(str(study))).replace("profiles/slurm ", "profiles/slurm-local ")
        cmd = cmd.replace("scripts/setup.sh", shlex.quote(str(REPO / "scripts" / "setup.sh")))
        proc = subprocess.run(cmd, shell=True, cwd=wd, capture_output=True, text=True, env=env, timeout=1500)
        log = f"$ {cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        if "preflight" in cmd:
            assert proc.returncode == 2 and "no NVIDIA driver" in proc.stdout, log
            continue
        assert proc.returncode == 0, log
        if " plan " in cmd:
            assert "SLURM" in proc.stdout or "slurm" in proc.stdout.lower(), log
    assert (wd / "results" / "tables" / "metrics.parquet").is_file()
    assert not (REPO / "my-study.yaml").exists()
