"""`thinkprobe preflight` on the local SLURM cluster (scripts/slurm-cluster.sh): a 1-GPU job reads the node. Its
node has a GPU in SLURM's books (gres gpu:1) but no NVIDIA driver, so the preflight must say exactly that, name
the key to change, and exit 2 before any study job is submitted."""

from __future__ import annotations

import subprocess

import pytest

from tests.test_slurm import _cluster_up
from tests.workflow_helpers import REPO

from .conftest import missing

pytestmark = pytest.mark.slurm


def test_the_preflight_job_reads_the_node_and_says_it_has_no_driver(tmp_path):
    reason = _cluster_up()
    if reason:
        missing(reason)
    proc = subprocess.run([str(REPO / ".venv" / "bin" / "thinkprobe"), "preflight"], cwd=REPO, capture_output=True,
                          text=True, timeout=900)
    out = proc.stdout
    assert proc.returncode == 2, (out, proc.stderr)
    assert "read by a SLURM job (--ntasks=1 --time=5 --job-name=thinkprobe_preflight --gpus=1)" in out
    node = subprocess.run(["sinfo", "-h", "-o", "%N"], capture_output=True, text=True, timeout=10).stdout.split()[0]
    assert f"node {node}: glibc " in out and "NVIDIA driver none" in out
    assert f"will fail: node {node}: no NVIDIA driver" in out and "resources.slurm.gpu.partition" in out
    assert "use: no GPU environment variant runs on this node" in out
