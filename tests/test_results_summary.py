"""The generated results (thinkprobe/stats/results_text.py, claims.py, page_blocks.py, thinkprobe/study/snapshot.py): every results block of
the README and the docs is the output of the code for a committed snapshot, so a number changed by hand fails;
prose outside the blocks holds no number; the snapshot is current (or the test names its stale tables and the
command that re-takes it); its statistics re-derived twice from its per-trace tables are identical, and equal to
its own; the checks against the paper can fail; capped cycle counts are printed as bounds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from thinkprobe.metrics import METRIC_NAMES
from thinkprobe.profile import trace_profiles
from thinkprobe.stats import register, ablation, claims, confound, cycles, discriminability, page_blocks, results_text, robustness
from thinkprobe.study import retake, snapshot


ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / snapshot.DEFAULT_SNAPSHOT
RETAKE = f"thinkprobe summary --retake {snapshot.DEFAULT_SNAPSHOT} --corpus CORPUS_DIR"


# ----------------------------------------------------------------------------- the committed pages and snapshot

@pytest.mark.fast
@pytest.mark.parametrize("page", page_blocks.DEFAULT_PAGES)
def test_every_results_block_of_the_pages_is_generated_from_the_snapshot(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    found = page_blocks.blocks(text)
    assert found, f"{page} has no <!-- results:KIND DIR --> block"
    assert {f for _, f, *_ in found} == {snapshot.DEFAULT_SNAPSHOT}
    for kind, folder, body, *_ in found:
        assert body == page_blocks.render(kind, folder, ROOT, page), (
            f"{page}: the {kind} block differs from what the code computes for {folder}; run "
            "`thinkprobe summary --pages` (and commit), or re-take the snapshot if its tables are stale")


@pytest.mark.fast
def test_the_readme_keeps_a_short_headline_and_the_results_page_the_rest():
    readme = page_blocks.blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert [k for k, *_ in readme] == ["headline"] and len(readme[0][2].splitlines()) <= 8
    assert "docs/results.md" in readme[0][2]
    kinds = {k for k, *_ in page_blocks.blocks((ROOT / "docs/results.md").read_text(encoding="utf-8"))}
    assert {"headline", "summary", "reading", "ablation-sets", "retake"} <= kinds


@pytest.mark.fast
@pytest.mark.parametrize("page", ["docs/results.md", "docs/statistics.md"])
def test_prose_outside_the_generated_blocks_prints_no_number(page):
    bad = page_blocks.unexplained_numbers((ROOT / page).read_text(encoding="utf-8"))
    assert not bad, f"{page}: a number outside a generated block (generate it, or write it without one): {bad}"


@pytest.mark.fast
def test_a_number_changed_by_hand_fails():
    for page in ("README.md", "docs/results.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        kind, folder, body, start, end = page_blocks.blocks(text)[0]
        i = next(i for i, ch in enumerate(body) if ch.isdigit())
        forged = body[:i] + str((int(body[i]) + 1) % 10) + body[i + 1:]
        assert forged != page_blocks.render(kind, folder, ROOT, page)
        assert page_blocks.regenerate(text.replace(body, forged, 1), ROOT, page) == text  # regenerating restores it
    assert page_blocks.unexplained_numbers("We analysed 500 traces.\n") == ["We analysed 500 traces."]
    assert page_blocks.unexplained_numbers("R1-distill and L6-v2 in App. H.4, Table 6, sections 5.2-5.3.\n") == []


@pytest.mark.fast
def test_the_snapshot_holds_the_per_trace_tables_and_its_summary():
    for name in (*snapshot.TRACE_TABLES, "kruskal", "claims", "run"):
        assert (SNAPSHOT / (f"{name}.json" if name == "run" else f"{name}.parquet")).exists(), name
    metrics = pd.read_parquet(SNAPSHOT / "metrics.parquet")
    assert len(metrics) == int(pd.read_parquet(SNAPSHOT / "kruskal.parquet").n.max())
    assert set(METRIC_NAMES) <= set(metrics.columns)
    assert sorted(p.name for p in SNAPSHOT.glob("ablate-*.parquet")) == [f"ablate-{s}.parquet"
                                                                        for s, *_ in snapshot.ABLATION_SETS]
    size = sum(p.stat().st_size for p in SNAPSHOT.iterdir())
    assert size < 2_000_000, f"{SNAPSHOT}: {size} bytes; a snapshot holds small tables only"
    assert (SNAPSHOT / "summary.md").read_text(encoding="utf-8") == page_blocks.render("summary", snapshot.DEFAULT_SNAPSHOT,
                                                                                 ROOT)


@pytest.mark.fast
def test_the_snapshot_names_no_path_of_the_machine_it_was_taken_on():
    from thinkprobe.outputs import read_table_metadata

    def strings(block):
        if isinstance(block, dict):
            for k, v in block.items():
                yield k
                yield from strings(v)
        elif isinstance(block, list):
            for v in block:
                yield from strings(v)
        elif isinstance(block, str):
            yield block

    for path in SNAPSHOT.glob("*.parquet"):
        bad = [s for s in strings(read_table_metadata(path)) if s.startswith("/") or "../" in s]
        assert not bad, f"{path.name}: {bad[:3]}"
    assert "../" not in (SNAPSHOT / "run.json").read_text() and '"/' not in (SNAPSHOT / "run.json").read_text()


@pytest.mark.fast
def test_provenance_paths_are_relocated():
    block = {"inputs": {"/data/corpus/x.json": "ab", "/repo/results/t.parquet": "cd"}, "p": ["/data/corpus/y"]}
    out = snapshot.relocate(block, {"/data/corpus/": "CORPUS_DIR/", "/repo/": ""})
    assert out == {"inputs": {"CORPUS_DIR/x.json": "ab", "results/t.parquet": "cd"}, "p": ["CORPUS_DIR/y"]}


@pytest.mark.fast
def test_the_snapshot_is_current():
    stale = snapshot.stale_tables(SNAPSHOT, ROOT)
    assert not stale, (f"{snapshot.DEFAULT_SNAPSHOT}: tables computed by code or configuration that has changed "
                       f"since it was taken: {', '.join(stale)}. Re-take it: `{RETAKE}`")


@pytest.mark.slow
def test_statistics_rederived_twice_are_identical_and_equal_to_the_snapshot(tmp_path):
    """Seeded permutations and bootstraps: the same per-trace tables give the same statistics, bit for bit, on one
    machine. Against the committed snapshot, taken on another machine, floats agree to a relative 1e-12 and the rest
    exactly: the linear algebra's kernels depend on the CPU (measured: explained_variance differs in its last bit,
    about 2e-16, between two hosts of the same make), so a last-bit difference there is not a changed result."""
    a = snapshot.rederive(SNAPSHOT, tmp_path / "a", ROOT)
    b = snapshot.rederive(SNAPSHOT, tmp_path / "b", ROOT)
    current = not snapshot.stale_tables(SNAPSHOT, ROOT)
    for name in snapshot.REDERIVABLE:
        ta, tb = pd.read_parquet(a[name]), pd.read_parquet(b[name])
        pd.testing.assert_frame_equal(ta, tb, check_exact=True)
        if current:
            pd.testing.assert_frame_equal(_to_12_digits(ta), _to_12_digits(pd.read_parquet(SNAPSHOT / f"{name}.parquet")),
                                          check_exact=False, rtol=1e-12, atol=0.0,
                                          obj=f"{name} re-derived vs the snapshot")


def _to_12_digits(frame: pd.DataFrame) -> pd.DataFrame:
    """The floats inside the JSON text cells (a claim's estimate and interval) rounded to 12 significant digits,
    so that a last-bit difference between machines compares equal there as it does in the float columns."""
    import json

    def fix(v):
        if isinstance(v, float):
            return float(f"{v:.12g}")
        if isinstance(v, list):
            return [fix(x) for x in v]
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        return v

    def cell(text):
        if not (isinstance(text, str) and text.startswith(("[", "{"))):
            return text
        try:
            return json.dumps(fix(json.loads(text)))
        except ValueError:
            return text

    out = frame.copy()
    for column in out.columns[out.dtypes == object]:
        out[column] = out[column].map(cell)
    return out


# ------------------------------------------------------------------------------------- on a synthetic study

def _study(seed: int = 0, n_prompts: int = 30, models: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_prompts):
        for m in range(models):
            rows.append({"trace_id": f"m{m}/s/q{q}/1", "model": f"m{m}", "question_set": "s", "question_id": f"q{q}",
                         "run": "1", "domain": f"d{q % 3}",
                         **{k: rng.normal(0.5 * m if k in ("AT", "BF") else 0.0, 1.0) for k in METRIC_NAMES}})
    return pd.DataFrame(rows)


def _tables(tmp_path: Path, *, capped: bool = False, cbc_full: float = 0.3) -> Path:
    """A results folder (``stats/`` and ``tables/``) written by the real functions on a synthetic study, with a
    hand-made ablation (it needs the encoder); ``cbc_full``: CBC in full (0.2 at l4)."""
    metrics = _study()
    traces, _ = trace_profiles(metrics)
    perm = {"B": 200, "seed": 1, "units": {"model": "within_prompts", "domain": "prompts"}}
    k = pd.concat([discriminability.kruskal_table(metrics, METRIC_NAMES, kind="metric", permutation=perm),
                   discriminability.kruskal_table(traces, ["Breadth", "Depth", "Structure", "Metacognition",
                                                           "Efficiency"], kind="dimension", permutation=perm)],
                  ignore_index=True)
    d = tmp_path / "results" / "stats"
    d.mkdir(parents=True)
    (tmp_path / "results" / "tables").mkdir()
    metrics.to_parquet(tmp_path / "results" / "tables" / "metrics.parquet")
    t = {"kruskal": k, "model_vs_domain": discriminability.model_over_domain(k),
         "length_excluded": confound.length_excluded_effects(metrics, permutation=perm),
         "aggregation_robustness": robustness.aggregation_robustness(metrics)}
    ring = {"nodes": [{}] * 4, "edges": [{"source": a, "target": b, "edge_type": t} for a, b, t in
                                         [(0, 1, "SEQ"), (1, 2, "SEQ"), (2, 3, "SEQ"), (3, 0, "SYNT"), (2, 0, "BACK")]]}
    rows = []
    for i, r in metrics.iterrows():
        rows += cycles.graph_cycle_rows(ring, r.to_dict(), cap=1 if capped and i == 0 else 10)
    cyc = pd.DataFrame(rows, columns=cycles.CYCLE_COLUMNS)
    cyc.to_parquet(d / "cycles.parquet")
    t["cycles_summary"] = cycles.cycle_summary(cyc)
    rng = np.random.default_rng(3)
    per = []
    for tid, qid in zip(metrics.trace_id[:24], metrics.question_id[:24]):
        for st, bf, rvd, cbc, gd in (("l1", 0, 0, 0, 0), ("l3", 0.2, 0, 0, 0.10), ("l4", 0.2, 3, 0.2, 0.12),
                                     ("full", 0.21, 3.5, cbc_full, 0.11)):
            per.append({"layers": st, "trace_id": tid, "model": "m", "question_id": qid, "run": "1", "domain": "",
                        "tus": 8, **{m: 0.0 for m in METRIC_NAMES}, "BF": bf, "RvD": rvd,
                        "CBC": cbc + (rng.normal(0, 0.01) if cbc else 0), "GD": gd + (rng.normal(0, 0.005) if gd else 0)})
    per = pd.DataFrame(per)
    per.to_parquet(d / "ablation_traces.parquet")
    t["ablation"] = ablation.ablation_means(per)
    t["agreement"] = pd.DataFrame([{"segmentation": s, "status": st, "precision": 0.9, "recall": r, "f1": 0.6, "pk": 0.4,
                                    "windowdiff": 0.45, "kappa": 0.2, "n_ref_segments": 20, "n_hyp_segments": 10}
                                   for s in ("layer1", "layer1+2") for st, r in (("ok", 0.5), ("ok", 0.3),
                                                                                   ("excluded", np.nan))])
    t["claims"] = claims.claims_table(t, metrics, cyc, per, b=300, seed=2, level=0.95, alpha=0.05)
    for name, table in t.items():
        table.to_parquet(d / f"{name}.parquet")
    return d


@pytest.fixture(scope="module")
def study_tables(tmp_path_factory) -> Path:
    """:func:`_tables` with its defaults, computed once for the tests that only read it (its permutation nulls
    and bootstrap intervals take about a second)."""
    return _tables(tmp_path_factory.mktemp("study"))


@pytest.mark.fast
def test_summary_rows_name_their_tables_and_the_paper(study_tables):
    d = study_tables
    text = results_text.summary_text(d)
    rows = results_text.headline(results_text.load_tables(d))
    tables = {r[3] for r in rows}
    assert {"kruskal", "model_vs_domain", "cycles_summary", "length_excluded", "aggregation_robustness",
            "ablation", "agreement"} <= {t for s in tables for t in s.split(", ")}
    assert "AT 0.75 (then ATU 0.58, BR 0.43)" in text  # the paper's column, from thinkprobe/stats/paper.py
    assert "permutation null, B = 200; Monte Carlo SE of p_perm at most" in text
    assert "(1.2 expected by chance, if independent)" in text  # beside every "k / 24 above" count (no joint null here)
    assert "Holm-adjusted over all of them together" in text and "p_perm (MC SE); Holm over the page" in text
    assert "blocked (Friedman within prompts, 30 complete prompts)" in text
    assert "3 models, exact p" in text
    assert "| layer1+2 | 2 / 3 | 0.900 | 0.400 | 0.600 |" in text  # agreement means over the ok rows only
    assert "VIOLATED" not in text


@pytest.mark.slow
def test_capped_cycle_counts_are_lower_bounds(tmp_path, study_tables):
    exact = results_text.summary_text(study_tables)
    bound = results_text.summary_text(_tables(tmp_path / "b", capped=True))
    assert "none capped" in exact and ">= " not in exact.split("cycles per trace")[1].split("\n")[0]
    line = bound.split("cycles per trace")[1].split("\n")[0]
    assert "1 capped: counts are lower bounds" in line and "mean >= " in line and "max >= " in line


@pytest.mark.slow
def test_replications_can_replicate_fail_or_be_inconclusive(tmp_path):
    rising = pd.read_parquet(_tables(tmp_path / "a", cbc_full=0.5) / "claims.parquet").set_index("key")
    flat = pd.read_parquet(_tables(tmp_path / "b", cbc_full=0.2) / "claims.parquet").set_index("key")
    assert rising.loc["s54_cbc_gain_full", "verdict"] == claims.REPLICATES
    assert flat.loc["s54_cbc_gain_full", "verdict"] == claims.FAILS  # no gain in full, all of it at l4
    assert flat.loc["s54_gd_max", "verdict"] == claims.FAILS  # GD's largest mean is at l4 here
    assert flat.loc["appF_implication", "verdict"] == claims.REPLICATES  # every ring has a cycle of 3-4 nodes
    assert flat.loc["appF_short_medium", "verdict"] == claims.FAILS  # 3- and 4-node cycles: no medium ones
    # a noisy estimate near its criterion: the interval straddles it
    assert flat.loc["appG_structure_both", "verdict"] == claims.INCONCLUSIVE
    lo, hi = flat.loc["appG_structure_both", ["ci_low", "ci_high"]]
    assert lo < 0 < hi
    kinds = pd.read_parquet(tmp_path / "a" / "results" / "stats" / "claims.parquet").groupby("kind").size()
    reg = register.load_register()
    assert kinds["replication"] == sum(r["testable"] and any("check" in c for c in r["criteria"]) for r in reg)
    assert kinds["identity"] == len(claims.IDENTITIES) + sum(
        r["testable"] and all("identity" in c for c in r["criteria"]) for r in reg)
    assert kinds["untestable"] == sum(not r["testable"] for r in reg)


@pytest.mark.fast
def test_identity_violations_are_bugs_and_never_counted(study_tables):
    d = study_tables
    t = results_text.load_tables(d)
    le = t["length_excluded"].copy()
    le.loc[le.dimension == "Breadth", "delta"] = 0.05  # a length exclusion that changed Breadth: a bug
    rows = claims.identity_rows({**t, "length_excluded": le}, pd.read_parquet(d / "ablation_traces.parquet"))
    assert next(r for r in rows if r["key"] == "length_exclusion_local")["verdict"] == "VIOLATED"
    c = claims.counts(t["claims"])
    assert c["replications"] == int((t["claims"].kind == "replication").sum()) and c["identities_violated"] == 0


@pytest.mark.fast
def test_estimates_are_the_values_of_the_statistics_tables(study_tables):
    """The checks recompute their statistics from the per-trace tables: on all rows, the tables' own values."""
    d = study_tables
    t = results_text.load_tables(d)
    c = t["claims"].set_index("key")

    def crit(key: str, i: int) -> float:
        return json.loads(c.loc[key, "criteria"])[i]["estimate"]

    k = t["kruskal"].set_index(["grouping", "kind", "target"])
    assert crit("s52_structural_large", 0) == pytest.approx(
        min(k.loc[("model", "metric", m), "epsilon2"] for m in ("PT", "CHR", "UPC")), abs=1e-12)
    le = t["length_excluded"].set_index(["grouping", "dimension"])
    assert crit("appG_efficiency", 0) == pytest.approx(le.loc[("model", "Efficiency"), "delta"], abs=1e-12)
    r = t["aggregation_robustness"].set_index("dimension")
    assert crit("s7_structure_cluster", 1) == pytest.approx(r.loc["Structure", "rho"], abs=1e-12)
    cs = t["cycles_summary"].set_index(["model", "subgraph"])
    assert crit("appF_prevalence", 0) == pytest.approx(cs.loc[("(all)", "full"), "prevalence"])
    assert crit("s53_all_five", 0) == pytest.approx(
        min(x.epsilon2_model - x.epsilon2_domain for x in t["model_vs_domain"].query("kind == 'dimension'").itertuples()),
        abs=1e-12)


@pytest.mark.slow
def test_snapshot_replace_rederive_and_cli(tmp_path, monkeypatch, study_tables):
    d = study_tables
    results = d.parent
    out = subprocess.run([sys.executable, "-m", "thinkprobe.cli", "summary", str(d)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == results_text.summary_text(d)
    snap = tmp_path / "docs" / "run1"
    snapshot.snapshot(results, snap, "snakemake --cores 2", root=ROOT)
    run = results_text.read_run(snap)
    assert run["name"] == "run1" and run["command"] == "snakemake --cores 2" and len(run["date"]) == 10
    assert set(run["code"]) == set(snapshot.TABLE_CHAINS)
    assert {"metrics.parquet", "cycles.parquet", "ablation_traces.parquet"} <= {p.name for p in snap.iterdir()}
    assert (snap / "summary.md").read_text().startswith("Run `run1`: commit")
    with pytest.raises(FileExistsError, match="already there"):
        snapshot.snapshot(results, snap, "again", root=ROOT)
    snapshot.snapshot(results, snap, "again", replace=True, root=ROOT)
    assert results_text.read_run(snap)["command"] == "again" and not list(snap.parent.glob(".run1*"))
    assert snapshot.stale_tables(snap, ROOT) == []
    tampered = dict(run, code={**run["code"], "kruskal": "0" * 64})
    (snap / "run.json").write_text(json.dumps(tampered))
    assert snapshot.stale_tables(snap, ROOT) == ["kruskal"]
    page = tmp_path / "page.md"
    page.write_text("intro\n<!-- results:headline run1 -->\nstale 0.999\n<!-- /results -->\nend\n")
    monkeypatch.chdir(tmp_path / "docs")
    assert page_blocks.update_pages(("../page.md",)) == 1
    text = page.read_text()
    assert "stale" not in text and "replicate" in text and text.endswith("<!-- /results -->\nend\n")
    with pytest.raises(FileNotFoundError, match="no kruskal.parquet"):
        results_text.load_tables(tmp_path)


@pytest.mark.fast
def test_a_retake_needs_the_corpus_folder_and_names_a_missing_file(tmp_path):
    with pytest.raises(ValueError, match="needs --corpus DIR"):
        retake.retake(tmp_path / "snap", corpus=None, run_study=False)
    (tmp_path / "corpus").mkdir()
    with pytest.raises(FileNotFoundError, match="reasoning_comparison_deepseek-r1-distill-"):
        snapshot.study_override(tmp_path / "corpus", tmp_path / "inputs.yaml")
    with pytest.raises(FileNotFoundError, match="ablation set A"):
        snapshot.run_ablation_sets(tmp_path / "corpus", tmp_path / "sets")


@pytest.mark.fast
def test_snapshot_provenance_keeps_a_digest_of_many_inputs():
    many = {f"results/graphs/m/q{i}.json": f"{i:064x}" for i in range(30)}
    block = {"params": {"seed": 42}, "inputs": many, "source_provenance": {"inputs": {"a": "1"}}}
    out = snapshot.compact_provenance(block)
    assert out["params"] == {"seed": 42} and out["source_provenance"]["inputs"] == {"a": "1"}
    assert out["inputs"]["n_files"] == 30 and len(out["inputs"]["sha256_of_sorted_lines"]) == 64
    changed = dict(many, **{"results/graphs/m/q0.json": "f" * 64})
    assert snapshot.compact_provenance({"inputs": changed})["inputs"] != out["inputs"]


@pytest.mark.fast
def test_a_code_change_makes_the_tables_that_use_it_stale():
    cfg = snapshot.study_config(root=ROOT)
    base = snapshot.table_code(cfg)
    hashes = snapshot.stage_hashes()
    changed = snapshot.table_code(cfg, {**hashes, "stats.claims": "x"})
    assert {t for t in base if base[t] != changed[t]} == {"claims"}
    changed = snapshot.table_code(cfg, {**hashes, "graph": "x"})
    assert {t for t in base if base[t] != changed[t]} == {t for t, chain in snapshot.TABLE_CHAINS.items()
                                                          if "graph" in chain}
    cfg2 = {**cfg, "stats": {**cfg["stats"], "bootstrap": cfg["stats"]["bootstrap"] + 1}}
    assert snapshot.table_code(cfg2)["claims"] != base["claims"] and snapshot.table_code(cfg2)["metrics"] == base["metrics"]


@pytest.mark.fast
def test_the_retake_reads_the_corpus_study_inputs_from_its_config(tmp_path):
    """The re-take's local inputs come from config/corpus-study.yaml (their one home): each git source becomes
    the same path inside a local copy of the repository; a copy that lacks it is an error naming the entry."""
    import yaml

    study = yaml.safe_load((ROOT / snapshot.STUDY_CONFIG).read_text())
    (entry,) = study["inputs"]
    repo = entry["git"]["url"].rstrip("/").rsplit("/", 1)[-1]
    with pytest.raises(FileNotFoundError, match=r"inputs\[0\]: .*steering-thinking-llms"):
        snapshot.study_override(tmp_path / "corpus", tmp_path / "o.yaml", root=ROOT)
    target = tmp_path / "corpus" / repo / entry["git"]["path"].replace("*", "qwen-7b")
    target.parent.mkdir(parents=True)
    target.write_text("[]")
    out = yaml.safe_load(snapshot.study_override(tmp_path / "corpus", tmp_path / "o.yaml", root=ROOT).read_text())
    assert out == {"inputs": [{"question_set": entry["question_set"], "adapter": entry["adapter"],
                               "path": str((tmp_path / "corpus").resolve() / repo / entry["git"]["path"])}]}
