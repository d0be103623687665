"""The Snakemake workflow, run for real on this machine: dry runs, end-to-end runs, incremental reruns, faults."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml

from thinkprobe.metrics import METRIC_NAMES

from .conftest import corpus_path
from .workflow_helpers import REPO, env_for, job_counts, make_workdir, snakefile, snakemake, with_analysis, write_config

pytestmark = pytest.mark.workflow

AGGREGATES = {"aggregate": 1, "profiles": 1, "figures": 1, "report_tables": 1, "all": 1,
              "trace_pages": 1, "model_summaries": 1}
STAGES = ("import_traces", "segment", "graph", "metrics")
BATCHED = ("segment", "graph", "metrics")  # one job per analysis batch (one model x question set x 100 questions)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """The embedded default run end to end once, with a private copy of the package (for code-edit tests)."""
    wd = make_workdir(tmp_path_factory.mktemp("default"), package_copy=True)
    snakemake(wd)
    return wd


def test_lint_is_clean():
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=REPO, capture_output=True, text=True)
    assert "Congratulations" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_default_dry_run_plans_one_import_and_one_analysis_job_per_batch(tmp_path):
    """The demo set's 3 questions: one analysis batch per model (3 models, 10 questions per batch), each with its
    import job."""
    wd = make_workdir(tmp_path)
    counts = job_counts(snakemake(wd, "-n").stdout)
    assert counts == {"import_traces": 3, **{s: 3 for s in BATCHED}, **AGGREGATES}


def test_study_scale_dry_run(tmp_path):
    """7 models x 200 questions x 3 runs = 4,200 units plan as 14 import jobs and 14 analysis jobs per stage, one
    per analysis batch (7 models x 200 / 100 questions per batch, the schema's default: 300 units a job; issue 32,
    item 6: it planned 200 import jobs, one per question, before)."""
    texts = [json.loads(line)["text"] for line in (REPO / "examples/traces/demo.jsonl").read_text().splitlines()]
    records = [{"id": f"m{m}-q{q}-r{r}", "model": f"model_{m}", "question_id": f"q{q:03d}", "run": r,
                "text": texts[(m + q + r) % len(texts)]} for m in range(7) for q in range(200) for r in (1, 2, 3)]
    (tmp_path / "study.jsonl").write_text("\n".join(json.dumps(x) for x in records) + "\n")
    wd = make_workdir(tmp_path / "wd", {"inputs": [{"path": str(tmp_path / "study.jsonl"), "question_set": "open"}]})
    out = snakemake(wd, "-n").stdout
    assert job_counts(out) == {"import_traces": 14, **{s: 14 for s in BATCHED}, **AGGREGATES}


def test_end_to_end_tables_figures_and_report(ran):
    res = ran / "results"
    metrics = pd.read_parquet(res / "tables/metrics.parquet")
    # 12 demo traces + model_c's unclosed (truncated) trace and its short one are analysed
    assert len(metrics) == 14 and list(metrics.columns[-19:]) == list(METRIC_NAMES)
    assert metrics[list(METRIC_NAMES)].notna().all().all()
    excl = pd.read_parquet(res / "tables/exclusions.parquet").set_index("trace_id")
    assert set(excl.index) == {"model_c/demo/q01/1", "model_c/demo/q02/1", "model_c/demo/q02/2", "model_c/demo/q03/2"}
    assert "no reasoning" in excl.loc["model_c/demo/q01/1", "reason"]
    assert "empty" in excl.loc["model_c/demo/q02/1", "reason"]
    assert excl.loc["model_c/demo/q02/2", "reason"].startswith("missing")
    prof = pd.read_parquet(res / "tables/profiles.parquet")
    models = prof[prof["level"] == "model"]
    assert list(models["model"]) == ["model_a", "model_b", "model_c"] and list(models["n_traces"]) == [6, 6, 2]
    for fig in ("profile_radar.png", "metric_heatmap.png"):
        assert (res / "figures" / fig).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (res / "report/metrics.html").read_text()
    assert "Provenance" in page and "source_sha256" in page and "results/metrics/model_a/demo/q01/1.json" in page
    snakemake(ran, "--report", str(ran / "report.html"))
    report = (ran / "report.html").read_text()
    assert "profile_radar.png" in report and "metrics.html" in report


def test_every_unit_file_carries_provenance_back_to_the_record(ran):
    import hashlib

    doc = json.loads((ran / "results/metrics/model_a/demo/q01/1.json").read_text())
    prov = doc["provenance"]
    assert prov["thinkprobe_version"] and len(prov["source_sha256"]) == 64
    graph_file = "results/graphs/model_a/demo/q01/1.json"
    assert prov["inputs"][graph_file] == hashlib.sha256((ran / graph_file).read_bytes()).hexdigest()
    trace = json.loads((ran / "results/traces/model_a/demo/q01/1.json").read_text())
    line = (ran / "examples/traces/demo.jsonl").read_bytes().split(b"\n")[0]
    assert trace["provenance"]["record"]["sha256"] == hashlib.sha256(line).hexdigest()
    assert trace["provenance"]["record"]["source"].endswith("demo.jsonl:1")


def test_workflow_metrics_equal_the_cli(ran, tmp_path):
    from thinkprobe.cli import main

    assert main(["analyze", str(ran / "examples/traces/demo.jsonl"), "--out", str(tmp_path), "--quiet"]) == 0
    cli = pd.read_parquet(tmp_path / "metrics.parquet").set_index("trace_id")
    wf = pd.read_parquet(ran / "results/tables/metrics.parquet").set_index("record_id")
    common = sorted(set(cli.index) & set(wf.index))
    assert len(common) == 12
    pd.testing.assert_frame_equal(cli.loc[common, list(METRIC_NAMES)], wf.loc[common, list(METRIC_NAMES)],
                                  check_names=False, rtol=1e-6)


def test_rerun_without_change_does_nothing(ran):
    out = snakemake(ran, "-n").stdout
    assert "Nothing to be done" in out and job_counts(out) == {}


def test_changing_tau_elab_reruns_graphs_metrics_and_aggregates_only(ran):
    cfg = write_config(ran, lambda c: c["analysis"]["trajectory"].update(elab_percentile=70.0))
    out = snakemake(ran, "-n", "--configfile", str(cfg)).stdout
    assert job_counts(out) == {"graph": 3, "metrics": 3, **AGGREGATES}
    assert "Params have changed" in out and "'elab_percentile': 70.0" in out


def test_changing_a_metric_constant_reruns_metrics_only(ran):
    cfg = write_config(ran, lambda c: c["analysis"]["metrics"].update(redundancy_similarity=0.8))
    assert job_counts(snakemake(ran, "-n", "--configfile", str(cfg)).stdout) == {"metrics": 3, **AGGREGATES}


def test_changing_a_texttiling_constant_reruns_from_segmentation(ran):
    cfg = write_config(ran, lambda c: c["analysis"]["texttiling"].update(prominence=0.2))
    assert job_counts(snakemake(ran, "-n", "--configfile", str(cfg)).stdout) == {
        **{s: 3 for s in BATCHED}, **AGGREGATES}


def test_changing_the_dimension_map_reruns_the_profiles_only(ran):
    cfg = write_config(ran, lambda c: c["analysis"]["profile"].update(dimensions="app_g"))
    assert job_counts(snakemake(ran, "-n", "--configfile", str(cfg)).stdout) == {
        "profiles": 1, "figures": 1, "report_tables": 1, "model_summaries": 1, "all": 1}


@pytest.mark.parametrize("module, expected", [
    ("metrics.py", {"metrics": 3}),
    ("graph.py", {"graph": 3, "metrics": 3}),
    ("segmentation.py", {s: 3 for s in BATCHED}),
    ("profile.py", {}),
])
def test_editing_a_module_reruns_the_rules_that_use_it(ran, module, expected):
    path = ran / "thinkprobe" / module
    original = path.read_text()
    try:
        path.write_text(original + "\n# an edit\n")
        out = snakemake(ran, "-n").stdout
        aggregates = AGGREGATES if module != "profile.py" else {"profiles": 1, "figures": 1, "report_tables": 1,
                                                                   "model_summaries": 1, "all": 1}
        assert job_counts(out) == {**expected, **aggregates}
        assert "Params have changed" in out
    finally:
        path.write_text(original)


def test_editing_a_page_template_reruns_the_pages_only(ran):
    """A template is no module (no import leads to it): the page rules name it as data of their code."""
    path = ran / "thinkprobe" / "view" / "templates" / "trace_page.html.j2"
    original = path.read_text()
    try:
        path.write_text(original + "{# an edit #}\n")
        out = snakemake(ran, "-n").stdout
        assert job_counts(out) == {"trace_pages": 1, "model_summaries": 1, "report_tables": 1, "all": 1}
        assert "Params have changed" in out
    finally:
        path.write_text(original)


def test_adding_a_question_computes_only_its_units_and_the_aggregates(ran, tmp_path):
    """A question added to the demo set: the demo batch of each of the 3 models (its unit list grew), its import
    job included; the analysis jobs keep every unit file already current (stages.batches.current_doc): only q04's
    units are computed, every other unit file stays as it was, byte for byte and untouched."""
    import shutil

    wd = tmp_path / "wd"
    shutil.copytree(ran, wd, symlinks=True)
    extra = wd / "examples" / "extra.jsonl"
    first = json.loads((wd / "examples/traces/demo.jsonl").read_text().splitlines()[0])
    extra.write_text(json.dumps({**first, "id": "model_a-q04-r1", "question_id": "q04"}) + "\n")
    cfg = write_config(wd, lambda c: c["inputs"].append({"path": str(extra), "question_set": "demo"}))
    out = snakemake(wd, "-n", "--configfile", str(cfg)).stdout
    assert job_counts(out) == {"import_traces": 3, **{s: 3 for s in BATCHED}, **AGGREGATES}
    assert "results/batches/traces/model_a/demo/b0000.json" in out  # the import job of q04's batch
    before = {p: p.stat().st_mtime_ns for stage in ("segments", "graphs", "metrics", "embeddings")
              for p in (wd / "results" / stage).rglob("*.*")}
    snakemake(wd, "--configfile", str(cfg))
    assert all(p.stat().st_mtime_ns == t for p, t in before.items())  # nothing else was written again
    assert (wd / "results/metrics/model_a/demo/q04/1.json").exists()
    metrics = pd.read_parquet(wd / "results/tables/metrics.parquet")
    assert len(metrics) == len(pd.read_parquet(ran / "results/tables/metrics.parquet")) + 1
    assert "model_a/demo/q04/1" in set(metrics["trace_id"])


def test_a_new_batch_size_reruns_the_analysis_jobs_once_and_recomputes_no_unit(ran, tmp_path):
    """resources.batch_questions is a resource, not a parameter: 1 question a batch instead of 10 gives every model 3
    batches for its 1; each of those jobs runs once (the import jobs rewrite their trace files as they were), finds
    its units' files current (same code, parameters and inputs) and keeps them: no unit file is written again, the
    tables are the same, and the next run does nothing."""
    import shutil

    wd = tmp_path / "wd"
    shutil.copytree(ran, wd, symlinks=True)
    cfg = write_config(wd, lambda c: c["resources"].update(batch_questions=1))
    assert job_counts(snakemake(wd, "-n", "--configfile", str(cfg)).stdout) == {
        "import_traces": 9, **{s: 9 for s in BATCHED}} | AGGREGATES  # import jobs per analysis batch too
    before = {p: p.stat().st_mtime_ns for stage in ("segments", "graphs", "metrics", "embeddings")
              for p in (wd / "results" / stage).rglob("*.*")}
    snakemake(wd, "--configfile", str(cfg))
    assert before and all(p.stat().st_mtime_ns == t for p, t in before.items())
    for table in ("metrics", "exclusions", "profiles"):
        pd.testing.assert_frame_equal(pd.read_parquet(wd / f"results/tables/{table}.parquet"),
                                      pd.read_parquet(ran / f"results/tables/{table}.parquet"))
    assert "segment model_a/demo/b0002: {'ok': 2, 'missing': 0, 'excluded': 0, 'absent': 0}" in (
        wd / "results/logs/segment/model_a/demo/b0002.log").read_text()
    assert job_counts(snakemake(wd, "-n", "--configfile", str(cfg)).stdout) == {}


def test_invalid_config_stops_before_any_job(tmp_path):
    cfg = with_analysis(yaml.safe_load((REPO / "config/config.yaml").read_text()))
    cfg["analysis"]["trajectory"]["elab_percentile"] = 200
    cfg["analysis"]["encoder"]["backend"] = "tensorflow"
    cfg["bogus"] = 1
    wd = make_workdir(tmp_path, cfg)
    proc = snakemake(wd, check=False)
    err = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "analysis.trajectory.elab_percentile = 200 is not allowed: must be <= 100" in err
    assert "analysis.encoder.backend = 'tensorflow' is not allowed: must be one of" in err
    assert "bogus" in err and "allowed keys" in err
    assert not (wd / "results").exists()


def test_missing_input_file_is_named(tmp_path):
    wd = make_workdir(tmp_path, {"inputs": [{"path": "nowhere/traces.jsonl", "question_set": "x"}]})
    proc = snakemake(wd, "-n", check=False)
    assert proc.returncode != 0 and "nowhere/traces.jsonl" in proc.stdout + proc.stderr


def test_unreadable_items_are_recorded_and_the_rest_goes_on(tmp_path):
    good = (REPO / "examples/traces/demo.jsonl").read_text().splitlines()[:2]
    (tmp_path / "mixed.jsonl").write_bytes(("\n".join([good[0], "{not json", good[1]]) + "\n").encode()
                                           + b'{"model": "m", "text": "\xff\xfe"}\n')
    wd = make_workdir(tmp_path / "wd", {"inputs": [{"path": str(tmp_path / "mixed.jsonl"), "question_set": "s"}]})
    snakemake(wd)
    excl = pd.read_parquet(wd / "results/tables/exclusions.parquet")
    reasons = " | ".join(excl["reason"])
    assert "invalid JSON on line 2" in reasons and "invalid UTF-8" in reasons
    assert len(pd.read_parquet(wd / "results/tables/metrics.parquet")) == 2


def test_killed_mid_run_leaves_no_partial_output_and_resumes_to_identical_results(ran, tmp_path):
    wd = make_workdir(tmp_path)
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile(wd)), "--directory", str(wd),
           "--cores", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env_for(wd), cwd=wd,
                            start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and not list((wd / "results").glob("segments/*/demo/*/*.json")):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert list((wd / "results").glob("segments/*/demo/*/*.json")), "the run was killed before any segment job"
    assert not (wd / "results/tables/metrics.parquet").exists()
    for f in (wd / "results").rglob("*.json"):
        json.loads(f.read_text())  # every file that exists is complete
    snakemake(wd, "--unlock")  # a killed Snakemake leaves its lock, as after a power loss
    snakemake(wd, "--rerun-incomplete")
    for table in ("metrics", "exclusions", "profiles"):
        a = pd.read_parquet(wd / f"results/tables/{table}.parquet")
        b = pd.read_parquet(ran / f"results/tables/{table}.parquet")
        pd.testing.assert_frame_equal(a, b)
    # The resumed segment job keeps the units the killed one finished (stages.batches.current_doc) and encodes the
    # rest in a smaller encoder batch, whose padding moves the embeddings in the last float bits (< 1e-6): every
    # Thought Graph equals the uninterrupted run's (its nodes, edges, classes and texts exactly; its numbers, such as
    # the tiling threshold, to 1e-6); only the digests of its inputs in its provenance may differ.
    from thinkprobe import integrity
    from thinkprobe.stages.unitfiles import load_embeddings

    def same(a, b) -> bool:
        if isinstance(a, float) or isinstance(b, float):
            return a == pytest.approx(b, rel=1e-6, abs=1e-9)
        if isinstance(a, dict):
            return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list):
            return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        return a == b

    for f in (ran / "results/graphs").rglob("*.json"):
        a, b = (integrity.unsealed(json.loads(p.read_text())) for p in (f, wd / f.relative_to(ran)))
        assert same({**a, "provenance": None}, {**b, "provenance": None}), f
    import numpy as np

    for f in (ran / "results/embeddings").rglob("*.npz"):
        a, b = load_embeddings(f, outdate=False), load_embeddings(wd / f.relative_to(ran), outdate=False)
        # a unit without sentences has no vectors: (0, 384) from an encoder batch, (0, 0) when none ran
        assert (len(a) == len(b) == 0) or (a.shape == b.shape and np.allclose(a, b, rtol=0, atol=1e-6)), f


def test_real_corpus_traces_end_to_end(tmp_path):
    folder = corpus_path("steering-thinking-llms", "compare-base-reasoning", "results", "vars")
    records = []
    for model in ("deepseek-r1-distill-qwen-1.5b", "deepseek-r1-distill-llama-8b"):
        rows = json.loads((folder / f"reasoning_comparison_{model}.json").read_text())
        records += [{"model": model, "question_id": f"row{i}", "run": 1, "response": r["response"]}
                    for i, r in enumerate(rows[:4])]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    wd = make_workdir(tmp_path / "wd", {"inputs": [{"path": str(tmp_path / "corpus.jsonl"), "question_set": "steer"}]})
    snakemake(wd)
    metrics = pd.read_parquet(wd / "results/tables/metrics.parquet")
    excl = pd.read_parquet(wd / "results/tables/exclusions.parquet")
    assert len(metrics) + len(excl) == 8 and len(metrics) >= 7
    assert (metrics["ATU"] > 1).all() and (metrics["AT"] > 100).all()
    prof = pd.read_parquet(wd / "results/tables/profiles.parquet")
    assert set(prof.loc[prof.level == "model", "model"]) == {"deepseek-r1-distill-qwen-1.5b",
                                                             "deepseek-r1-distill-llama-8b"}


def test_an_altered_unit_file_is_never_used_and_the_next_run_recomputes_it(ran, tmp_path):
    """Issue 28, item 1: a graph file altered after the run, still valid JSON (its nodes' classes rewritten).
    The next run's metrics job does not use it: that unit is excluded for the run, with a warning naming the
    file, which is marked out of date (the trace pages of the same run still find it). The run after
    recomputes the graph from its intact inputs, and every table equals the original run's."""
    import shutil

    wd = tmp_path / "wd"
    shutil.copytree(ran, wd, symlinks=True)
    graph = next(p for p in sorted((wd / "results/graphs").rglob("*.json"))
                 if json.loads(p.read_text())["status"] == "ok")
    doc = json.loads(graph.read_text())
    for node in doc["graph"]["nodes"]:
        node["type"] = "SYN"
    graph.write_text(json.dumps(doc))
    unit = "/".join(graph.with_suffix("").parts[-4:])
    model, qset = graph.parts[-4], graph.parts[-3]
    # Snakemake tracks a batch's manifest, not its unit files: the edit is seen by the next job that reads the
    # file (here the metrics jobs, asked for again), which refuses it and marks the graph batch out of date
    snakemake(wd, "--forcerun", "metrics")
    excluded = pd.read_parquet(wd / "results/tables/exclusions.parquet").set_index("trace_id")
    assert "altered after it was written" in excluded.loc[unit, "reason"]
    log = (wd / "results/logs/metrics" / model / qset / "b0000.log").read_text()
    assert f"WARNING: results/graphs/{unit}.json: its content does not match its digest" in log
    assert graph.stat().st_mtime < 10
    assert (wd / "results/batches/graphs" / model / qset / "b0000.json").stat().st_mtime < 10
    assert "rule graph" in snakemake(wd, "-n").stdout  # the next run reruns that graph batch
    snakemake(wd)
    for table in ("metrics", "exclusions", "profiles"):
        pd.testing.assert_frame_equal(pd.read_parquet(wd / f"results/tables/{table}.parquet"),
                                      pd.read_parquet(ran / f"results/tables/{table}.parquet"))
    assert graph.read_bytes() == (ran / graph.relative_to(wd)).read_bytes()
