"""Trajectories that stay right on real reasoning models (issue 15): budgets, context, incomplete
trajectories, stop reasons, the default-decoding standardisation, disagreement with unlabelled
checkpoints, sampling defaults defined once, and ``</think>`` as a special token.

The engine tests run SmolLM2 on vLLM (CPU) for real, through the session's one engine (``vllm_engine``).
A trace whose prompt nearly fills the 2048-token context makes the context edge cheap to reach: its
checkpoints past the edge cannot be sampled, the room left is a few tokens, and the budget unset means
"to the end of the context".
"""

from __future__ import annotations

import pytest
import yaml

from thinkprobe.trajectories.aggregates import condition_table, disagreement, trace_table
from thinkprobe.trajectories.checkpoints import RealizedTrace, engine_tokenizer_id, find_reasoning
from thinkprobe.trajectories.sampling import SamplingConfig, label_document, sample_traces

from tests.workflow_helpers import REPO

QUESTION = ("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
            "How many clips did Natalia sell altogether in April and May? ")
REASONING = ("In April she sold 48 clips. In May she sold half as many, which is 48 / 2 = 24 clips. "
             "Altogether she sold 48 + 24 = 72 clips, so the total is 72. ")


# ---------------------------------------------------------------- one source of the sampling defaults

@pytest.mark.fast
def test_sampling_defaults_have_one_home():
    from thinkprobe.answers import DEFAULT_STOP

    from thinkprobe.config import load_schema  # fills the defaults from their home, thinkprobe.generate.defaults

    schema = load_schema(REPO / "config" / "schema.yaml")["properties"]["trajectories"]["properties"]
    d = SamplingConfig()
    assert schema["n"]["default"] == d.n and schema["stride"]["default"] == d.stride
    s = schema["sampling"]["properties"]
    assert (s["temperature"]["default"], s["top_p"]["default"], s["max_tokens"]["default"], s["seed"]["default"]) == \
        (d.temperature, d.top_p, d.max_tokens, d.seed)
    assert d.max_tokens is None  # run to the answer or the context's end
    assert schema["forced"]["properties"]["max_tokens"]["default"] == d.forced_max_tokens
    assert schema["max_reasoning_tokens"]["default"] == d.max_reasoning_tokens
    assert {k: tuple(v) for k, v in schema["stop"]["default"].items()} == DEFAULT_STOP == dict(d.stop)
    # the config loader's defaults give the same SamplingConfig as the dataclass
    from thinkprobe.config import load_schema, validate_config

    cfg = validate_config({"inputs": [{"path": "x.jsonl", "question_set": "demo"}]}, load_schema(REPO / "config" / "schema.yaml"))
    assert SamplingConfig.from_config(cfg["trajectories"]) == d
    # and the CLI's options read them
    import argparse

    from thinkprobe.commands import trajectory as cli

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    cli.add_parser(sub)
    args = parser.parse_args(["trajectory", "rec.json"])
    assert (args.n, args.stride, args.max_tokens, args.temperature, args.top_p, args.seed) == \
        (d.n, d.stride, d.max_tokens, d.temperature, d.top_p, d.seed)


@pytest.mark.fast
def test_decoding_overlays_sampling_and_keeps_the_rest():
    traj = {"n": 2, "sampling": {"temperature": 0.6, "max_tokens": 8}, "decodings": {"t02": {"temperature": 0.2}}}
    cfg = SamplingConfig.from_config(traj, "t02")
    assert (cfg.temperature, cfg.max_tokens, cfg.decoding, cfg.n) == (0.2, 8, "t02", 2)
    assert SamplingConfig.from_config(traj).temperature == 0.6
    with pytest.raises(ValueError, match="no decoding named 'hot'"):
        SamplingConfig.from_config(traj, "hot")


# ---------------------------------------------------------------- pure: incomplete, disagreement, standardisation

def _record(model, labels_by_pos, k, gold="7", **extra):
    cps = [{"checkpoint_index": i, "prefix_tokens": p, "labels": labs, "status": "ok" if labs else "skipped",
            "reason": None if labs else "does not fit the context"} for i, (p, labs) in enumerate(labels_by_pos)]
    return {"model": model, "question_set": "qs", "question_id": "q1", "run": "1", "task": "gsm8k", "gold": gold,
            "endpoint_label": "7", "status": "ok", "cot_tokens_realized": k, "checkpoints": cps, **extra}


@pytest.mark.fast
def test_incomplete_trajectory_has_no_k_dependent_measures_and_is_counted():
    full = _record("m", [(0, ["3", "3"]), (16, ["7", "3"]), (32, ["7", "7"]), (40, ["7", "7"])], 40)
    cut = _record("m", [(0, ["3", "3"]), (16, ["7", "3"]), (32, []), (40, [])], 40, question_id="q2")
    rows, excluded = trace_table([full, cut])
    a, b = rows.iloc[0], rows.iloc[1]
    assert not a["incomplete"] and a["mechanism"] is not None and a["t_commit"] == 32 and a["cot_tokens"] == 40
    assert b["incomplete"]
    for key in ("mechanism", "t_commit", "r_direct", "endpoint_prediction", "motion_center"):
        assert b[key] is None or b[key] != b[key], key  # None (NaN in the frame)
    assert b["cot_tokens"] == 40 and b["cot_tokens_sampled"] == 16  # K is the trace's, not the last sampled
    # the two checkpoints that could not be sampled are recorded exclusions with their position and reason
    cps = excluded[excluded["stage"] == "trajectory_checkpoint"]
    assert sorted(cps["prefix_tokens"]) == [32, 40] and cps["reason"].str.contains("does not fit").all()
    cond = condition_table(rows)
    assert int(cond["n_incomplete"].iloc[0]) == 1 and int(cond["n_mechanism"].iloc[0]) == 1


@pytest.mark.fast
def test_disagreement_skips_and_counts_an_unlabelled_checkpoint_zero():
    a = _record("a", [(0, []), (16, ["7", "7"]), (32, ["7", "7"])], 32)
    b = _record("b", [(0, ["3", "3"]), (16, ["3", "3"]), (32, ["7", "7"])], 32)
    table = disagreement([a, b], grid=5)  # positions 0, 8, 16, 24, 32 of K
    row = table.iloc[0]
    assert row["n_positions_skipped"] == 2 and row["n_positions"] == 3  # 0 and 8: a has no state yet
    assert row["dominant_disagreement"] == pytest.approx(2 / 3)  # 16 and 24 differ (7 vs 3), 32 agrees
    incomplete = _record("c", [(0, ["3", "3"]), (16, ["3", "3"]), (32, [])], 32)
    assert disagreement([a, incomplete], grid=5).empty  # an incomplete trace is left out


@pytest.mark.fast
def test_changes_are_standardised_by_the_default_decoding_sd():
    import pandas as pd

    from thinkprobe.trajectories.aggregates import matched_comparisons

    rows = []
    for i, v in enumerate([10.0, 20.0, 30.0, 40.0]):  # default decoding: SD of 12.91
        rows.append({"model": "m", "task": "gsm8k", "decoding": "default", "s_eff": v, "correct": True})
    for i in range(4):  # the two conditions hardly vary within themselves
        rows.append({"model": "m", "task": "gsm8k", "decoding": "t02", "s_eff": 1.0 + 0.01 * i, "correct": True})
        rows.append({"model": "m", "task": "gsm8k", "decoding": "t10", "s_eff": 14.0 + 0.01 * i, "correct": True})
    frame = pd.DataFrame(rows)
    comp = [{"name": "temperature", "pairs": [{"reference": {"decoding": "t02"}, "treatment": {"decoding": "t10"}}]}]
    _, units = matched_comparisons(frame, comp, metrics=("s_eff",), default={"decoding": "default"})
    sd = pd.Series([10.0, 20.0, 30.0, 40.0]).std(ddof=1)
    assert units.set_index("metric").loc["s_eff", "change"] == pytest.approx(13.0 / sd)


# ---------------------------------------------------------------- </think> as a special token

@pytest.fixture(scope="module")
def think_tokenizer():
    """SmolLM2's real tokenizer with <think> and </think> added as special tokens (a native reasoner's set-up)."""
    from transformers import AutoTokenizer

    from thinkprobe.generate.models import local_model_folder

    tok = AutoTokenizer.from_pretrained(str(local_model_folder("smollm2")))
    tok.add_special_tokens({"additional_special_tokens": ["<think>", "</think>"]})
    return tok


@pytest.mark.engine
def test_reasoning_end_from_the_think_token_id(think_tokenizer):
    from thinkprobe.generate.engine import Completion
    from thinkprobe.trajectories.checkpoints import think_close_id
    from thinkprobe.trajectories.sampling import _continuation, continuation_label

    tok = think_tokenizer
    close = think_close_id(tok)
    assert close is not None and tok.convert_ids_to_tokens(close) == "</think>"
    ids = tok.encode("<think>" + REASONING + "</think>The answer is 72.", add_special_tokens=False)
    r = find_reasoning(ids, tok)
    assert r.native and r.how == "think" and ids[len(r.head) + r.k] == close
    assert r.text.strip() == REASONING.strip()
    # a continuation of the reasoning that closes it: an engine that skips special tokens drops the tag,
    # and the text alone would read "72 ... 5" as an answer-less reasoning; the ids find the end
    cont_ids = tok.encode(" So that is 72.</think>The answer is 72.", add_special_tokens=False)
    skipped = tok.decode(cont_ids, skip_special_tokens=True)
    assert "</think>" not in skipped
    stored = _continuation(Completion(skipped, cont_ids, "stop"), "budget", tok, close)
    assert stored["think_closed"] and stored["stop"] == "eos"
    assert continuation_label(stored, "gsm8k", "full", native=True) == "72"
    open_ids = tok.encode(" Let me check 48 + 24 again", add_special_tokens=False)
    unclosed = _continuation(Completion(tok.decode(open_ids), open_ids, "length"), "budget", tok, close)
    assert unclosed["think_closed"] is False and unclosed["stop"] == "budget"
    assert continuation_label(unclosed, "gsm8k", "full", native=True) is None  # never reached its answer


# ---------------------------------------------------------------- with the real engine

@pytest.fixture(scope="module")
def engine(request):
    yield request.getfixturevalue("vllm_engine")


@pytest.fixture(scope="module")
def edge_trace(engine):
    """A prompted-CoT trace whose prompt leaves 18 tokens of the 2048-token context before its reasoning:
    checkpoints 0 and 16 fit (18 and 2 tokens of room), 32 and K do not."""
    tok = engine.tokenizer()
    reasoning = tok.encode(REASONING, add_special_tokens=False)[:40]
    answer = tok.encode("The answer is 72.", add_special_tokens=False)
    filler = tok.encode(QUESTION * 80, add_special_tokens=False)
    prompt = filler[: engine.max_model_len - 18]
    return RealizedTrace(engine.model, "gsm8k", "edge", "1", tuple(prompt), tuple(reasoning + answer), None,
                         engine_tokenizer_id(engine), "gsm8k", "72", {"prompt_variant": "cot"})


@pytest.mark.engine
def test_context_edge_makes_an_incomplete_reported_trajectory(engine, edge_trace, tmp_path):
    cfg = SamplingConfig(n=2, stride=16, max_tokens=None, seed=3)
    (doc,), _ = sample_traces(engine, [edge_trace], cfg, tmp_path / "store")
    k = doc["reasoning"]["k"]
    assert k > 32
    status = {c["prefix_tokens"]: c["status"] for c in doc["checkpoints"]}
    assert status[0] == status[16] == "ok" and status[32] == status[k] == "skipped"
    budgets = {c["prefix_tokens"]: c["max_tokens"] for c in doc["checkpoints"] if c["status"] == "ok"}
    assert budgets == {0: 18, 16: 2}  # unset budget = the room left, recorded
    stops = [x["stop"] for c in doc["checkpoints"] if c["status"] == "ok" for x in c["continuations"]]
    assert set(stops) <= {"eos", "stop_string", "context"} and "context" in stops
    rec = label_document(doc)
    assert rec["incomplete"] and any("incomplete" in n for n in rec["notes"])
    assert rec["temperature"] == 0.6 and rec["decoding"] == "default"
    rows, excluded = trace_table([rec])
    row = rows.iloc[0]
    assert row["incomplete"] and row["mechanism"] is None and row["t_commit"] is None and row["cot_tokens"] == k
    assert row["n_cut_context"] == stops.count("context") and row["n_cut_budget"] == 0
    assert len(excluded[excluded["stage"] == "trajectory_checkpoint"]) == 2
    assert int(condition_table(rows)["n_incomplete"].iloc[0]) == 1


@pytest.mark.engine
def test_continuation_cut_by_its_budget_is_recorded_counted_and_warned(engine, edge_trace, tmp_path):
    from thinkprobe.stages.trajectories import cut_warnings

    cfg = SamplingConfig(n=2, stride=16, max_tokens=1, seed=3)
    (doc,), _ = sample_traces(engine, [edge_trace], cfg, tmp_path / "store")
    c0 = next(c for c in doc["checkpoints"] if c["prefix_tokens"] == 0)
    assert c0["max_tokens"] == 1 and [x["stop"] for x in c0["continuations"]] == ["budget", "budget"]
    rec = label_document(doc)
    cp0 = next(c for c in rec["checkpoints"] if c["prefix_tokens"] == 0)
    assert cp0["n_cut_budget"] == 2 and cp0["n_null"] == 2  # cut, and therefore no parsable answer
    rows, _ = trace_table([rec])
    cond = condition_table(rows)
    assert cond["share_cut_budget"].iloc[0] >= 0.5
    warnings = cut_warnings(cond, 0.1)
    assert len(warnings) == 1 and f"model {engine.model} task gsm8k" in warnings[0]
    assert cut_warnings(cond, 1.0) == []


@pytest.mark.fast
def test_budget_is_the_room_left_unless_set():
    from thinkprobe.trajectories.sampling import _budget

    assert _budget(SamplingConfig(), 1500, 2048) == 548  # unset: to the end of the context
    assert _budget(SamplingConfig(max_tokens=96), 1500, 2048) == 96
    assert _budget(SamplingConfig(max_tokens=96), 2000, 2048) == 48  # trimmed at the context edge
    assert _budget(SamplingConfig(estimator="forced"), 1500, 2048) == SamplingConfig().forced_max_tokens
    with pytest.raises(ValueError, match="no max_model_len"):
        _budget(SamplingConfig(), 1500, None)
