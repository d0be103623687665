"""Every size bounded (issue 28, item 4): upper limits in the schema, and a plan-size check before any list of
units is built, in the planner (`thinkprobe plan`) and in the workflow's parse (rules/common.smk).

The hostile input is the config itself: `collection.runs: 1000000000` (which made `thinkprobe plan` reach
4.4 GB in 40 s), and keys that are each within their schema limit but whose product is not. Each command runs
in a child process limited to 1 GiB of address space and 120 s, so a check that came too late fails the test
by running out of memory or time instead of taking the machine."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.workflow_helpers import REPO, default_config, env_for, make_workdir, snakefile
from thinkprobe.study import planchecks
from thinkprobe.study.planner import study_config


LIMIT_BYTES = 1 << 30


def _bounded(cmd: list[str], cwd: Path, env=None) -> tuple[subprocess.CompletedProcess, float]:
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))

    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=120, preexec_fn=limit)
    return proc, time.perf_counter() - started


def _plan(wd: Path, configfile: Path) -> tuple[subprocess.CompletedProcess, float]:
    return _bounded([sys.executable, "-m", "thinkprobe.cli", "plan", "--directory", str(wd), "--configfile",
                     str(configfile)], REPO)


def _dry_run(wd: Path) -> tuple[subprocess.CompletedProcess, float]:
    return _bounded([sys.executable, "-m", "snakemake", "--snakefile", str(snakefile(wd)), "--directory", str(wd),
                     "--cores", "1", "-n"], wd, env_for(wd))


def _questions(path: Path, n: int) -> None:
    path.write_text("".join(json.dumps({"question": f"What is {i} + 1?", "answer": f"#### {i + 1}"}) + "\n"
                            for i in range(n)))


@pytest.mark.fast
def test_a_billion_runs_is_a_schema_error_naming_the_key_in_bounded_time_and_memory(tmp_path):
    wd = make_workdir(tmp_path / "wd", default_config())
    bad = tmp_path / "billion.yaml"
    bad.write_text(yaml.safe_dump({"collection": {"runs": 1_000_000_000}}))
    out, seconds = _plan(wd, bad)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "collection.runs = 1000000000 is not allowed: must be <= 1000" in out.stderr
    assert seconds < 60


@pytest.mark.workflow
def test_a_billion_runs_stops_the_workflow_parse_naming_the_keys_in_bounded_time_and_memory(tmp_path):
    cfg = default_config()
    cfg["collection"]["jobs"][0]["runs"] = 1_000_000_000
    cfg["trajectories"]["n"] = 10_001
    wd2 = make_workdir(tmp_path / "wd2", cfg)
    out, seconds = _dry_run(wd2)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "collection.jobs.0.runs = 1000000000 is not allowed: must be <= 1000" in text
    assert "trajectories.n = 10001 is not allowed: must be <= 10000" in text
    assert seconds < 60


# 1,000 runs (the schema's maximum) x 1,001 questions = 1,001,000 units: one over the study limit.
TOO_LARGE = ("collection.jobs would collect 1,001,000 units, above the limit of 1,000,000 a study may plan "
             "(thinkprobe.study.planchecks.MAX_UNITS): smollm2 x big: 1,001 questions x 1,000 runs "
             "(collection.jobs[0].runs)")


def _too_large(tmp_path: Path) -> Path:
    """A work directory whose study is :data:`TOO_LARGE`."""
    cfg = default_config()
    _questions(tmp_path / "big.jsonl", 1_001)
    cfg["question_sets"]["big"] = {"source": "gsm8k", "path": str(tmp_path / "big.jsonl")}
    cfg["collection"]["jobs"] = [{"model": "smollm2", "question_set": "big", "runs": 1000}]
    cfg["trajectories"]["enabled"] = False
    cfg["trajectories"]["models"] = []
    return make_workdir(tmp_path / "wd", cfg)


@pytest.mark.fast
def test_keys_within_their_limits_whose_product_is_too_large_are_refused_before_planning(tmp_path):
    wd = _too_large(tmp_path)
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump({}))
    out, seconds = _plan(wd, study)
    assert out.returncode == 2 and TOO_LARGE in out.stderr, out.stderr[-2000:]
    assert seconds < 60
    # one question fewer is a study like any other: planned (it only costs time, not the machine)
    _questions(tmp_path / "big.jsonl", 1_000)
    assert planchecks.study_size(study_config([], wd), wd) == []


@pytest.mark.workflow
def test_a_study_too_large_stops_the_workflow_parse_before_planning(tmp_path):
    out, seconds = _dry_run(_too_large(tmp_path))
    assert out.returncode != 0 and TOO_LARGE in out.stdout + out.stderr, (out.stdout + out.stderr)[-3000:]
    assert "the study is too large to plan" in out.stdout + out.stderr
    assert seconds < 90


@pytest.mark.fast
def test_checkpoints_continuations_and_questions_per_set_are_bounded(tmp_path):
    wd = make_workdir(tmp_path / "wd", default_config())
    base = study_config([], wd)
    assert planchecks.study_size(base, wd) == []
    cfg = json.loads(json.dumps(base))
    cfg["trajectories"].update(stride=1, max_reasoning_tokens=200_000)
    problems = planchecks.study_size(cfg, wd)
    assert ("trajectories: a trace may have 200,001 checkpoints, above the limit of 100,000 "
            "(thinkprobe.study.planchecks.MAX_CHECKPOINTS): smollm2 x gsm8k_demo: 200,000 tokens "
            "(trajectories.max_reasoning_tokens) at stride 1 (trajectories.stride)") in problems
    cfg = json.loads(json.dumps(base))  # each key within its limit: 3,000 traces x 513 checkpoints x N = 10,000
    cfg["trajectories"].update(n=10_000, max_reasoning_tokens=0, runs=list(range(1, 1001)))
    cfg["collection"]["jobs"][1]["sampling"]["max_tokens"] = 8192
    size = planchecks.measure(cfg, wd)
    assert (size.traces, size.checkpoints, size.continuations) == (3_000, 513, 3_000 * 513 * 10_000)
    assert ("trajectories may sample up to 15,390,000,000 continuations, above the limit of 10,000,000,000 "
            "(thinkprobe.study.planchecks.MAX_CONTINUATIONS): 3,000 traces x up to 513 checkpoints (smollm2 x gsm8k_demo: "
            "8,192 tokens (collection.jobs[1].sampling.max_tokens) at stride 16 (trajectories.stride)) x N = 10000 "
            "(trajectories.n)") in planchecks.study_size(cfg, wd)
    # questions per set: a file without `limit` selecting more than the limit
    _questions(tmp_path / "many.jsonl", planchecks.MAX_QUESTIONS + 1)
    cfg = json.loads(json.dumps(base))
    cfg["question_sets"]["many"] = {"source": "gsm8k", "path": str(tmp_path / "many.jsonl")}
    cfg["collection"]["jobs"] = [{"model": "smollm2", "question_set": "many", "runs": 1}]
    assert ("question_sets.many selects 100,001 questions, above the limit of 100,000 per set "
            "(thinkprobe.study.planchecks.MAX_QUESTIONS): set its `limit`") in planchecks.study_size(cfg, wd)


@pytest.mark.fast
def test_the_shipped_studies_are_far_below_every_limit():
    for configfile in ("config/thinkprobe-paper.yaml", "config/config.yaml"):
        size = planchecks.measure(study_config([configfile] if configfile != "config/config.yaml" else [], REPO),
                                  REPO)
        for what, value, limit in size.rows():
            assert value * 10 <= limit, (configfile, what, value, limit)
