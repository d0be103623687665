"""`thinkprobe plan` and the `plan` target: the cost tables of docs/planning.md are the command's output, the
target writes the same table, and a study that cannot run is an error naming its key (exit 2)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml

from tests.workflow_helpers import REPO, default_config, make_workdir, snakemake

from .conftest import corpus_path


def _plan(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "thinkprobe.cli", "plan", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def _docs_table(config: str) -> str:
    text = (REPO / "docs" / "planning.md").read_text()
    m = re.search(rf"<!-- plan: {re.escape(config)} -->\n(.*?)\n<!-- /plan -->", text, re.S)
    assert m, f"docs/planning.md has no plan table for {config}"
    return m.group(1).strip()


@pytest.mark.slow
def test_documented_cost_tables_are_the_planner_output(tmp_path):
    from tests.hub_data import build_cache

    out = _plan("--markdown", "--configfile", "config/thinkprobe-paper.yaml")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == _docs_table("config/thinkprobe-paper.yaml")
    # the trajectories config names its benchmarks by hub id: without them in the cache, an error naming them
    empty = tmp_path / "empty-cache.yaml"
    empty.write_text(yaml.safe_dump({"resources": {"model_cache": str(tmp_path / "empty")}}))
    out = _plan("--markdown", "--configfile", "config/trajectories-paper.yaml", str(empty))
    assert out.returncode == 2 and "question_sets.gsm8k.hub_id = 'openai/gsm8k'" in out.stderr
    assert "snakemake fetch_datasets" in out.stderr
    # with them (a cache in the hub's layout built from the shared corpus, given on the command line)
    build_cache(corpus_path("benchmarks"), tmp_path / "cache", tmp_path / "repos")
    cache = tmp_path / "cache.yaml"
    cache.write_text(yaml.safe_dump({"resources": {"model_cache": str(tmp_path / "cache")}}))
    out = _plan("--markdown", "--configfile", "config/trajectories-paper.yaml", str(cache))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == _docs_table("config/trajectories-paper.yaml")


@pytest.mark.workflow
def test_plan_target_writes_the_cli_table(tmp_path):
    wd = make_workdir(tmp_path / "wd", default_config())
    snakemake(wd, "plan")
    cli = _plan("--directory", str(wd))
    assert cli.returncode == 0, cli.stderr
    assert (wd / "results/plan/plan.txt").read_text().strip() == cli.stdout.strip()
    rows = json.loads((wd / "results/plan/plan.json").read_text())["rows"]
    total = next(r for r in rows if r["rule"] == "total")
    assert total["jobs"] == sum(r["jobs"] for r in rows if r["rule"] != "total" and r["detail"])


@pytest.mark.fast
def test_plan_errors_name_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"models": {"smollm2": {"backend": "vllm", "path": "smollm2", "device": "gpu",
                                                          "engine": {"tensor_parallel_size": 16}}},
                                   "resources": {"gpus_per_node": 4}}))
    out = _plan("--configfile", str(bad))
    assert out.returncode == 2
    assert "models.smollm2.engine.tensor_parallel_size = 16 is more than the 4 GPUs of a node" in out.stderr
    bad.write_text(yaml.safe_dump({"planning": {"gpu_type": "tpu"},
                                   "models": {"smollm2": {"backend": "vllm", "path": "smollm2", "device": "gpu"}}}))
    out = _plan("--configfile", str(bad))
    assert out.returncode == 2 and "planning.throughput has no row 'tpu' (planning.gpu_type)" in out.stderr
    bad.write_text(yaml.safe_dump({"planning": {"trace_tokens_prior": {"gsm8k": 0}}}))
    out = _plan("--configfile", str(bad))
    assert out.returncode == 2 and "planning.trace_tokens_prior.gsm8k = 0" in out.stderr
