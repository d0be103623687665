"""The two paper reproduction configs, dry-run through the SLURM profile on the local cluster (fake GPUs).

Asserts the jobs per rule, the GPUs (tensor parallel) and memory each generation job asks SLURM for, that
only fetch_model may use the network (it is a local rule, on the login node; every job that loads a model
waits for its manifest and loads it offline), that the planner counts the same jobs as Snakemake, and that a
node with fewer GPUs than a model's tensor_parallel_size (the local cluster's, read with sinfo) is a config
error naming the key. The trajectories study reads its benchmarks by hub id from a cache built in the hub's
layout from the shared corpus (tests/hub_data.py) and is dry-run on its first 20 questions per benchmark (the
full DAG has ~100,000 jobs); the planner is checked on the full study too.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.test_slurm import _cluster_up
from tests.workflow_helpers import REPO, env_for, job_counts, make_workdir

from .conftest import corpus_path, missing

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]
PROFILE = str(REPO / "profiles" / "slurm")


@pytest.fixture(scope="module", autouse=True)
def cluster():
    reason = _cluster_up()
    if reason:
        missing(reason)


def _dry_run(wd: Path, *configfiles: Path, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(wd),
           "--profile", PROFILE, "-n", "--configfile", *map(str, configfiles)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env_for(wd), timeout=1200, cwd=wd)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _jobs(output: str) -> list[dict]:
    """Every job block of a dry run: rule, input, wildcards, resources."""
    jobs = []
    for m in re.finditer(r"^(local)?rule (\w+):\n((?:    .*\n)+)", output, re.M):
        body = dict(re.findall(r"^    (\w+): (.*)$", m.group(3), re.M))
        res = dict(kv.split("=", 1) for kv in body.get("resources", "").split(", ") if "=" in kv)
        wc = dict(kv.split("=", 1) for kv in body.get("wildcards", "").split(", ") if "=" in kv)
        jobs.append({"rule": m.group(2), "input": body.get("input", ""),
                     "wildcards": wc, "resources": res})
    return jobs


def _plan_jobs(configfiles: list[Path], wd: Path) -> dict[str, int]:
    from thinkprobe.generate.budget import plan_study, study_config

    plan = plan_study(study_config(configfiles, wd), wd)
    return {r.rule: r.jobs for r in plan.by_rule()} | {"analysis_slurm": sum(r.slurm_jobs for r in plan.rows
                                                                            if r.rule == "analysis")}


def _check_generation_jobs(jobs: list[dict], config: dict) -> None:
    models = config["models"]
    for job in (j for j in jobs if j["rule"] in ("collect", "traj_sample")):
        name = job["wildcards"]["model"]
        tp = models[name]["engine"]["tensor_parallel_size"]
        assert int(job["resources"]["gpu"]) == tp, job  # GPUs of one node = tensor parallel size
        assert f"results/models/{name}.json" in job["input"], job  # fetched first; loaded offline
        if job["rule"] == "collect":
            assert int(job["resources"]["mem_mb"]) == models[name]["mem_mb"], job
    fetch = [j for j in jobs if j["rule"] == "fetch_model"]  # the only jobs with network (local: next test)
    assert fetch and all(int(j["resources"].get("gpu", 0)) == 0 for j in fetch)


def test_thinkprobe_paper_dry_run(tmp_path):
    wd = make_workdir(tmp_path / "wd", yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    paper = REPO / "config" / "thinkprobe-paper.yaml"
    config = yaml.safe_load(paper.read_text())
    out = _dry_run(wd, paper).stdout
    counts = job_counts(out)
    expected = {"fetch_model": 7, "collect": 70, "collected_trace": 4200, "segment": 200, "graph": 200,
                "metrics": 200, "analysis_batch": 20}
    assert {k: counts.get(k) for k in expected} == expected, counts
    assert "import_traces" not in counts and "traj_sample" not in counts
    assert any(k.startswith("stats_") for k in counts)  # the study's statistics are on
    jobs = _jobs(out)
    _check_generation_jobs(jobs, config)
    gpus = {j["wildcards"]["model"]: int(j["resources"]["gpu"]) for j in jobs if j["rule"] == "collect"}
    assert gpus == {"phi4-reasoning": 1, "glm-4.7-flash": 2, "gpt-oss-120b": 2, "gemma-4-31b": 2,
                    "qwen3.5-35b-a3b": 2, "mistral-medium-3.5": 4, "nemotron-super-120b-a12b": 4}
    planned = _plan_jobs([paper], wd)
    assert (planned["fetch_model"], planned["collect"], planned["analysis_slurm"]) == (7, 70, 20)

    # the local cluster's node: a model split over more GPUs than it has is refused before any job
    node = subprocess.run(["scontrol", "show", "node"], capture_output=True, text=True, timeout=30).stdout
    per_node = int(re.search(r"Gres=gpu:(?:\w+:)?(\d+)", node).group(1))
    small = tmp_path / "small-nodes.yaml"
    small.write_text(yaml.safe_dump({"resources": {"gpus_per_node": per_node}}))
    proc = _dry_run(wd, paper, small, check=False)
    assert proc.returncode != 0
    for name, tp in gpus.items():
        message = (f"models.{name}.engine.tensor_parallel_size = {tp} is more than the {per_node} GPUs of a "
                   "node (resources.gpus_per_node)")
        assert (message in proc.stdout + proc.stderr) == (tp > per_node), name


def test_trajectories_paper_dry_run(tmp_path):
    from tests.hub_data import build_cache

    paper = REPO / "config" / "trajectories-paper.yaml"
    config = yaml.safe_load(paper.read_text())
    # the four benchmarks by hub id, from a cache in the hub's layout built from the shared corpus's files,
    # given as a user gives a cache: resources.model_cache in a config file on the command line
    cache = tmp_path / "hub-cache"
    build_cache(corpus_path("benchmarks"), cache, tmp_path / "repos")
    full = tmp_path / "data-cache.yaml"
    full.write_text(yaml.safe_dump({"resources": {"model_cache": str(cache)}}))
    local = {"question_sets": config["question_sets"]}
    wd = make_workdir(tmp_path / "wd", yaml.safe_load((REPO / "config" / "config.yaml").read_text()))

    # the planner on the full study: every model x benchmark, 16 fetches; the temperature comparison's two
    # decodings are sampled for its 4 models on GSM8K only (trajectories.decodings scoped to them)
    planned = _plan_jobs([paper, full], wd)
    assert planned["fetch_model"] == 16
    assert planned["collect"] == 16 * (7 + 5 + 6 + 6)  # ceil(1319, 1000, 1187, 1172 / 200) per model
    assert planned["traj_sample"] == 16 * (7 + 5 + 6 + 6) + 4 * 2 * 7

    limited = tmp_path / "first-20.yaml"
    limited.write_text(yaml.safe_dump({"question_sets": {name: {**spec, "limit": 20}
                                                         for name, spec in local["question_sets"].items()}}))
    out = _dry_run(wd, paper, full, limited).stdout
    counts = job_counts(out)
    expected = {"fetch_model": 16, "collect": 16 * 4, "traj_sample": 16 * 4 + 4 * 2, "traj_label": 16 * 4 + 4 * 2,
                "traj_tables": 1, "traj_join": 1}
    assert {k: counts.get(k) for k in expected} == expected, counts
    jobs = _jobs(out)
    _check_generation_jobs(jobs, config)
    big = {int(j["resources"]["gpu"]) for j in jobs if j["rule"] == "traj_sample"
           and j["wildcards"]["model"].startswith("qwen2.5-32b")}
    assert big == {2}
    planned = _plan_jobs([paper, full, limited], wd)
    assert (planned["collect"], planned["traj_sample"]) == (counts["collect"], counts["traj_sample"])


def test_fetch_model_runs_on_the_login_node_unless_configured_as_a_slurm_job(tmp_path):
    """A dry run does not say where a job runs: run fetch_models through the SLURM profile for real (a cached
    model, HF_HUB_OFFLINE=1). By default it runs where Snakemake runs; with resources.fetch_local: false it
    is submitted to SLURM."""
    from tests.test_hub_models import HUB_ID, _config, _hub_model, _light_copy

    from thinkprobe.generate.hub import import_folder

    cache = tmp_path / "cache"
    _, commit = import_folder(_light_copy(tmp_path / "light"), HUB_ID, cache)
    for local in (True, False):
        cfg = _config(cache, {"smol": _hub_model()})
        cfg["resources"]["fetch_local"] = local
        wd = make_workdir(tmp_path / f"wd-{local}", cfg)
        env = {**env_for(wd), "HF_HUB_OFFLINE": "1"}
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(wd),
               "--profile", PROFILE, "fetch_models"]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=wd)
        log = proc.stdout + proc.stderr
        assert proc.returncode == 0, log[-3000:]
        assert ("submitted with SLURM jobid" in log) == (not local), log[-3000:]
        assert yaml.safe_load((wd / "results/models/smol.json").read_text())["commit"] == commit
