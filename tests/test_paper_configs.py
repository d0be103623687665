"""The two paper reproduction configs, dry-run at FULL size through the production SLURM profile on the local
cluster (fake GPUs), with only their question sets' sources made local (tests/paper_studies.py).

Asserts the jobs per rule (no job per unit: the collection jobs write the trace files), the GPUs (tensor
parallel), CPUs, memory and wall time every generation job asks SLURM for (derived from the model and the plan,
within resources.max_runtime), that only fetch_model may use the network (it is a local rule, on the login node;
every job that loads a model waits for its manifest and loads it offline), that the planner counts the same jobs
as Snakemake, and that a node with fewer GPUs than a model's tensor_parallel_size (the local cluster's, read with
sinfo) is a config error naming the key. This machine has no conda: the dry runs add `--sdm env-modules` (no rule
loads a module, so the jobs would run in the caller's environment), the profile is otherwise the shipped one.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.paper_studies import paper_study
from tests.test_slurm import _cluster_up
from tests.workflow_helpers import REPO, env_for, job_counts

from .conftest import missing

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]
PROFILE = str(REPO / "profiles" / "slurm")
LOCAL_PROFILE = str(REPO / "profiles" / "slurm-local")  # real jobs on the local test cluster


@pytest.fixture(scope="module", autouse=True)
def cluster():
    reason = _cluster_up()
    if reason:
        missing(reason)


def _dry_run(wd: Path, *configfiles: Path, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(wd),
           "--profile", PROFILE, "--sdm", "env-modules", "-n", "--configfile", *map(str, configfiles)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env_for(wd), timeout=1800, cwd=wd)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _jobs(output: str) -> list[dict]:
    """Every (ungrouped) job block of a dry run: rule, input, wildcards, threads, resources."""
    jobs = []
    for m in re.finditer(r"^(local)?rule (\w+):\n((?:    .*\n)+)", output, re.M):
        body = dict(re.findall(r"^    (\w+): (.*)$", m.group(3), re.M))
        res = dict(kv.split("=", 1) for kv in body.get("resources", "").split(", ") if "=" in kv)
        wc = dict(kv.split("=", 1) for kv in body.get("wildcards", "").split(", ") if "=" in kv)
        jobs.append({"rule": m.group(2), "input": body.get("input", ""), "threads": body.get("threads"),
                     "wildcards": wc, "resources": res})
    return jobs


def _plan_jobs(study: Path, wd: Path) -> dict[str, int]:
    from thinkprobe.study.planner import plan_study, study_config

    plan = plan_study(study_config([study], wd), wd)
    return {r.rule: r.jobs for r in plan.by_rule()} | {"analysis_slurm": sum(r.slurm_jobs for r in plan.rows
                                                                            if r.rule == "analysis")}


def _check_generation_jobs(jobs: list[dict], config: dict) -> None:
    models = config["models"]
    gen = [j for j in jobs if j["rule"] in ("collect", "traj_sample")]
    assert gen
    for job in gen:
        name = job["wildcards"]["model"]
        tp = models[name]["engine"]["tensor_parallel_size"]
        res = job["resources"]
        assert int(res["gpu"]) == tp, job  # GPUs of one node = tensor parallel size
        assert int(res["cpus_per_gpu"]) == 8 and res["tasks_per_gpu"] == "0", job  # CPUs per GPU, one task
        weights_gb = models[name].get("weights_gb") or 2 * models[name]["params_b"]
        assert int(res["mem_mb"]) >= 1024 * weights_gb, job  # host memory from the weights
        assert 15 <= int(res["runtime"]) <= 2880, job  # derived, within resources.max_runtime
        assert f"results/models/{name}.json" in job["input"], job  # fetched first; loaded offline
    fetch = [j for j in jobs if j["rule"] == "fetch_model"]  # the only jobs with network (local: next test)
    assert fetch and all(int(j["resources"].get("gpu", 0)) == 0 for j in fetch)


def test_thinkprobe_paper_dry_run(tmp_path):
    study, units = paper_study(tmp_path / "wd", "thinkprobe-paper")
    wd = study.parent
    config = yaml.safe_load(study.read_text())
    assert units == 4200
    out = _dry_run(wd, study).stdout
    counts = job_counts(out)
    # analysis: one job per stage and batch of 100 questions of one model (resources.batch_questions: 300 units)
    expected = {"fetch_model": 7, "collect": 70, "segment": 14, "graph": 14, "metrics": 14}
    assert {k: counts.get(k) for k in expected} == expected, counts
    assert "import_traces" not in counts and "traj_sample" not in counts and "collected_trace" not in counts
    assert max(counts.values()) < units  # no rule with a job per unit
    assert any(k.startswith("stats_") for k in counts)  # the study's statistics are on
    jobs = _jobs(out)
    _check_generation_jobs(jobs, config)
    gpus = {j["wildcards"]["model"]: int(j["resources"]["gpu"]) for j in jobs if j["rule"] == "collect"}
    assert gpus == {"phi4-reasoning": 1, "glm-4.7-flash": 2, "gpt-oss-120b": 2, "gemma-4-31b": 2,
                    "qwen3.5-35b-a3b": 2, "mistral-medium-3.5": 4, "nemotron-super-120b-a12b": 4}
    planned = _plan_jobs(study, wd)
    assert (planned["fetch_model"], planned["collect"], planned["analysis_slurm"]) == (7, 70, 14)
    assert planned["analysis"] == sum(counts[r] for r in ("segment", "graph", "metrics"))

    # the local cluster's node: a model split over more GPUs than it has is refused before any job
    node = subprocess.run(["scontrol", "show", "node"], capture_output=True, text=True, timeout=30).stdout
    per_node = int(re.search(r"Gres=gpu:(?:\w+:)?(\d+)", node).group(1))
    small = tmp_path / "small-nodes.yaml"
    small.write_text(yaml.safe_dump({"resources": {"gpus_per_node": per_node}}))
    proc = _dry_run(wd, study, small, check=False)
    assert proc.returncode != 0
    for name, tp in gpus.items():
        message = (f"models.{name}.engine.tensor_parallel_size = {tp} is more than the {per_node} GPUs of a "
                   "node (resources.gpus_per_node)")
        assert (message in proc.stdout + proc.stderr) == (tp > per_node), name


@pytest.mark.slow
def test_trajectories_paper_dry_run_at_full_size(tmp_path):
    """74,848 units (16 models x 4,678 questions of GSM8K, SVAMP, MATH algebra and ARC-Challenge, one run), as
    bench/dag_bench.py times it: every job scheduled, none per unit, the generation jobs sized for their models."""
    study, units = paper_study(tmp_path / "wd", "trajectories-paper")
    wd = study.parent
    config = yaml.safe_load(study.read_text())
    out = _dry_run(wd, study).stdout
    counts = job_counts(out)
    planned = _plan_jobs(study, wd)
    assert planned["fetch_model"] == 16
    assert planned["collect"] == 16 * (7 + 5 + 6 + 6)  # ceil(1319, 1000, 1187, 1172 / 200) per model
    # r1-distill in batches of 50 (trajectories.batch_questions_by_model), the others of 200; the temperature
    # comparison's two decodings for its four models on GSM8K
    r1 = 27 + 20 + 24 + 24
    assert planned["traj_sample"] == 15 * (7 + 5 + 6 + 6) + r1 + 3 * 2 * 7 + 2 * 27
    questions = 1319 + 1000 + 1187 + 1172
    if units == 16 * questions:  # the official splits (corpus present): the DAG has exactly the planned jobs
        batches = planned["analysis_slurm"]  # one per model and 200 questions (resources.batch_questions)
        assert batches == 16 * (7 + 5 + 6 + 6)
        expected = {"fetch_model": 16, "collect": planned["collect"], "traj_sample": planned["traj_sample"],
                    "traj_label": planned["traj_sample"], "segment": batches, "graph": batches,
                    "metrics": batches, "traj_tables": 1, "traj_join": 1}
        assert {k: counts.get(k) for k in expected} == expected, counts
    assert "collected_trace" not in counts and max(counts.values()) < units / 10  # nothing per unit
    jobs = _jobs(out)
    _check_generation_jobs(jobs, config)
    big = {int(j["resources"]["gpu"]) for j in jobs if j["rule"] == "traj_sample"
           and j["wildcards"]["model"].startswith("qwen2.5-32b")}
    assert big == {2}
    # the reasoner samples far more than an instruct model of its size: per question of its (smaller) batches it
    # asks for a much longer wall time
    runtime = lambda model, qset: max(int(j["resources"]["runtime"]) for j in jobs if j["rule"] == "traj_sample"
                                      and j["wildcards"]["model"] == model and j["wildcards"]["question_set"] == qset)
    assert runtime("r1-distill-qwen-7b", "math") / 50 > 5 * runtime("qwen2.5-7b-it", "math") / 200


def test_fetch_model_runs_on_the_login_node_unless_configured_as_a_slurm_job(tmp_path):
    """A dry run does not say where a job runs: run fetch_models through the SLURM profile for real (a cached
    model, HF_HUB_OFFLINE=1). By default it runs where Snakemake runs; with resources.fetch_local: false it
    is submitted to SLURM."""
    from tests.test_hub_models import HUB_ID, _config, _hub_model, _light_copy
    from tests.workflow_helpers import make_workdir

    from thinkprobe.generate.hub import import_folder

    cache = tmp_path / "cache"
    _, commit = import_folder(_light_copy(tmp_path / "light"), HUB_ID, cache)
    for local in (True, False):
        cfg = _config(cache, {"smol": _hub_model()})
        cfg["resources"]["fetch_local"] = local
        wd = make_workdir(tmp_path / f"wd-{local}", cfg)
        env = {**env_for(wd), "HF_HUB_OFFLINE": "1"}
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(wd),
               "--profile", LOCAL_PROFILE, "fetch_models"]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=wd)
        log = proc.stdout + proc.stderr
        assert proc.returncode == 0, log[-3000:]
        assert ("submitted with SLURM jobid" in log) == (not local), log[-3000:]
        assert yaml.safe_load((wd / "results/models/smol.json").read_text())["commit"] == commit
