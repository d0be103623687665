"""The config's ``validity:`` section (rules/validity.smk, docs/validity.md): its defaults and checks, the
side-by-side table of the two typers (thinkprobe.validity.typer_comparison) against scipy on known rankings,
and ``snakemake validate`` on a small real annotated example, whose outputs are what ``thinkprobe validate``
writes for the same set. The study under both typers runs in tests/test_learned_typer.py (one finished run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from scipy.stats import kendalltau, spearmanr

from thinkprobe.config import ConfigError, load_schema, validate_config
from thinkprobe.validity import WORKFLOW_DEFAULTS
from thinkprobe.validity.typer_comparison import compare

from .workflow_helpers import analysis_config, env_for, job_counts, make_workdir, snakemake

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = load_schema(ROOT / "config" / "schema.yaml")
ANCHORS = ROOT / "tests" / "data" / "validity" / "thought_anchors"  # one real chunk table (its README)
ANCHORS_MAPPING = ROOT / "config" / "validity" / "thought_anchors.yaml"


def _config(**validity) -> dict:
    cfg = analysis_config()
    cfg["validity"] = validity
    return cfg


@pytest.mark.fast
def test_the_section_is_off_by_default_and_every_shipped_config_leaves_it_off_or_inside_the_repository():
    filled = validate_config(_config(), SCHEMA)
    assert filled["validity"] == WORKFLOW_DEFAULTS and filled["validity"]["compare_typers"] is False
    assert filled["validity"]["sets"] == []
    for path in sorted((ROOT / "config").glob("*.yaml")):
        sets = ((yaml.safe_load(path.read_text()) or {}).get("validity") or {}).get("sets") or []
        assert not [s for s in sets if "../shared" in str(s.get("path")) + str(s.get("mapping"))], path


@pytest.mark.fast
def test_a_bad_set_is_an_error_naming_the_set_and_key(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    good = {"name": "anchors", "format": "thought_anchors", "path": str(ANCHORS), "mapping": str(ANCHORS_MAPPING)}
    assert validate_config(_config(sets=[good]), SCHEMA)["validity"]["sets"][0]["limit"] is None
    with pytest.raises(ConfigError, match=r"validity.sets\[1\] \(anchors\).name: another set has this name"):
        validate_config(_config(sets=[good, good]), SCHEMA)
    with pytest.raises(ConfigError, match=r"validity.sets\[0\] \(anchors\).path = .*nowhere.*: no such file"):
        validate_config(_config(sets=[{**good, "path": str(tmp_path / "nowhere")}]), SCHEMA)
    with pytest.raises(ConfigError, match=r"a mapping for format 'thought_anchors', not 'reasoningflow'"):
        validate_config(_config(sets=[{**good, "format": "reasoningflow"}]), SCHEMA)
    with pytest.raises(ConfigError, match="brat"):
        validate_config(_config(sets=[{**good, "format": "brat"}]), SCHEMA)


def _profiles(scores: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"level": "model", "model": list(scores), "Metacognition": list(scores.values()),
                         "Depth": [float(i) for i in range(len(scores))]})


@pytest.mark.fast
def test_the_side_by_side_table_ranks_models_as_scipy_and_finds_the_metric_that_changes():
    a = {"m1": 0.3, "m2": -0.1, "m3": 0.5, "m4": 0.0}
    b = {"m1": -0.2, "m2": 0.4, "m3": 0.6, "m4": 0.1}
    units = pd.DataFrame({"trace_id": [f"t{i}" for i in range(8)], "model": [f"m{1 + i % 4}" for i in range(8)],
                          "CHR": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], "MEC": [3.0] * 4 + [5.0] * 4})
    other = units.assign(CHR=units["CHR"] + [0.5, 0, 0, 0, 0, 0, 0.2, 0])
    t = compare(_profiles(a), _profiles(b), units, other, ("paper", "learned"))
    met = t[(t["section"] == "dimension") & (t["item"] == "Metacognition") & (t["model"] == "")].iloc[0]
    assert met["spearman"] == pytest.approx(spearmanr(list(a.values()), list(b.values())).statistic)
    assert met["kendall"] == pytest.approx(kendalltau(list(a.values()), list(b.values())).statistic)
    assert met["n_models"] == 4
    depth = t[(t["section"] == "dimension") & (t["item"] == "Depth") & (t["model"] == "")].iloc[0]
    assert depth["spearman"] == pytest.approx(1.0)  # an unchanged dimension keeps its ranking
    m1 = t[(t["item"] == "Metacognition") & (t["model"] == "m1")].iloc[0]
    assert (m1["score_a"], m1["score_b"], m1["change"]) == pytest.approx((0.3, -0.2, -0.5))
    metric = t[(t["section"] == "metric") & (t["model"] == "")].set_index("item")
    assert metric.loc["CHR", "mean_abs_change"] == pytest.approx(0.7 / 8)
    assert metric.loc["CHR", "changed"] == pytest.approx(2 / 8)
    assert metric.loc["CHR", "mean_abs_change_sd"] == pytest.approx(0.7 / 8 / units["CHR"].std())
    assert metric.loc["CHR", "rank_change"] == 1 and metric.loc["MEC", "mean_abs_change"] == 0
    per_model = t[(t["section"] == "metric") & (t["item"] == "CHR") & (t["model"] == "m1")].iloc[0]
    assert per_model["score_b"] - per_model["score_a"] == pytest.approx(0.25)  # (0.5 + 0) / 2 for t0, t4


@pytest.mark.workflow
def test_the_validate_target_writes_what_thinkprobe_validate_writes_for_each_typer(tmp_path):
    wd = make_workdir(tmp_path / "wd")
    assert job_counts(snakemake(wd, "-n", "validate").stdout) == {"validate": 1}  # no set: the target rule alone
    shutil.copytree(ANCHORS, wd / "anchors")  # the set's copy, relative to the working directory
    entry = {"name": "anchors", "format": "thought_anchors", "path": "anchors", "mapping": str(ANCHORS_MAPPING)}
    cfg = yaml.safe_load((wd / "config" / "config.yaml").read_text())
    cfg["validity"] = {"compare_typers": True, "sets": [entry], "draws": 200}
    path = wd / "config" / "validity.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    counts = job_counts(snakemake(wd, "-n", "validate", "--configfile", str(path)).stdout)
    assert counts == {"validate_set": 2, "validate": 1}  # the set under each typer; no study job
    snakemake(wd, "validate", "--configfile", str(path))
    out = wd / "results" / "validity" / "anchors"
    cli = tmp_path / "cli"
    subprocess.run([sys.executable, "-m", "thinkprobe.cli", "validate", "anchors", "--format", "thought_anchors",
                    "--mapping", str(ANCHORS_MAPPING), "--draws", "200", "--out", str(cli),
                    "--set", "classification.typer=learned"],
                   check=True, capture_output=True, text=True, env=env_for(wd), cwd=wd)
    for typer in ("paper", "learned"):
        summary = json.loads((out / typer / "summary.json").read_text())
        assert summary["typer"] == typer and summary["set"] == "anchors"
        assert summary["n_traces"] == 1 and summary["n_compared"] == 1
        assert f"{typer} typer" in (out / typer / "page.md").read_text()
        assert len(pd.read_csv(out / typer / "traces.csv")) == 1
    want = json.loads((cli / "summary.json").read_text())
    got = json.loads((out / "learned" / "summary.json").read_text())
    assert {k: v for k, v in got.items() if k not in ("set", "typer")} == want
    assert (out / "learned" / "traces.csv").read_text() == (cli / "traces.csv").read_text()
    assert job_counts(snakemake(wd, "-n", "validate", "--configfile", str(path)).stdout) == {}  # all current
    chunks = next((wd / "anchors").rglob("chunks_labeled.json"))
    chunks.write_text(json.dumps(json.loads(chunks.read_text()), indent=3))  # one file of the set edited
    os.utime(chunks, (time.time() + 60, time.time() + 60))  # (Snakemake compares its checksum once it is newer)
    assert job_counts(snakemake(wd, "-n", "validate", "--configfile", str(path)).stdout) == {
        "validate_set": 2, "validate": 1}
