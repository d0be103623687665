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
    wd = make_workdir(tmp_path / "wd")
    learned = write_config(wd, lambda c: c["analysis"]["classification"].update(typer="learned"))
    snakemake(wd, "--configfile", str(learned))
    graphs = sorted((wd / "results" / "graphs").rglob("*.json"))
    docs = [json.loads(p.read_text()) for p in graphs]
    ok = [d for d in docs if d.get("status") == "ok"]
    assert len(ok) >= 10
    for d in ok:
        assert d["provenance"]["params"]["classification"]["typer"] == "learned"
    import pandas as pd

    prof = pd.read_parquet(wd / "results" / "tables" / "profiles.parquet")
    assert prof[prof["level"] == "model"].shape[0] == 3  # the 5D profile under the learned typer
    paper = write_config(wd, lambda c: c["analysis"]["classification"].update(typer="paper"))
    out = snakemake(wd, "-n", "--configfile", str(paper)).stdout
    counts = job_counts(out)
    assert "segment" not in counts and "import_traces" not in counts
    assert counts["graph"] == 3 and counts["metrics"] == 3 and counts["profiles"] == 1 and counts["aggregate"] == 1
    assert "'typer': 'paper'" in out
