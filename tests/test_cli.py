"""The command line: help texts, analyze (stdout and --out, JSON and GraphML graphs), profile, ablate, errors.

Commands run for real, either as a ``thinkprobe`` subprocess (where stdout and the exit code of the
installed entry point matter) or through :func:`thinkprobe.cli.main` in this process (cheaper: the
encoder is loaded once).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from thinkprobe.cli import build_parser, main
from thinkprobe.graph import EDGE_TYPES, NODE_TYPES
from thinkprobe.metrics import DIMENSIONS, METRIC_NAMES
from thinkprobe.traces import extract_reasoning

pytestmark = pytest.mark.fast

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
DEMO = EXAMPLES / "traces" / "demo.jsonl"
BAD = EXAMPLES / "traces" / "bad_inputs.jsonl"
TYPED_EDGE_METRICS = ("BF", "BR", "CBC", "CI", "GD", "RvD", "MEC", "MBD")


def thinkprobe(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("thinkprobe")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "thinkprobe.cli"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**os.environ, "COLUMNS": "100"})


def _records(*paths: Path) -> dict[str, dict]:
    out = {}
    for p in paths:
        for line in p.read_text("utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                out[rec["id"]] = rec
    return out


# ------------------------------------------------------------------------------------------------- help

def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_subcommands_are_the_documented_ones():
    assert set(_subparsers(build_parser())) == {"analyze", "profile", "ablate", "agree", "validate", "trajectory", "plan",
                                                 "preflight", "show", "summary", "migrate"}


def test_each_subcommand_runs_its_own_module_bound_by_set_defaults():
    """Dispatch is argparse's: each subcommand's parser binds ``run`` of its module ``thinkprobe.commands.<name>``
    (no chain of ifs with a fall-through)."""
    import importlib

    for name, sub in _subparsers(build_parser()).items():
        assert sub.get_default("func") is importlib.import_module(f"thinkprobe.commands.{name}").run, name


def test_an_unknown_subcommand_is_argparse_error_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["ablat", str(DEMO)])
    assert exc.value.code == 2
    assert "invalid choice: 'ablat'" in capsys.readouterr().err
    proc = thinkprobe("frobnicate", str(DEMO))
    assert proc.returncode == 2 and "invalid choice: 'frobnicate'" in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("command", [None, "analyze", "profile", "ablate", "agree", "validate", "trajectory", "plan", "preflight", "show", "summary", "migrate"])
def test_help_exits_0_and_documents_every_option(command):
    parser = build_parser()
    target = parser if command is None else _subparsers(parser)[command]
    proc = thinkprobe(*([command] if command else []), "--help")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert proc.stderr == ""
    if command is None:
        for name in _subparsers(parser):
            assert name in text
    for action in target._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        strings = action.option_strings or [action.metavar or action.dest]
        for s in strings:
            assert s in text, f"{command or 'thinkprobe'} --help does not mention {s}"
        assert action.help and action.help.strip(), f"{strings} has no help text"
        for choice in action.choices or ():
            assert str(choice) in text, f"{strings}: choice {choice} is not shown"


def test_version():
    from thinkprobe import __version__

    proc = thinkprobe("--version")
    assert proc.returncode == 0 and __version__ in proc.stdout


# ---------------------------------------------------------------------------------------------- analyze

def test_analyze_single_file_prints_one_json_line():
    proc = thinkprobe("analyze", "examples/trace.txt")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stdout
    row = json.loads(lines[0])
    assert row["trace_id"] == "trace"
    assert list(row["metrics"]) == list(METRIC_NAMES) and len(row["metrics"]) == 19
    assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in row["metrics"].values())
    assert row["n_tus"] >= 1 and row["metrics"]["ATU"] == row["n_tus"]
    assert "analysed 1 trace(s), excluded 0" in proc.stderr


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "D"
    assert main(["analyze", str(DEMO), str(BAD), "--out", str(out), "--quiet"]) == 0
    return out


def test_analyze_out_writes_tables(analysed):
    records = _records(DEMO, BAD)
    metrics = pd.read_parquet(analysed / "metrics.parquet")
    exclusions = pd.read_parquet(analysed / "exclusions.parquet")
    assert list(metrics.columns) == ["trace_id", "model", "question_id", "run", "domain", *METRIC_NAMES]
    assert list(exclusions.columns) == ["trace_id", "reason", "source", "stage"]
    # every record is accounted for exactly once
    assert sorted(list(metrics.trace_id) + list(exclusions.trace_id)) == sorted(records)
    assert {"bad-no-think", "bad-empty"} <= set(exclusions.trace_id)
    assert "bad-short" in set(metrics.trace_id)  # no length exclusion by default (input.min_words = 0)
    assert set(_records(DEMO)) <= set(metrics.trace_id)
    for _, row in metrics.iterrows():
        rec = records[row.trace_id]
        assert (row.model, row.question_id, row.run, row.domain) == (
            rec["model"], str(rec["question_id"]), str(rec["run"]), rec["domain"])


def test_analyze_out_writes_node_link_graphs(analysed):
    records = _records(DEMO, BAD)
    metrics = pd.read_parquet(analysed / "metrics.parquet")
    files = sorted((analysed / "graphs").glob("*.json"))
    assert sorted(p.stem for p in files) == sorted(metrics.trace_id)
    for path in files:
        g = nx.node_link_graph(json.loads(path.read_text("utf-8")), edges="edges")
        reasoning = extract_reasoning(records[path.stem]["text"]).text
        assert g.number_of_nodes() >= 1
        row = metrics[metrics.trace_id == path.stem].iloc[0]
        assert g.number_of_nodes() == row.ATU
        for _, d in g.nodes(data=True):
            assert {"node_type", "text", "start", "end"} <= set(d)
            assert d["node_type"] in NODE_TYPES
            assert d["text"] == reasoning[d["start"]:d["end"]]
        for _, _, d in g.edges(data=True):
            assert d["edge_type"] in EDGE_TYPES
        # the per-trace BF in the table is what the stored graph says
        n_brch = sum(1 for *_, d in g.edges(data=True) if d["edge_type"] == "BRCH")
        assert row.BF == pytest.approx(n_brch / g.number_of_nodes())


def test_analyze_graphml(tmp_path, analysed):
    out = tmp_path / "G"
    assert main(["analyze", str(DEMO), "--out", str(out), "--graph-format", "graphml", "--quiet"]) == 0
    files = sorted((out / "graphs").glob("*.graphml"))
    assert files and not list((out / "graphs").glob("*.json"))
    for path in files:
        g = nx.read_graphml(path, force_multigraph=True)
        ref = nx.node_link_graph(json.loads((analysed / "graphs" / f"{path.stem}.json").read_text("utf-8")),
                                 edges="edges")
        assert g.number_of_nodes() == ref.number_of_nodes()
        assert g.number_of_edges() == ref.number_of_edges()
        for n, d in g.nodes(data=True):
            r = ref.nodes[int(n)]
            assert (d["node_type"], d["text"], int(d["start"]), int(d["end"])) == (
                r["node_type"], r["text"], r["start"], r["end"])
        assert sorted(d["edge_type"] for *_, d in g.edges(data=True)) == sorted(
            d["edge_type"] for *_, d in ref.edges(data=True))
        # nested graph attributes survive as JSON strings
        assert json.loads(g.graph["provenance"])["layers"] == "full"


# ---------------------------------------------------------------------------------------------- profile

def test_profile(tmp_path, analysed, capsys):
    out = tmp_path / "P"
    assert main(["profile", str(analysed / "metrics.parquet"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    metrics = pd.read_parquet(analysed / "metrics.parquet")
    traces = pd.read_parquet(out / "profiles_traces.parquet")
    models = pd.read_parquet(out / "profiles_models.parquet")
    stats = pd.read_parquet(out / "zscore_stats.parquet")

    assert sorted(models.model) == sorted(metrics.model.unique()) and models.model.is_unique
    assert models.n_traces.sum() == len(metrics)
    assert set(DIMENSIONS) <= set(models.columns)
    for m in models.model:
        assert m in printed

    assert len(traces) == len(metrics)
    for m in METRIC_NAMES:
        z = traces[f"z_{m}"].to_numpy()
        x = metrics[m].to_numpy(float)
        assert z.mean() == pytest.approx(0.0, abs=1e-9), m
        if x.std() > 0:
            assert z.std(ddof=0) == pytest.approx(1.0, abs=1e-9), m
            np.testing.assert_allclose(z, (x - x.mean()) / x.std(), atol=1e-9)
        else:
            assert np.all(z == 0), m
    st = stats.set_index("metric")
    for m in METRIC_NAMES:
        assert st.loc[m, "mean"] == pytest.approx(metrics[m].mean())
        assert st.loc[m, "sd"] == pytest.approx(metrics[m].std(ddof=0))
    # a model's dimension score is the mean of its traces' scores
    for _, row in models.iterrows():
        mine = traces[traces.model == row.model]
        for dim in DIMENSIONS:
            assert row[dim] == pytest.approx(mine[dim].mean())


def test_profile_exclude_length(tmp_path, analysed):
    out = tmp_path / "P"
    assert main(["profile", str(analysed / "metrics.parquet"), "--out", str(out), "--exclude-length"]) == 0
    traces = pd.read_parquet(out / "profiles_traces.parquet")
    assert not {"z_AT", "z_ATU", "z_TPI"} & set(traces.columns)
    assert "z_BF" in traces.columns and "Efficiency" in traces.columns  # RR is left in Efficiency


# ----------------------------------------------------------------------------------------------- ablate

def test_ablate(tmp_path, capsys):
    out = tmp_path / "ablation.parquet"
    assert main(["ablate", str(DEMO), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    table = pd.read_parquet(out)
    assert list(table.layers) == ["l1", "l3", "l4", "full"] and "stage" not in table.columns
    for layers in table.layers:
        assert layers in printed
    assert (table.n_traces > 0).all()
    assert set(METRIC_NAMES) <= set(table.columns)
    l1 = table.set_index("layers").loc["l1"]
    for m in TYPED_EDGE_METRICS:
        assert l1[m] == 0, f"{m} = {l1[m]} at layers l1 (only SEQ edges)"
    full = table.set_index("layers").loc["full"]
    assert full["BF"] > 0 and full["GD"] > 0  # the typed edges appear once layer 3 runs


def test_analyze_layers_stops_the_pipeline_and_the_old_stage_option_is_refused(tmp_path):
    """Issue 27: the layer setting is --layers (pipeline.LAYER_SETTINGS); --stage names it in one line, exit 2."""
    from thinkprobe.pipeline import LAYER_SETTINGS

    action = next(a for a in _subparsers(build_parser())["analyze"]._actions if "--layers" in a.option_strings)
    assert tuple(action.choices) == LAYER_SETTINGS  # written out in the CLI so that --help imports no pipeline
    out = tmp_path / "L1"
    assert main(["analyze", str(DEMO), "--out", str(out), "--layers", "l1", "--quiet"]) == 0
    graphs = [json.loads(p.read_text("utf-8")) for p in sorted((out / "graphs").glob("*.json"))]
    assert graphs and all(g["graph"]["provenance"]["layers"] == "l1" for g in graphs)
    assert {e["edge_type"] for g in graphs for e in g["edges"]} == {"SEQ"}  # layer 1 only: the backbone
    proc = thinkprobe("analyze", str(DEMO), "--stage", "l1", "--quiet")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "--stage was renamed: use --layers" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# ----------------------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("command", ["analyze", "ablate"])
def test_bad_parameter_exits_2_naming_the_key(command, capsys):
    code = main([command, str(EXAMPLES / "trace.txt"), "--set", "trajectory.elab_percentile=200"])
    err = capsys.readouterr().err
    assert code == 2
    assert "trajectory.elab_percentile" in err and "200" in err


def test_bad_parameter_exits_2_through_the_entry_point():
    proc = thinkprobe("analyze", "examples/trace.txt", "--set", "trajectory.elab_percentile=200")
    assert proc.returncode == 2
    assert "trajectory.elab_percentile" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("argv", [
    ["analyze", "/nonexistent/traces.jsonl"],
    ["analyze", str(EXAMPLES / "trace.txt"), "/nonexistent/traces.jsonl"],
    ["ablate", "/nonexistent/traces.jsonl"],
    ["profile", "/nonexistent/traces.jsonl", "--out", "/nonexistent/out"],
])
def test_missing_path_exits_2_naming_it(argv, capsys):
    assert main(argv) == 2
    assert "/nonexistent/traces.jsonl" in capsys.readouterr().err


def test_help_imports_no_heavy_library():
    """Registering every subcommand (what `thinkprobe --help` does) imports no pandas, numpy or scipy: each
    subcommand imports its libraries when it runs (bench/loop_bench.py measures the start-up time). Nor the
    trajectory sampler, which derives its code hashes when imported (a quarter of a second)."""
    code = ("import sys; from thinkprobe.cli import build_parser; build_parser(); "
            "print(','.join(sorted(m for m in ('pandas', 'numpy', 'scipy', 'torch', 'vllm', 'thinkprobe.trajectories.sampling')"
            " if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "", f"heavy libraries imported by the CLI's parser: {out.stdout.strip()}"
