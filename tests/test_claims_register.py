"""The claim register (thinkprobe/data/claims.yaml, thinkprobe/stats/register.py): every sentence quoted from the paper,
every criterion's words inside its sentence, counts from the register's verdicts, identities never counted,
one Holm correction over every p-value of the results page (equal to statsmodels), the joint null of
exceedance counts, the length-partialled table, and a criterion changed after a snapshot detected."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from thinkprobe.stats import claims, register, results_text
from thinkprobe.stats.multiplicity import page_pvalues


REPO = Path(__file__).resolve().parents[1]
PAPER = Path(os.environ.get("THINKPROBE_PAPER", REPO.parent / "shared" / "papers" / "thinkprobe-paper.md"))
SNAPSHOT = REPO / "docs" / "results" / "corpus-study"


def _plain(text: str) -> str:
    """The paper's text as the register quotes it: images dropped, links reduced to their text, spaces folded."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"\s+", " ", text)


def _paper() -> str:
    if not PAPER.is_file():
        pytest.skip(f"the paper's text is not at {PAPER} (set THINKPROBE_PAPER)")
    return PAPER.read_text(encoding="utf-8")


def _sections(text: str, heads: tuple[str, ...]) -> str:
    """The text of the paper's sections whose heading starts with one of ``heads`` (up to the next heading of
    the same or a higher level)."""
    out, keep, level = [], False, 0
    for line in text.splitlines():
        m = re.match(r"^(#+) (.*)", line)
        if m:
            depth = len(m.group(1))
            if any(m.group(2).startswith(h) for h in heads):
                keep, level = True, depth
            elif keep and depth <= level:
                keep = False
        elif keep:
            out.append(line)
    return "\n".join(out)


@pytest.mark.fast
def test_every_quote_is_a_whole_sentence_of_the_paper_and_every_criterion_is_in_its_quote():
    text = _plain(_paper())
    rows = register.load_register()
    assert len({r["id"] for r in rows}) == len(rows)
    missing = [r["id"] for r in rows if re.sub(r"\s+", " ", r["quote"]) not in text]
    assert not missing, missing
    for r in rows:
        q = r["quote"]
        assert q[0].isupper() or q[0] in "§\\" and q.rstrip().endswith((".", ")")), r["id"]
        for c in r.get("criteria", []) + r.get("untested", []):
            assert c["words"] in q, (r["id"], c["words"])
        assert r["testable"] or r["why"], r["id"]


@pytest.mark.fast
def test_the_register_covers_every_sentence_of_the_results_that_states_a_correlation_or_effect_size():
    """Every sentence of sections 5 and 7 and Appendices F, G and I that prints an epsilon^2, a rho or a share of
    traces is in the register (a sentence left out would be a claim chosen away)."""
    text = _plain(_sections(_paper(), ("5 ", "5.", "6 ", "7 ", "Appendix F", "Appendix G", "Appendix I")))
    quoted = " ".join(re.sub(r"\s+", " ", r["quote"]) for r in register.load_register())
    # sentence ends: a period followed by a space and a capital (not inside "vs." or "Avg.")
    sentences = re.split(r"(?<!vs\.)(?<!Avg\.)(?<=[.])\s+(?=[A-Z\\])", text)
    numeric = [s for s in sentences if re.search(r"\\varepsilon\^\{2\}\s*[=<>]|\\rho\s*(=|\\approx|>|\\geq)|\d%",
                                               s) and not s.startswith(("Figure ", "Table "))]
    assert len(numeric) > 15
    left_out = [s for s in numeric if s.strip() not in quoted]
    assert not left_out, left_out


@pytest.mark.fast
def test_a_register_with_a_criterion_outside_its_sentence_or_an_unknown_check_is_refused(tmp_path):
    reg = tmp_path / register.REGISTER
    reg.parent.mkdir(parents=True)
    good = register.register_path().read_text(encoding="utf-8")
    reg.write_text(good.replace("words: 'a fourfold gap'", "words: 'a fivefold gap'"), encoding="utf-8")
    with pytest.raises(ValueError, match="fivefold gap.*not in its quote"):
        register.load_register(tmp_path)
    reg.write_text(good.replace("check: dunn_share", "check: dunn_mood"), encoding="utf-8")
    with pytest.raises(ValueError, match="unknown check 'dunn_mood'"):
        register.load_register(tmp_path)


# ------------------------------------------------------------------------- computed on the snapshot's traces

@pytest.fixture(scope="module")
def computed() -> pd.DataFrame:
    """The claims table recomputed from the snapshot's per-trace tables (a small bootstrap: the counts and the
    kinds do not depend on it), so these tests hold before and after the snapshot is re-taken."""
    if not (SNAPSHOT / "metrics.parquet").exists():
        pytest.skip("no snapshot")
    return claims.claims_table(results_text.load_tables(SNAPSHOT), pd.read_parquet(SNAPSHOT / "metrics.parquet"),
                               pd.read_parquet(SNAPSHOT / "cycles.parquet"),
                               pd.read_parquet(SNAPSHOT / "ablation_traces.parquet"), b=60, seed=1, level=0.95,
                               alpha=0.05)


@pytest.fixture(scope="module")
def snap_tables(computed) -> dict[str, pd.DataFrame]:
    """The snapshot's statistics tables with the tables of issue 35 recomputed from its per-trace tables: the
    claims (:func:`computed`) and the length-partialled effects (a smaller permutation null than the study's)."""
    from thinkprobe.stats.confound import length_partialled_effects

    t = results_text.load_tables(SNAPSHOT)
    perm = {"B": 999, "seed": 42, "units": {"model": "within_prompts", "domain": "prompts"}}
    return {**t, "claims": computed,
            "length_partial": length_partialled_effects(pd.read_parquet(SNAPSHOT / "metrics.parquet"),
                                                        permutation=perm)}


@pytest.mark.slow
def test_the_headline_counts_are_the_register_verdicts(computed, snap_tables, tmp_path):
    rows = register.load_register()
    testable = [r for r in rows if r["testable"] and any("check" in c for c in r["criteria"])]
    rep = computed[computed.kind == "replication"]
    assert sorted(rep.key) == sorted(r["id"] for r in testable)  # every testable sentence, none chosen away
    assert set(computed[computed.kind == "untestable"].key) == {r["id"] for r in rows if not r["testable"]}
    for r in rep.itertuples():  # the sentence's verdict is its criteria's together
        crit = [c["verdict"] for c in json.loads(r.criteria) if "identity" not in c]
        assert r.verdict == register.sentence_verdict(crit), r.key
    c = claims.counts(computed)
    assert c["replications"] == len(testable)
    assert c[claims.REPLICATES] == int((rep.verdict == claims.REPLICATES).sum())
    assert c[claims.FAILS] + c[claims.INCONCLUSIVE] + c[claims.REPLICATES] + c[claims.MISSING] == len(testable)
    # the README block prints these counts
    d = tmp_path / "snap"
    shutil.copytree(SNAPSHOT, d)
    computed.to_parquet(d / "claims.parquet")
    from thinkprobe.stats.page_blocks import headline_block

    text = headline_block(d, "docs/results/corpus-study")
    assert f"{c['replications']} can be tested here: **{c[claims.REPLICATES]} replicate" in text
    assert f"{c[claims.FAILS]} do not, {c[claims.INCONCLUSIVE]} are inconclusive" in text
    assert f"{c['untestable']} are not testable" in text


@pytest.mark.slow
def test_a_sentence_with_two_claims_is_judged_whole(computed):
    """The cycle-length sentence: medium-length cycles are common here, but short ones are not the most
    frequent, so the sentence does not replicate although one of its halves does."""
    row = computed.set_index("key").loc["appF_short_medium"]
    verdicts = [c["verdict"] for c in json.loads(row.criteria)]
    assert len(verdicts) == 2 and row.verdict == register.sentence_verdict(verdicts)
    assert claims.FAILS in verdicts and row.verdict == claims.FAILS
    gd = computed.set_index("key").loc["appI_gd_at"]  # GD-AT about -0.84 here, but not the strongest pair
    near, strongest = json.loads(gd.criteria)
    assert near["verdict"] == claims.REPLICATES and abs(near["estimate"] + 0.84) < 0.1
    assert strongest["verdict"] == claims.FAILS and gd.verdict == claims.FAILS


@pytest.mark.slow
def test_an_identity_is_never_counted_and_has_no_p(computed, snap_tables):
    c = claims.counts(computed)
    ident = computed[computed.kind == "identity"]
    assert len(ident) and not set(ident.key) & set(computed[computed.kind == "replication"].key)
    assert c["replications"] == int((computed.kind == "replication").sum())
    # Depth has two metrics: PCA weights are equal weights, rho = 1 by construction, left out of the criterion
    assert set(register.ranking_identities(None)) == {"Depth"}
    assert set(register.ranking_identities("app_g")) == {"Depth", "Efficiency"}
    inv = json.loads(computed.set_index("key").loc["s7_rankings_invariant", "criteria"])[0]
    assert any("Depth" in x for x in inv["identities"])
    text = results_text.markdown(snap_tables)
    rank = next(line for line in text.splitlines() if "equal vs PCA-weighted" in line)
    assert "Depth 1.00 (rho = 1 by construction: an identity, no p)" in rank
    assert ("aggregation_robustness", "model", "Depth", "exact Spearman") not in {
        tuple(x) for x in page_pvalues(snap_tables)[["source", "grouping", "target", "test"]].to_numpy()}


@pytest.mark.slow
def test_the_page_correction_is_statsmodels_holm_over_every_p_value_it_shows(snap_tables):
    from statsmodels.stats.multitest import multipletests

    page = page_pvalues(snap_tables)
    k = snap_tables["kruskal"]
    assert len(page) >= len(k) + int(k.p_friedman.notna().sum()) + len(snap_tables["length_partial"]) - 2
    expected = multipletests(page.p.to_numpy(), method="holm")[1]
    np.testing.assert_allclose(page.p_holm.to_numpy(), expected, rtol=0, atol=1e-12)
    text = results_text.markdown(snap_tables)
    assert f"**Every p-value on this page ({len(page)}:" in text
    assert f"{int((page.p_holm < 0.05).sum())} stay below 0.05" in text
    floor = 1 / (int(k.B.iloc[0]) + 1)
    at_floor = page[page.bound]
    assert len(at_floor) and (at_floor.p <= floor * (1 + 1e-9)).all()
    assert f"<= {results_text._p(floor)}" in text  # a p at the permutation floor is printed as a bound


@pytest.mark.slow
def test_disagreeing_tests_of_one_effect_are_named(snap_tables):
    text = results_text.markdown(snap_tables)
    line = next(x for x in text.splitlines() if x.startswith("Tests of the same model effect that disagree"))
    km = snap_tables["kruskal"]
    km = km[km.grouping == "model"]
    for x in km.itertuples():
        if (x.p_perm < 0.05) != (x.p_friedman < 0.05):
            assert f"{x.target} (permutation within prompts" in line


# --------------------------------------------------------------------------------------------- pieces

@pytest.mark.fast
def test_vectorised_dunn_and_epsilon2_equal_scikit_posthocs_and_scipy():
    from scipy.stats import kruskal

    from thinkprobe.stats.bootstrap import epsilon2
    from thinkprobe.stats.posthoc import dunn_pairs

    rng = np.random.default_rng(4)
    n = 120
    m = pd.DataFrame({"model": rng.choice(list("abcd"), n), "domain": rng.choice(list("xyz"), n),
                      "question_id": [f"q{i // 4}" for i in range(n)], "question_set": "s", "trace_id": range(n)})
    from thinkprobe.vocabulary import METRIC_NAMES

    for j, name in enumerate(METRIC_NAMES):
        m[name] = np.round(rng.normal(size=n) + (m.model == "a") * 0.5 * (j % 3), 1)  # ties on purpose
    data = register.Data({}, m, None, None)
    idx = rng.integers(0, n, n)
    p = register.MetricPanel(data, idx)
    for name in ("BF", "GD", "AT"):
        v = m[name].to_numpy()[idx]
        assert p.epsilon2(name, "model") == pytest.approx(epsilon2(v, data.model[idx]), abs=1e-12)
        h = kruskal(*[v[data.model[idx] == g] for g in np.unique(data.model[idx])]).statistic
        assert p.epsilon2(name, "model") == pytest.approx(h / (n - 1), abs=1e-12)
        ref = dunn_pairs(v, m.model.to_numpy()[idx]).p_adj.to_numpy()
        np.testing.assert_allclose(p.dunn_metrics[:, METRIC_NAMES.index(name)], ref, atol=1e-12)


@pytest.mark.fast
def test_bca_agrees_with_scipy_and_corrects_the_percentile_bias():
    from scipy.stats import bootstrap as sp_bootstrap

    rng = np.random.default_rng(0)
    x = rng.exponential(size=60)
    boot = np.array([x[rng.integers(0, 60, 60)].var() for _ in range(20000)])
    jack = np.array([np.delete(x, i).var() for i in range(60)])
    lo, hi = register.bca_interval(boot, x.var(), jack, 0.95)
    ref = sp_bootstrap((x,), np.var, method="BCa", n_resamples=20000, random_state=1).confidence_interval
    assert lo == pytest.approx(ref.low, abs=0.06) and hi == pytest.approx(ref.high, abs=0.15)
    plo, phi = np.quantile(boot, [0.025, 0.975])
    assert (lo, hi) != (plo, phi)
    assert register.bca_interval(np.full(10, 2.0), 2.0, np.full(5, 2.0), 0.95) == (2.0, 2.0)


@pytest.mark.fast
def test_the_joint_null_keeps_the_dependence_between_targets():
    """Five copies of one noise target: under the joint null they exceed together or not at all, so the count's
    95th percentile is 0 or 5, not the 0.25 that "5% of the count" gives."""
    from thinkprobe.stats.permutation import joint_exceedances

    rng = np.random.default_rng(1)
    n = 90
    t = pd.DataFrame({"model": rng.choice(list("abc"), n), "question_id": [f"q{i // 3}" for i in range(n)]})
    noise = rng.normal(size=n)
    for i in range(5):
        t[f"x{i}"] = noise
    j = joint_exceedances(t, [f"x{i}" for i in range(5)], "model", 400, 3, "traces")
    assert j["null_p95"] in (0.0, 5.0) and j["observed"] in (0.0, 5.0)
    assert j["null_mean"] == pytest.approx(5 * 0.05, abs=0.15)
    t2 = t.copy()
    for i in range(5):
        t2[f"x{i}"] = rng.normal(size=n)
    j2 = joint_exceedances(t2, [f"x{i}" for i in range(5)], "model", 400, 3, "traces")
    assert j2["null_p95"] < 5


@pytest.mark.fast
def test_partialling_length_out_removes_a_pure_length_effect():
    from thinkprobe.stats.confound import length_partialled_effects
    from thinkprobe.vocabulary import METRIC_NAMES

    rng = np.random.default_rng(2)
    n = 150
    m = pd.DataFrame({"model": np.repeat(list("abc"), n // 3), "domain": np.tile(list("xyz"), n // 3),
                      "question_id": [f"q{i % 50}" for i in range(n)], "question_set": "s",
                      "trace_id": [str(i) for i in range(n)]})
    for name in METRIC_NAMES:
        m[name] = rng.normal(size=n)
    m["AT"] = 100 + 50 * (m.model == "a") + rng.normal(size=n)  # the models differ in length only
    m["ATU"] = m["AT"] / 10  # a pure length proxy
    m["GD"] = rng.normal(size=n) + 2.0 * (m.model == "b")  # a model effect unrelated to length
    t = length_partialled_effects(m, permutation={"B": 200, "seed": 1, "units": {}}).set_index(["grouping", "target"])
    assert t.loc[("model", "ATU"), "epsilon2"] > 0.3 and t.loc[("model", "ATU"), "epsilon2_partial"] < 1e-9
    assert t.loc[("model", "GD"), "survives"] and t.loc[("model", "GD"), "epsilon2_partial"] > 0.3
    at = t.loc[("model", "AT")]
    assert at.identity and np.isnan(at.p_perm_partial) and at.epsilon2_partial == 0
    assert set(t.loc["model"].query("kind == 'dimension'").index) == {"Breadth", "Depth", "Structure",
                                                                       "Metacognition", "Efficiency"}
    assert (t.dimension_map == "app_g").all()


@pytest.mark.fast
def test_a_criterion_changed_after_the_snapshot_makes_the_claims_table_stale(tmp_path):
    from thinkprobe.study import snapshot

    root = tmp_path / "checkout"
    shutil.copytree(REPO / "config", root / "config")
    (root / register.REGISTER).parent.mkdir(parents=True)
    shutil.copy(register.register_path(), root / register.REGISTER)
    cfg = snapshot.study_config(root=root)
    hashes = snapshot.stage_hashes()
    before = snapshot.table_code(cfg, hashes, root=root)
    assert before == snapshot.table_code(cfg, hashes, root=REPO)
    reg = root / register.REGISTER
    reg.write_text(reg.read_text(encoding="utf-8").replace("value: 0.5\n", "value: 0.4\n", 1), encoding="utf-8")
    after = snapshot.table_code(cfg, hashes, root=root)
    assert after["claims"] != before["claims"]
    assert {t for t in before if before[t] != after[t]} == set(snapshot.REGISTER_TABLES)
    rec = snapshot.register_record(REPO)
    assert rec["path"] == register.REGISTER and rec["sha256"] == register.register_digest(REPO)
