"""The learned typer (classification.typer: learned; docs/validity.md, "Two typers"): what it replaces, its
artifact's checks, its recorded scores reproduced on a held-out slice, and the workflow under it."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from thinkprobe import learned_typer
from thinkprobe.graph import TYPERS, build_graph, classify_nodes
from thinkprobe.params import ClassificationParams, Params, ParamsError
from thinkprobe.validity import mapping, typer_page
from thinkprobe.validity.typer_training import slice_scores, split_prompts

from .conftest import REPO as ROOT, corpus_path
from .workflow_helpers import job_counts, make_workdir, snakemake, write_config

MAPPING = ROOT / "config" / "validity" / "step_labels.yaml"
P = Params()


def _artifact() -> dict:
    return json.loads(learned_typer.ARTIFACT.read_text(encoding="utf-8"))


@pytest.mark.fast
def test_the_typer_choices_are_the_graph_s_typers():
    from dataclasses import fields

    choices = next(f for f in fields(ClassificationParams) if f.name == "typer").metadata["choices"]
    assert set(choices) == set(TYPERS) and ClassificationParams().typer == "paper"


@pytest.mark.fast
def test_the_schema_states_the_key_and_refuses_another_value():
    from thinkprobe.config import load_schema

    prop = load_schema(ROOT / "config" / "schema.yaml")["properties"]["analysis"]["properties"]["classification"]["properties"]["typer"]
    assert prop["enum"] == ["paper", "learned"] and prop["default"] == "paper" and "CRT" in prop["description"]
    with pytest.raises(ParamsError, match="typer: 'neural' is not one of paper, learned"):
        Params.from_dict({"classification": {"typer": "neural"}})
    with pytest.raises(ParamsError, match="default encoder"):
        Params.from_dict({"classification": {"typer": "learned"}, "encoder": {"model": "paraphrase-MiniLM-L3-v2"}})


@pytest.mark.fast
def test_the_decisions_replace_rules_2_and_3_only():
    """SYN (rule 1) and v0 -> HYP keep their priority; a "" decision lets rules 4-9 type the unit."""
    emb = np.eye(5)
    bounds = ["none", "backtrack", "meta", "support", "none"]
    edges = [(j - 1, j, "SEQ") for j in range(1, 5)] + [(4, 0, "SYNT"), (4, 1, "SYNT"), (3, 0, "BACK")]
    c = ClassificationParams()
    assert classify_nodes(bounds, edges, emb, c) == ["HYP", "CRT", "MET", "CRT", "SYN"]
    assert classify_nodes(bounds, edges, emb, c, ["MET", "", "CRT", "", "CRT"]) == ["HYP", "SPC", "CRT", "JUS", "SYN"]


@pytest.mark.fast
def test_the_packaged_artifact_loads_and_its_checks_name_the_problem(tmp_path):
    art = learned_typer.load_artifact()
    assert art.coef.shape == (3, art.embedding_dim + 18) and art.classes == ("", "CRT", "MET")
    assert learned_typer.ARTIFACT.stat().st_size < 200_000  # shipped small
    bad = tmp_path / "a.json"
    bad.write_text(json.dumps({"format": "other"}))
    with pytest.raises(learned_typer.TyperError, match="not a learned typer"):
        learned_typer.load_artifact(str(bad))
    with pytest.raises(learned_typer.TyperError, match="384-value embeddings; these have 8"):
        learned_typer.decide(["a", "b"], ["none", "none"], [(0, 1, "SEQ")], np.ones((2, 8)))
    stale = replace(art, lexicons={"cues": "0" * 64, "hedges": "0" * 64})
    with pytest.raises(learned_typer.TyperError, match="lexicons changed"):
        learned_typer.decide(["a"], ["none"], [], np.ones((1, art.embedding_dim)), stale)


@pytest.mark.fast
def test_a_learned_graph_differs_from_the_paper_s_in_node_types_only():
    rng = np.random.default_rng(3)
    emb = rng.normal(size=(12, 384))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    texts = [f"Wait, maybe step {i} is wrong?" if i % 3 == 0 else f"So x = {i}." for i in range(12)]
    args = (texts, [(i, i + 1) for i in range(12)], ["none"] * 12, emb, [5] * 12, P.trajectory, P.cross_segment)
    paper = build_graph(*args, P.classification)
    learned = build_graph(*args, replace(P.classification, typer="learned"))
    assert learned.edges == paper.edges and learned.boundaries == paper.boundaries
    decided = learned_typer.decide(texts, paper.boundaries, paper.edges, emb)
    assert learned.node_types == classify_nodes(paper.boundaries, paper.edges, emb, P.classification, decided)


@pytest.mark.fast
def test_the_split_is_by_prompt_and_seeded():
    a, b = split_prompts(range(100), 0), split_prompts(range(100), 0)
    assert a == b and sorted(a.values()).count("test") == 25 and sorted(a.values()).count("train") == 60
    rec = _artifact()["training"]["split"]
    assert set(rec["prompts"]["test"]).isdisjoint(rec["prompts"]["train"] + rec["prompts"]["tune"])
    assert rec["prompts"]["test"] == sorted(r for r, p in split_prompts(range(100), rec["seed"]).items() if p == "test")


@pytest.mark.fast
def test_the_validity_page_holds_the_artifact_s_scores():
    text = (ROOT / "docs" / "validity.md").read_text(encoding="utf-8")
    assert typer_page.block(text) == typer_page.render(_artifact()), (
        "docs/validity.md's typer block differs from the artifact: rerun scripts/train_typer.py")


@pytest.mark.slow
def test_the_artifact_reproduces_its_recorded_scores_on_a_held_out_slice(encoder):
    rec = _artifact()["training"]["slice"]
    assert set(rec["rows"]) <= set(_artifact()["training"]["split"]["prompts"]["test"])  # held out
    path = corpus_path("steering-thinking-llms", "compare-base-reasoning", "results", "vars", rec["file"])
    got = slice_scores(path, rec["rows"], mapping.load(MAPPING), encoder)
    for typer in ("paper", "learned"):
        assert got[typer]["n_sentences"] == rec[typer]["n_sentences"] > 100
        assert got[typer]["kappa"] == pytest.approx(rec[typer]["kappa"], abs=1e-9), typer
        assert got[typer]["precision"] == pytest.approx(rec[typer]["precision"], abs=1e-9), typer
    assert got["learned"]["kappa"] != got["paper"]["kappa"]


@pytest.mark.workflow
def test_the_workflow_runs_under_the_learned_typer_and_a_typer_change_reruns_graph_and_after(tmp_path):
    """One finished run under the learned typer, then: a typer change reruns exactly the jobs that graph and
    what follows it are (the dry run's job table equals ``--forcerun graph``'s, under the local profile's rerun
    triggers: Snakemake's defaults); ``validity.compare_typers`` adds only the other typer's graph-and-after jobs,
    reading the study's segments and embeddings (no segment job, no file of the study's own rewritten), and
    writes the side-by-side table (docs/validity.md, "Both typers in one study")."""
    import pandas as pd

    wd = make_workdir(tmp_path / "wd")
    profile = ("--profile", str(ROOT / "profiles" / "local"), "--cores", "2")
    learned = write_config(wd, lambda c: c["analysis"]["classification"].update(typer="learned"))
    snakemake(wd, "--configfile", str(learned))
    graphs = sorted((wd / "results" / "graphs").rglob("*.json"))
    docs = [json.loads(p.read_text()) for p in graphs]
    ok = [d for d in docs if d.get("status") == "ok"]
    assert len(ok) >= 10
    for d in ok:
        assert d["provenance"]["params"]["classification"]["typer"] == "learned"
    prof = pd.read_parquet(wd / "results" / "tables" / "profiles.parquet")
    assert prof[prof["level"] == "model"].shape[0] == 3  # the 5D profile under the learned typer
    graph_and_after = job_counts(snakemake(wd, "-n", *profile, "--configfile", str(learned), "--forcerun",
                                           "graph").stdout)
    assert {"graph", "metrics", "aggregate", "profiles", "figures", "report_tables"} <= set(graph_and_after)
    paper = write_config(wd, lambda c: c["analysis"]["classification"].update(typer="paper"))
    out = snakemake(wd, "-n", *profile, "--configfile", str(paper)).stdout
    assert job_counts(out) == graph_and_after  # exactly graph and after: no import, no segment job
    assert "'typer': 'paper'" in out

    # both typers side by side: the study stays learned; the paper typer's graphs go to their own folders
    own = {p: p.stat().st_mtime_ns for p in (wd / "results").rglob("*")
           if p.is_file() and p.parts[len(wd.parts) + 1] in ("segments", "embeddings", "graphs", "metrics", "tables")}
    both = write_config(wd, lambda c: (c["analysis"]["classification"].update(typer="learned"),
                                       c.setdefault("validity", {}).update(compare_typers=True)))
    counts = job_counts(snakemake(wd, "-n", *profile, "--configfile", str(both)).stdout)
    assert counts == {"graph_typer": 3, "metrics_typer": 3, "aggregate_typer": 1, "profiles_typer": 1,
                      "typer_comparison": 1, "all": 1}
    snakemake(wd, "--configfile", str(both))
    assert {p: p.stat().st_mtime_ns for p in own} == own  # the study's segments, embeddings, graphs, tables kept
    other = [json.loads(p.read_text()) for p in sorted((wd / "results" / "graphs-paper").rglob("*.json"))]
    assert len(other) == len(docs)
    assert {d["provenance"]["params"]["classification"]["typer"] for d in other if d["status"] == "ok"} == {"paper"}
    table = pd.read_parquet(wd / "results" / "tables" / "typer_comparison.parquet")
    assert set(table["typer_a"]) == {"learned"} and set(table["typer_b"]) == {"paper"}
    ranks = table[(table["section"] == "dimension") & (table["model"] == "")]
    assert len(ranks) == 5 and set(ranks["n_models"]) == {3.0}
    assert ranks["spearman"].between(-1, 1).all()
    dims = table[(table["section"] == "dimension") & (table["model"] != "")]
    paper_prof = pd.read_parquet(wd / "results" / "tables" / "typer-paper" / "profiles.parquet")
    paper_models = paper_prof[paper_prof["level"] == "model"].set_index("model")
    for _, r in dims.iterrows():  # score_b is the paper typer's profile, score_a the study's (learned) profile
        assert r["score_b"] == pytest.approx(paper_models.loc[r["model"], r["item"]])
    metric_rows = table[(table["section"] == "metric") & (table["model"] == "")]
    assert len(metric_rows) == 19 and metric_rows["rank_change"].min() == 1
    # the typers differ in CRT and MET: some metric changes between them
    assert metric_rows["mean_abs_change"].max() > 0
    assert (wd / "results" / "figures" / "typer_comparison.png").stat().st_size > 0
    assert "typer_comparison" in (wd / "results" / "report" / "typer_comparison.html").read_text()
    assert job_counts(snakemake(wd, "-n", *profile, "--configfile", str(both)).stdout) == {}
