"""The generated results summary (thinkprobe/stats/summary.py, claims.py): the README's results are its output
for a committed snapshot; the checks against the paper can fail; capped cycle counts are printed as bounds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from thinkprobe.metrics import METRIC_NAMES
from thinkprobe.profile import trace_profiles
from thinkprobe.stats import claims, confound, cycles, discriminability, robustness, summary

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]


def test_readme_results_are_the_generated_summary_of_a_committed_snapshot():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = summary.readme_blocks(text)
    assert blocks, "README.md has no <!-- results: DIR --> block"
    for folder, block in blocks:
        d = ROOT / folder
        assert (d / "run.json").exists() and (d / "kruskal.parquet").exists(), f"{folder}: snapshot missing"
        size = sum(p.stat().st_size for p in d.iterdir())
        assert size < 500_000, f"{folder}: {size} bytes; a snapshot holds the small tables only"
        regenerated = summary.summary_text_rel(folder, ROOT)
        assert block == regenerated, (f"README's results block for {folder} differs from `thinkprobe summary "
                                      f"{folder}`; run `thinkprobe summary --readme README.md`")
        assert (d / "summary.md").read_text(encoding="utf-8") == regenerated


def _study(seed: int = 0, n_prompts: int = 30, models: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_prompts):
        for m in range(models):
            rows.append({"trace_id": f"m{m}/s/q{q}/1", "model": f"m{m}", "question_set": "s", "question_id": f"q{q}",
                         "run": "1", "domain": f"d{q % 3}",
                         **{k: rng.normal(0.5 * m if k in ("AT", "BF") else 0.0, 1.0) for k in METRIC_NAMES}})
    return pd.DataFrame(rows)


def _tables(tmp_path: Path, *, capped: bool = False, efficiency_drop: bool = True) -> Path:
    """A statistics folder written by the real functions on a synthetic study (plus hand-made ablation and
    agreement tables, which need the encoder)."""
    metrics = _study()
    traces, _ = trace_profiles(metrics)
    perm = {"B": 200, "seed": 1, "units": {"model": "within_prompts", "domain": "prompts"}}
    k = pd.concat([discriminability.kruskal_table(metrics, METRIC_NAMES, kind="metric", permutation=perm),
                   discriminability.kruskal_table(traces, ["Breadth", "Depth", "Structure", "Metacognition",
                                                           "Efficiency"], kind="dimension", permutation=perm)],
                  ignore_index=True)
    d = tmp_path / "stats"
    d.mkdir(parents=True)
    k.to_parquet(d / "kruskal.parquet")
    discriminability.model_over_domain(k).to_parquet(d / "model_vs_domain.parquet")
    le = confound.length_excluded_effects(metrics, permutation=perm)
    if not efficiency_drop:  # make Efficiency's model epsilon^2 rise instead
        i = (le.dimension == "Efficiency") & (le.grouping == "model")
        le.loc[i, "epsilon2_excluded"] = le.loc[i, "epsilon2_full"] + 0.01
        le.loc[i, "delta"] = 0.01
    le.to_parquet(d / "length_excluded.parquet")
    robustness.aggregation_robustness(metrics).to_parquet(d / "aggregation_robustness.parquet")
    ring = {"nodes": [{}] * 4, "edges": [{"source": a, "target": b, "edge_type": t} for a, b, t in
                                         [(0, 1, "SEQ"), (1, 2, "SEQ"), (2, 3, "SEQ"), (3, 0, "SYNT"), (2, 0, "BACK")]]}
    rows = []
    for i in range(4):
        rows += cycles.graph_cycle_rows(ring, {"trace_id": f"t{i}", "model": f"m{i % 2}"}, cap=1 if capped and i == 0 else 10)
    cycles.cycle_summary(pd.DataFrame(rows, columns=cycles.CYCLE_COLUMNS)).to_parquet(d / "cycles_summary.parquet")
    abl = pd.DataFrame([{"stage": s, "n_traces": 10, **{m: 0.0 for m in METRIC_NAMES}} for s in ("l1", "l3", "l4", "full")])
    abl.loc[1:, "BF"] = 0.2
    abl.loc[2:, "RvD"] = 3.0
    abl.loc[2, "CBC"], abl.loc[3, "CBC"] = 0.1, 0.2
    abl.loc[1:, "GD"] = [0.1, 0.12, 0.11]
    abl.to_parquet(d / "ablation.parquet")
    pd.DataFrame([{"segmentation": s, "status": st, "precision": 0.9, "recall": r, "f1": 0.6, "pk": 0.4,
                   "windowdiff": 0.45, "kappa": 0.2, "n_ref_segments": 20, "n_hyp_segments": 10}
                  for s in ("layer1", "layer1+2") for st, r in (("ok", 0.5), ("ok", 0.3), ("excluded", np.nan))]
                 ).to_parquet(d / "agreement.parquet")
    return d


def test_summary_rows_name_their_tables_and_the_paper(tmp_path):
    d = _tables(tmp_path)
    text = summary.summary_text(d)
    rows = summary.headline(summary.load_tables(d))
    tables = {r[3] for r in rows}
    assert {"kruskal", "model_vs_domain", "cycles_summary", "length_excluded", "aggregation_robustness",
            "ablation", "agreement"} <= {t for s in tables for t in s.split(", ")}
    assert "AT 0.75 (then ATU 0.58, BR 0.43)" in text  # the paper's column, from thinkprobe/stats/paper.py
    assert "permutation null, B = 200" in text
    assert "| layer1+2 | 2 / 3 | 0.900 | 0.400 | 0.600 |" in text  # agreement means over the ok rows only
    assert "VIOLATED" not in text
    le = pd.read_parquet(d / "length_excluded.parquet")
    assert (le.epsilon2_excluded_corrected == le.epsilon2_excluded - le.epsilon2_null_mean_excluded).all()
    assert "(App. G's main point; chance-corrected)?" in text


def test_capped_cycle_counts_are_lower_bounds(tmp_path):
    exact = summary.summary_text(_tables(tmp_path / "a", capped=False))
    bound = summary.summary_text(_tables(tmp_path / "b", capped=True))
    assert "none capped" in exact and ">= " not in exact.split("cycles per trace")[1].split("\n")[0]
    line = bound.split("cycles per trace")[1].split("\n")[0]
    assert "1 capped: counts are lower bounds" in line and "mean >= " in line and "max >= " in line
    cs = pd.read_parquet(tmp_path / "b" / "stats" / "cycles_summary.parquet").set_index(["model", "subgraph"])
    assert cs.loc[("(all)", "full"), "counts_are_lower_bounds"] and not cs.loc[("m1", "full"), "counts_are_lower_bounds"]


def test_checks_can_fail_and_identities_are_not_replications(tmp_path):
    up = claims.checks(summary.load_tables(_tables(tmp_path / "a", efficiency_drop=True)))
    down = claims.checks(summary.load_tables(_tables(tmp_path / "b", efficiency_drop=False)))
    q = "Does excluding the length metrics lower Efficiency's model epsilon^2?"
    assert next(c for c in up if c.claim == q).replicates
    assert not next(c for c in down if c.claim == q).replicates
    assert all(c.paper_yes for c in up)  # every check is phrased as a paper claim
    abl = {c.claim: c for c in up if c.table == "ablation"}
    assert abl["Does BF switch on at layer 3 (l3)?"].replicates
    assert not abl["Does GD reach its maximum in the full pipeline?"].replicates  # GD peaks at l4 here
    tables = summary.load_tables(tmp_path / "a" / "stats")
    ids = claims.identities(tables)
    assert all(i.holds for i in ids) and not any("Efficiency" in c.claim and "only" in c.claim for c in up)
    # a length exclusion that changed Breadth would break the identity: flagged as a bug
    le = tables["length_excluded"].copy()
    le.loc[le.dimension == "Breadth", "delta"] = 0.05
    broken = claims.identities({**tables, "length_excluded": le})
    assert not next(i for i in broken if "AT, ATU and TPI" in i.statement).holds


def test_snapshot_and_cli(tmp_path):
    d = _tables(tmp_path)
    out = subprocess.run([sys.executable, "-m", "thinkprobe.cli", "summary", str(d)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == summary.summary_text(d)
    snap = tmp_path / "docs" / "run1"
    summary.snapshot(d, snap, "snakemake --cores 2")
    run = summary.read_run(snap)
    assert run["name"] == "run1" and run["command"] == "snakemake --cores 2" and len(run["date"]) == 10
    assert (snap / "summary.md").read_text().startswith("Run `run1`: commit")
    with pytest.raises(FileExistsError, match="already there"):
        summary.snapshot(d, snap, "again")
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n<!-- results: docs/run1 -->\nstale 0.999\n<!-- /results -->\nend\n")
    assert summary.update_readme(readme, tmp_path) == 1
    text = readme.read_text()
    assert "stale" not in text and summary.readme_blocks(text)[0][1] == summary.summary_text_rel("docs/run1", tmp_path)
    with pytest.raises(FileNotFoundError, match="no kruskal.parquet"):
        summary.load_tables(tmp_path)


def test_snapshot_provenance_keeps_a_digest_of_many_inputs():
    many = {f"results/graphs/m/q{i}.json": f"{i:064x}" for i in range(30)}
    block = {"params": {"seed": 42}, "inputs": many, "source_provenance": {"inputs": {"a": "1"}}}
    out = summary.compact_provenance(block)
    assert out["params"] == {"seed": 42} and out["source_provenance"]["inputs"] == {"a": "1"}
    assert out["inputs"]["n_files"] == 30 and len(out["inputs"]["sha256_of_sorted_lines"]) == 64
    changed = dict(many, **{"results/graphs/m/q0.json": "f" * 64})
    assert summary.compact_provenance({"inputs": changed})["inputs"] != out["inputs"]
