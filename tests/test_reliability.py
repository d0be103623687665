"""Reliability (issue 10): one bad record or unit never costs a batch, ids never collide, reruns are keyed on
content, failed jobs leave their traceback in the log, outputs respect the umask; plus the code hashes and
encoder checks of issue 9 (items 6 and 8) that need no GPU.

Every test that analyses inputs asserts that each input is accounted for: analysed + excluded = inputs.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from thinkprobe.traces import safe_id

from .workflow_helpers import REPO, env_for, job_counts, make_workdir, snakefile, snakemake

DEMO = [json.loads(line) for line in (REPO / "examples/traces/demo.jsonl").read_text("utf-8").splitlines()]
UNICODE_IDS = ["問題一", "問題二", "Frage-ä", "Frage-ö"]


def _good(i: int, **fields) -> dict:
    rec = {k: v for k, v in DEMO[i].items() if k in ("text", "domain")}
    return {"model": "m", "run": 1, **rec, **fields}


def _poisoned(i: int, marker: str, **fields) -> dict:
    rec = _good(i, **fields)
    rec["text"] = rec["text"].replace("</think>", f"\n\nA sentence that carries the marker {marker} here.\n</think>")
    return rec


def _hostile_lines() -> list[str]:
    """Four lines that each used to stop a batch: lone surrogates (text, id), deep nesting, a huge integer."""
    text = DEMO[2]["text"]
    return [
        json.dumps({"id": "surrogate-text", "model": "m", "question_id": "h1", "text": text.replace("</think>", "\ud83d</think>")}),
        json.dumps({"id": "surrogate-id-\ud800", "model": "m", "question_id": "h2", "text": text}),
        '{"id": "deep", "model": "m", "question_id": "h3", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"id": "bigint", "model": "m", "question_id": "h4", "run": ' + "9" * 5000 + ', "text": "<think>x</think>"}',
    ]


def _good_records() -> list[dict]:
    recs = [_good(0, id="good-1", question_id="q1"), _good(1, id="good-2", question_id="q2")]
    recs += [_good(3 + k, id=f"u{k}", question_id=qid) for k, qid in enumerate(UNICODE_IDS)]
    recs += [_poisoned(7, "POISON-GRAPH", id="poison-graph", question_id="pg"),
             _poisoned(8, "POISON-METRICS", id="poison-metrics", question_id="pm")]
    return recs


# Fault injection into the private copy of the package (never the real one): a unit whose text carries a
# marker raises inside the graph or the metrics stage, and the aggregate job fails when asked to.
_INJECT = {
    "thinkprobe/stages/graph.py": '''

_real_graph_of = graph_of


def graph_of(seg, *args, **kwargs):
    if "POISON-GRAPH" in seg.trace.text:
        raise RuntimeError("injected graph failure")
    return _real_graph_of(seg, *args, **kwargs)
''',
    "thinkprobe/stages/metrics.py": '''

_real_compute_metrics = compute_metrics


def compute_metrics(graph, *args, **kwargs):
    if any("POISON-METRICS" in t for t in graph.texts):
        raise RuntimeError("injected metrics failure")
    return _real_compute_metrics(graph, *args, **kwargs)
''',
    "thinkprobe/stages/tables.py": '''

_real_aggregate = aggregate


def aggregate(*args, **kwargs):
    import os

    if os.environ.get("THINKPROBE_TEST_FAIL_AGGREGATE"):
        raise RuntimeError("injected aggregate failure")
    return _real_aggregate(*args, **kwargs)
''',
}


def _run(wd: Path, *args: str, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile(wd)), "--directory", str(wd),
           "--cores", "2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env={**env_for(wd), **(extra_env or {})},
                          timeout=900, cwd=wd)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The workflow on good + hostile inputs, first with the aggregate job failing, then completed."""
    root = tmp_path_factory.mktemp("hostile")
    (root / "good.jsonl").write_text("\n".join(json.dumps(r) for r in _good_records()) + "\n", "utf-8")
    (root / "hostile.jsonl").write_text("\n".join(_hostile_lines()) + "\n", "utf-8")
    cfg = {"inputs": [{"path": str(root / "good.jsonl"), "question_set": "s"},
                      {"path": str(root / "hostile.jsonl"), "question_set": "s"}]}
    wd = make_workdir(root / "wd", cfg, package_copy=True)
    for rel, code in _INJECT.items():
        with open(wd / rel, "a", encoding="utf-8") as fh:
            fh.write(code)
    old = os.umask(0o022)
    try:
        failed = _run(wd, "--keep-going", extra_env={"THINKPROBE_TEST_FAIL_AGGREGATE": "1"})
        log = wd / "results/logs/aggregate.log"
        (wd / "failed-aggregate.log").write_bytes(log.read_bytes() if log.exists() else b"")
        completed = _run(wd)
    finally:
        os.umask(old)
    return wd, failed, completed


@pytest.mark.workflow
def test_workflow_accounts_for_every_input_despite_hostile_records(hostile):
    wd, failed, completed = hostile
    assert completed.returncode == 0, completed.stdout + completed.stderr
    res = wd / "results/tables"
    metrics = pd.read_parquet(res / "metrics.parquet")
    excl = pd.read_parquet(res / "exclusions.parquet")
    n_inputs = len(_good_records()) + len(_hostile_lines())
    assert len(metrics) + len(excl) == n_inputs
    assert len(metrics) == 6 and (res / "profiles.parquet").exists()
    reasons = dict(zip(excl["source"].str.rsplit("/", n=1).str[-1] + "|" + excl["trace_id"], excl["reason"]))
    text = "\n".join(f"{k}: {v}" for k, v in reasons.items())
    # items 1 and 2: each hostile line is one exclusion naming its line
    assert "hostile.jsonl:1|" in text and "lone surrogate" in reasons[next(k for k in reasons if "hostile.jsonl:1|" in k)]
    assert "lone surrogate" in reasons[next(k for k in reasons if "hostile.jsonl:2|" in k)]
    assert "nested too deeply" in reasons[next(k for k in reasons if "hostile.jsonl:3|" in k)]
    assert "line 4" in reasons[next(k for k in reasons if "hostile.jsonl:4|" in k)]
    # item 4: a unit failing inside the graph or metrics stage is excluded with its stage, the shard goes on
    by_qid = excl.set_index("question_id")
    assert by_qid.loc["pg", "stage"] == "graph" and "injected graph failure" in by_qid.loc["pg", "reason"]
    assert by_qid.loc["pm", "stage"] == "metrics" and "injected metrics failure" in by_qid.loc["pm", "reason"]


@pytest.mark.workflow
def test_unicode_ids_stay_distinct_and_keep_their_original_form(hostile):
    wd, _, completed = hostile
    metrics = pd.read_parquet(wd / "results/tables/metrics.parquet")
    assert set(UNICODE_IDS) <= set(metrics["question_id"])  # the tables keep the original ids
    unit_paths = {q: metrics.loc[metrics.question_id == q, "trace_id"].item() for q in UNICODE_IDS}
    assert len(set(unit_paths.values())) == 4  # four units, four distinct files
    for qid, unit in unit_paths.items():
        assert unit.split("/")[2] == safe_id(qid)
        doc = json.loads((wd / "results/traces" / f"{unit}.json").read_text("utf-8"))
        assert doc["ids"]["question_id"] == qid and doc["status"] == "ok"
    assert "duplicate unit" not in completed.stdout + completed.stderr
    excl = pd.read_parquet(wd / "results/tables/exclusions.parquet")
    assert not excl["reason"].str.contains("duplicate").any()


@pytest.mark.workflow
def test_a_failed_job_leaves_its_traceback_in_its_log(hostile):
    wd, failed, _ = hostile
    assert failed.returncode != 0
    assert "results/logs/aggregate.log" in failed.stdout + failed.stderr
    text = (wd / "failed-aggregate.log").read_text("utf-8")  # the failed job's log, kept by the fixture
    assert "Traceback (most recent call last)" in text and "RuntimeError: injected aggregate failure" in text
    assert "aggregate:" in (wd / "results/logs/aggregate.log").read_text("utf-8")  # the rerun's own log


@pytest.mark.workflow
def test_outputs_respect_the_umask(hostile):
    wd, _, _ = hostile
    files = [p for p in (wd / "results").rglob("*") if p.is_file() and "logs" not in p.parts]
    assert files
    modes = {stat.S_IMODE(p.stat().st_mode) for p in files}
    assert modes == {0o644}, sorted(oct(m) for m in modes)


@pytest.mark.workflow
def test_a_blank_line_at_the_top_of_an_input_reruns_nothing(hostile):
    wd, _, _ = hostile
    good = Path(yaml.safe_load((wd / "config/config.yaml").read_text())["inputs"][0]["path"])
    original = good.read_bytes()
    try:
        good.write_bytes(b"\n" + original)
        out = snakemake(wd, "-n").stdout
        assert "Nothing to be done" in out and job_counts(out) == {}, out
    finally:
        good.write_bytes(original)


@pytest.mark.workflow
def test_segment_provenance_records_the_encoder_device(hostile):
    wd, _, _ = hostile
    doc = json.loads((wd / "results/segments/m/s/q1/1.json").read_text("utf-8"))
    assert doc["provenance"]["encoder_device"] == "cpu" and doc["provenance"]["encoder"].startswith("all-MiniLM")


# ---------------------------------------------------------------------------------------------------- CLI

GOOD_TEXT = (REPO / "examples/trace.txt").read_text("utf-8")


def _cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "thinkprobe.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """The CLI on a folder of hostile inputs; returns (folder, out, process, expected exclusions, n_inputs)."""
    root = tmp_path_factory.mktemp("cli")
    src = root / "in"
    src.mkdir()
    text = DEMO[0]["text"]
    lines = [json.dumps({"id": qid, "model": "m", "text": DEMO[1 + k]["text"]}) for k, qid in enumerate(UNICODE_IDS)]
    lines += _hostile_lines()
    (src / "mixed.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    (src / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "bom-line", "text": text}).encode() + b"\n")
    (src / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "bom-file", "text": text}).encode())
    (src / "good.txt").write_text(GOOD_TEXT, "utf-8")
    (src / ".hidden.txt").write_text(GOOD_TEXT, "utf-8")
    (src / "..txt").write_text(GOOD_TEXT, "utf-8")
    (src / "dangling.txt").symlink_to(root / "nowhere.txt")
    os.mkfifo(src / "pipe.txt")
    os.mkfifo(root / "given.txt")  # a FIFO given as an argument must not hang
    out = root / "out"
    (out / "graphs").mkdir(parents=True)
    (out / "graphs" / "stale-from-an-earlier-run.json").write_text("{}")
    proc = _cli("analyze", str(src), str(root / "given.txt"), "--out", str(out), "--quiet")
    expected = {"mixed-5": "lone surrogate", "mixed-6": "lone surrogate", "mixed-7": "nested too deeply",
                "mixed-8": "digit", ".hidden.txt": "hidden file", "..txt": "hidden file",
                "dangling": "dangling symbolic link", "pipe": "not a regular file (a FIFO)",
                "given": "not a regular file (a FIFO)"}
    n_inputs = len(lines) + 3 + 4 + 1  # mixed lines, bom.jsonl + bom.json + good.txt, 4 skipped entries, given
    return src, out, proc, expected, n_inputs


@pytest.mark.slow
def test_cli_accounts_for_every_hostile_input(cli_run):
    src, out, proc, expected, n_inputs = cli_run
    assert proc.returncode == 0, proc.stderr
    metrics = pd.read_parquet(out / "metrics.parquet")
    excl = pd.read_parquet(out / "exclusions.parquet")
    assert len(metrics) + len(excl) == n_inputs, (metrics.trace_id.tolist(), excl.to_dict("records"))
    reasons = dict(zip(excl["trace_id"], excl["reason"]))
    for trace_id, fragment in expected.items():
        match = [r for t, r in reasons.items() if t == safe_id(trace_id) or t == trace_id]
        assert match and fragment in match[0], (trace_id, reasons)
    assert {"bom-line", "bom-file"} <= set(metrics.trace_id)  # a BOM loses nothing
    assert any("line 7" in r for r in reasons.values())  # the deep record is located


@pytest.mark.fast
def test_cli_unicode_ids_get_distinct_graph_files(cli_run):
    _, out, _, _, _ = cli_run
    metrics = pd.read_parquet(out / "metrics.parquet")
    ids = [safe_id(q) for q in UNICODE_IDS]
    assert len(set(ids)) == 4 and set(ids) <= set(metrics.trace_id)
    for q in UNICODE_IDS:
        graph = json.loads((out / "graphs" / f"{safe_id(q)}.json").read_text("utf-8"))
        assert graph["graph"]["record_id"] == q


@pytest.mark.fast
def test_cli_reused_out_drops_stale_graphs_and_respects_umask(cli_run):
    _, out, proc, _, _ = cli_run
    assert not (out / "graphs" / "stale-from-an-earlier-run.json").exists()
    assert "removed 1 graph file" in proc.stderr
    graphs = sorted((out / "graphs").iterdir())
    assert len(graphs) == len(pd.read_parquet(out / "metrics.parquet"))


@pytest.mark.fast
def test_cli_out_pointing_at_a_file_is_a_clear_error(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("keep me")
    proc = _cli("analyze", str(REPO / "examples/trace.txt"), "--out", str(target))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"--out {target}: exists and is not a directory" in proc.stderr
    assert target.read_text() == "keep me"


# ------------------------------------------------------------------------------------------- file modes

@pytest.mark.fast
@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_atomic_writes_respect_the_umask(tmp_path, umask, mode):
    from thinkprobe.outputs import atomic_write_bytes

    old = os.umask(umask)
    try:
        atomic_write_bytes(tmp_path / "x.json", b"{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "x.json").stat().st_mode) == mode


# ------------------------------------------------------------------------------- ids and the job log

@pytest.mark.fast
def test_safe_id_is_injective_and_matches_the_wildcards():
    import re

    ids = ["q1", "Frage-ä", "Frage-ö", "Frage-a", "問題一", "問題二", "a b", "a_b", "a/b", "..", ".", "", "x" * 200,
           "x" * 199, ".hidden", "hidden"]
    names = [safe_id(i) for i in ids]
    assert len(set(names)) == len(ids)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", n) and not n.startswith(".") for n in names)
    assert safe_id("q1") == "q1" and safe_id("a_b") == "a_b"


@pytest.mark.fast
def test_job_log_keeps_the_traceback_of_a_failing_script(tmp_path):
    script = tmp_path / "job.py"
    log = tmp_path / "logs" / "job.log"
    script.write_text(
        "import os, sys\n"
        "from thinkprobe.stages.joblog import job_log\n"
        f"with job_log({str(log)!r}) as log:\n"
        "    print('started', file=sys.stderr)\n"
        "    os.write(2, b'native stderr\\n')\n"
        "    raise KeyError('the job broke')\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "KeyError" in proc.stderr  # the job still fails, and says so
    text = log.read_text()
    assert "started" in text and "native stderr" in text
    assert "Traceback (most recent call last)" in text and "KeyError: 'the job broke'" in text


# ------------------------------------------------------------------------ code hashes (issue 9, item 8)

@pytest.mark.fast
def test_stage_module_lists_follow_the_real_imports():
    from thinkprobe.codedeps import script_modules

    def of(script):
        return set(script_modules(REPO / "workflow" / "scripts" / script))

    graph, metrics, segment, ingest = of("graph.py"), of("metrics.py"), of("segment.py"), of("import_traces.py")
    assert {"traces", "segmentation", "graph", "pipeline", "params"} <= graph
    assert {"graph", "metrics", "lexicons/hedges.txt"} <= metrics
    assert {"segmentation", "texttiling", "encoder", "lexicons/cues.tsv"} <= segment
    assert not {"graph", "metrics"} & segment  # whole modules: their functions are never called
    assert {"traces", "units"} <= ingest and "encoder" not in ingest
    assert "profile" in of("profiles.py") and "profile" not in of("aggregate.py")
    assert of("report_tables.py") and {"stages.batches"} <= graph & metrics & segment  # each writes its manifest


def _stage_hashes(package_root: Path) -> dict[str, str]:
    code = ("import json; from thinkprobe.codedeps import SCRIPTS_DIR, script_code; "
            "print(json.dumps({s: script_code(SCRIPTS_DIR / f'{s}.py') for s in ('graph', 'metrics', 'segment')}))")
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                     check=True, cwd=package_root).stdout)


@pytest.mark.fast
@pytest.mark.parametrize("module, changed", [("traces.py", {"graph", "segment"}), ("metrics.py", {"metrics"})])
def test_editing_a_module_changes_exactly_the_stage_hashes_that_use_it(tmp_path, module, changed):
    import shutil

    shutil.copytree(REPO / "thinkprobe", tmp_path / "thinkprobe", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "workflow" / "scripts", tmp_path / "workflow" / "scripts")
    before = _stage_hashes(tmp_path)
    with open(tmp_path / "thinkprobe" / module, "a") as fh:
        fh.write("\n# an edit\n")
    after = _stage_hashes(tmp_path)
    assert {stage for stage in before if before[stage] != after[stage]} == changed


@pytest.mark.fast
def test_onnx_cache_key_follows_the_builder_source(tmp_path):
    import shutil

    shutil.copytree(REPO / "thinkprobe", tmp_path / "thinkprobe", ignore=shutil.ignore_patterns("__pycache__"))
    code = "from thinkprobe.onnx_bert import builder_sha256; print(builder_sha256())"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def key() -> str:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                              cwd=tmp_path).stdout.strip()

    before = key()
    encoder = tmp_path / "thinkprobe/encoder.py"  # the code around the graph: not part of the key
    encoder.write_text(encoder.read_text() + "\n# an edit\n")
    assert key() == before
    path = tmp_path / "thinkprobe/onnx_bert.py"
    path.write_text(path.read_text().replace('const("half", np.array(0.5, np.float32))',
                                             'const("half", np.array(0.5, np.float32))  # edited'))
    assert key() != before and len(before) == 64


# -------------------------------------------------------------------------- encoder (issue 9, items 6, 8)

def _model_copy(tmp_path: Path, **config_changes) -> Path:
    from thinkprobe.encoder import resolve_model

    _, folder = resolve_model("all-MiniLM-L6-v2")
    copy = tmp_path / "model"
    copy.mkdir(parents=True)
    for item in folder.iterdir():
        (copy / item.name).symlink_to(item)
    (copy / "config.json").unlink()
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(config_changes)
    (copy / "config.json").write_text(json.dumps(cfg))
    return copy


@pytest.mark.fast
@pytest.mark.parametrize("change, fragment", [({"hidden_act": "relu"}, "hidden_act is 'relu'"),
                                               ({"position_embedding_type": "relative_key"}, "position_embedding_type")])
def test_onnx_backend_refuses_a_bert_it_cannot_reproduce(tmp_path, change, fragment):
    from thinkprobe.encoder import EncoderError, load_encoder, onnx_problem
    from thinkprobe.params import EncoderParams

    folder = _model_copy(tmp_path, **change)
    assert fragment in onnx_problem(folder)
    with pytest.raises(EncoderError, match=fragment):
        load_encoder(EncoderParams(model=str(folder), backend="onnx"), device="cpu")
    assert onnx_problem(_model_copy(tmp_path / "ok")) is None


@pytest.mark.fast
def test_cuda_requested_without_a_gpu_falls_back_to_cpu_with_a_warning(caplog):
    from thinkprobe.encoder import load_encoder, onnx_providers

    assert onnx_providers("cuda", ["CUDAExecutionProvider", "CPUExecutionProvider"])[0][0] == "CUDAExecutionProvider"
    providers, warning = onnx_providers("cuda", ["CPUExecutionProvider"])
    assert providers == ["CPUExecutionProvider"] and "onnxruntime-gpu" in warning
    with caplog.at_level("WARNING", logger="thinkprobe.encoder"):
        enc = load_encoder(device="cuda")  # this machine has no GPU and no CUDA provider
    assert enc.device == "cpu" and enc.requested_device == "cuda"
    prov = enc.provenance()
    assert prov["encoder_device"] == "cpu" and "CUDA requested" in prov["encoder_device_note"]
    assert any("CUDA requested" in r.getMessage() for r in caplog.records)
    assert enc.encode(["a sentence"]).shape == (1, 384)


@pytest.mark.fast
def test_auto_device_uses_cuda_only_when_a_gpu_is_assigned(monkeypatch):
    from thinkprobe.encoder import wanted_device

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert wanted_device("auto") == "cpu" and wanted_device("auto", gpu=True) == "cuda"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert wanted_device("auto") == "cuda" and wanted_device("auto", gpu=False) == "cpu"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert wanted_device("auto") == "cpu" and wanted_device("cpu") == "cpu"


# ------------------------------------------------------------------------------ configuration (item 9)

@pytest.mark.workflow
def test_config_errors_name_the_key_before_any_job(tmp_path):
    cfg = {"inputs": [{"path": "examples/traces/demo.jsonl", "question_set": "demo"}],
           "grid": {"models": ["model_a", "model_a"], "runs": [1, "1"]},
           "analysis": {"segmentation": {"cue_lexicon": "no/such/cues.tsv"},
                        "metrics": {"hedge_lexicon": "no/such/hedges.txt"},
                        "encoder": {"model": "no-such-encoder-model"}}}
    wd = make_workdir(tmp_path, cfg)
    proc = snakemake(wd, "-n", check=False)
    err = proc.stdout + proc.stderr
    assert proc.returncode != 0 and not (wd / "results").exists()
    assert "analysis.segmentation.cue_lexicon = 'no/such/cues.tsv': no such file" in err
    assert "analysis.metrics.hedge_lexicon = 'no/such/hedges.txt': no such file" in err
    assert "analysis.encoder.model = 'no-such-encoder-model': not available" in err
    assert "grid.models lists 'model_a' more than once" in err and "grid.runs lists '1' more than once" in err


@pytest.mark.workflow
def test_units_models_naming_no_model_of_the_inputs_says_so(tmp_path):
    cfg = {"inputs": [{"path": "examples/traces/demo.jsonl", "question_set": "demo"}],
           "grid": {"models": ["model_z"]}}
    proc = snakemake(make_workdir(tmp_path, cfg), "-n", check=False)
    err = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "could not be read" not in err
    assert "grid.models = ['model_z']" in err and "models ['model_a', 'model_b']" in err


@pytest.mark.workflow
@pytest.mark.parametrize("module, stages", [
    ("thinkprobe/traces.py", {"import_traces", "segment", "graph", "metrics"}),
    ("thinkprobe/metrics.py", {"metrics"}),
    ("thinkprobe/stages/tables.py", set()),
    ("thinkprobe/stages/batches.py", {"import_traces", "segment", "graph", "metrics"}),  # the batches' manifests, reuse
])
def test_workflow_reruns_follow_the_derived_module_lists(hostile, module, stages):
    wd, _, _ = hostile
    path = wd / module
    original = path.read_text("utf-8")
    try:
        path.write_text(original + "\n# an edit\n", "utf-8")
        counts = job_counts(snakemake(wd, "-n").stdout)
    finally:
        path.write_text(original, "utf-8")
    assert {s for s in ("import_traces", "segment", "graph", "metrics") if s in counts} == stages, counts
    if module.endswith("tables.py"):  # the tables' own code: aggregate and the report pages rerun
        assert counts.get("aggregate") == 1 and counts.get("report_tables") == 1
