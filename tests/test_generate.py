"""Generation interface and collection logic: reasoning split, looping, seeds, planning, and the real
SmolLM2 vLLM engine on CPU (one engine per session, the ``vllm_engine`` fixture)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from thinkprobe.generate.unit_store import store_path
from thinkprobe.stages.collect import trace_unit_doc
from thinkprobe.stages.collect import collect_batch
from thinkprobe.generate.engine import EngineError, SamplingSpec, open_engine
from thinkprobe.generate.collection_jobs import CollectionConfigError, join_collection, list_collection_jobs, unit_seed
from thinkprobe.generate.reasoning import find_loop, split_reasoning
from thinkprobe.units import Discovery, UnitKey

LOOP = {"window": 3, "min_repeats": 3, "min_line_chars": 8, "max_retries": 1}


# ----------------------------------------------------------------------------------------- pure logic

@pytest.mark.fast
def test_split_reasoning_cases():
    s = split_reasoning("pre <think> a b </think> the answer")
    assert (s.reasoning, s.answer, s.closed) == ("a b", "the answer", True)
    s = split_reasoning("reasoning only</think>final")  # the template opened the block
    assert (s.reasoning, s.answer) == ("reasoning only", "final")
    s = split_reasoning("<think>never closed")
    assert (s.reasoning, s.answer, s.closed) == ("never closed", "", False)
    s = split_reasoning("The answer is 4.", reasoning_field="2+2 is 4")
    assert (s.reasoning, s.answer) == ("2+2 is 4", "The answer is 4.")
    s = split_reasoning("The answer is 4.", reasoning_field="   ")
    assert s.reasoning is None and s.answer == "The answer is 4."  # never the answer in its place


@pytest.mark.fast
def test_find_loop_worked_by_hand():
    block = "Let me add the numbers again.\nSo the total is twelve.\nThat seems wrong somehow.\n"
    text = "We start with the question here.\n" + block * 4 + "done"
    loop = find_loop(text)
    # lines 1-3 form the block; it recurs at line 4 (character offset len(first line) + len(block))
    assert loop is not None and loop.count == 4
    assert loop.cut == len("We start with the question here.\n") + len(block)
    assert text[:loop.cut].endswith(block)
    # twice is not a loop (min_repeats 3); short lines ("Wait.") are ignored
    assert find_loop("We start here now.\n" + block * 2) is None
    assert find_loop("Wait.\n" * 30 + "A real line of reasoning.") is None
    # a paragraph repeating one sentence loops too (lines are cut at sentence ends)
    para = "Intro sentence comes first. " + "The cat sat on the mat. " * 6
    loop = find_loop(para)
    assert loop is not None and para[:loop.cut].count("The cat sat") == 1


@pytest.mark.fast
def test_unit_seeds_are_stable_and_distinct():
    a = UnitKey("m", "qs", "q1", "1")
    seeds = {unit_seed(0, UnitKey("m", "qs", q, r)) for q in ("q1", "q2") for r in ("1", "2", "3")}
    assert len(seeds) == 6
    assert unit_seed(0, a) == unit_seed(0, a) != unit_seed(1, a)
    assert unit_seed(0, a, attempt=1) != unit_seed(0, a)
    assert all(0 <= s < 2**31 for s in seeds)


def _config(**collection):
    return {"models": {"smollm2": {"backend": "vllm", "path": "smollm2"}},
            "question_sets": {"tiny": {"source": "builtin", "limit": 3}},
            "collection": {"jobs": [{"model": "smollm2", "question_set": "tiny"}], "runs": 2, "seed": 0,
                           "batch_questions": 2, "chunk_prompts": 64, "sampling": {"max_tokens": 32},
                           "loop_detection": LOOP, **collection}}


@pytest.mark.fast
def test_plan_batches_units_and_grid():
    plan = list_collection_jobs(_config())
    assert sorted(plan.batches) == [("smollm2", "tiny", "c0000"), ("smollm2", "tiny", "c0001")]
    assert [len(v) for _, v in sorted(plan.batches.items())] == [2, 1]
    assert len(plan.units) == 6 and plan.runs() == ["1", "2"]
    params = plan.batch_params("smollm2", "tiny", "c0000", _config()["collection"])
    assert [u["unit"]["run"] for u in params["units"]] == ["1", "2", "1", "2"]
    assert len({u["seed"] for u in params["units"]}) == 4
    # appending questions keeps the earlier batches and seeds as they were
    bigger = _config()
    bigger["question_sets"]["tiny"]["limit"] = 5
    plan5 = list_collection_jobs(bigger)
    assert plan5.batches[("smollm2", "tiny", "c0000")] == plan.batches[("smollm2", "tiny", "c0000")]
    assert plan5.batch_params("smollm2", "tiny", "c0000", bigger["collection"])["units"] == params["units"]
    found = Discovery(models=["model_a"], runs=["1", "2", "3"], questions={"demo": ["q01"]})
    join_collection(found, _config())
    assert found.models == ["model_a", "smollm2"] and found.runs == ["1", "2", "3"]
    assert list(found.questions) == ["demo", "tiny"] and len(found.questions["tiny"]) == 3


@pytest.mark.fast
@pytest.mark.parametrize("edit, message", [
    (lambda c: c["collection"]["jobs"][0].update(model="nope"), "unknown model 'nope'"),
    (lambda c: c["collection"]["jobs"][0].update(question_set="nope"), "unknown question set 'nope'"),
    (lambda c: c["collection"]["jobs"][0].update(prompt_variant="shouty"), "unknown prompt variant 'shouty'"),
    (lambda c: c["question_sets"]["tiny"].update(source="gsm8k", path="no/such/file.jsonl"), "question set 'tiny'"),
])
def test_plan_bad_config_names_the_item(edit, message):
    cfg = _config()
    edit(cfg)
    with pytest.raises(CollectionConfigError, match=message):
        list_collection_jobs(cfg)


@pytest.mark.fast
def test_collected_set_that_is_also_imported_is_refused():
    found = Discovery(models=["model_a"], runs=["1"], questions={"tiny": ["q01"]})
    with pytest.raises(CollectionConfigError, match="both imported"):
        join_collection(found, _config())


@pytest.mark.fast
def test_engine_faults_are_clear_errors(monkeypatch):
    with pytest.raises(EngineError, match="unknown backend 'tgi'"):
        open_engine({"name": "m", "backend": "tgi"})
    monkeypatch.delenv("THINKPROBE_TEST_KEY_UNSET", raising=False)
    with pytest.raises(EngineError, match="THINKPROBE_TEST_KEY_UNSET is not set"):
        open_engine({"name": "m", "backend": "openai", "base_url": "http://127.0.0.1:9/v1",
                     "api_key_env": "THINKPROBE_TEST_KEY_UNSET"})
    monkeypatch.setenv("THINKPROBE_TEST_KEY", "sk-secret-value")
    with pytest.raises(EngineError, match="unreachable") as err:
        open_engine({"name": "m", "backend": "openai", "base_url": "http://127.0.0.1:9/v1",
                     "api_key_env": "THINKPROBE_TEST_KEY", "max_retries": 1, "backoff_s": 0.01, "timeout_s": 2})
    assert "sk-secret-value" not in str(err.value)
    with pytest.raises(EngineError, match="not a built-in model"):
        open_engine({"name": "m", "backend": "vllm", "path": "no-such-model-folder"})


# ------------------------------------------------------------------------- the real engine (SmolLM2)

def _chat(engine, text):
    return engine.tokenizer().apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                  add_generation_prompt=True)


@pytest.mark.engine
def test_identical_call_reproduces_and_runs_differ(vllm_engine):
    prompt = _chat(vllm_engine, "Name three uses of a paperclip.")
    specs = [SamplingSpec(n=1, temperature=0.8, max_tokens=24, seed=s) for s in (11, 12, 13)]
    # vLLM reproduces a seeded call for the same batch make-up AND the same prefix-cache state (a prompt
    # served from the cache is computed differently, and bf16 rounding can flip a near tie): warm the cache
    vllm_engine.generate([prompt], [SamplingSpec(max_tokens=1, seed=1)])
    first = vllm_engine.generate([prompt] * 3, specs)
    again = vllm_engine.generate([prompt] * 3, specs)
    assert [g.completions[0].token_ids for g in first] == [g.completions[0].token_ids for g in again]
    texts = [g.completions[0].text for g in first]
    assert len(set(texts)) == 3, texts  # distinct runs: three seeds, three different completions
    for g in first:
        c = g.completions[0]
        assert g.error is None and c.finish_reason in ("stop", "length") and 0 < len(c.token_ids) <= 24
        assert vllm_engine.tokenizer().decode(c.token_ids, skip_special_tokens=True).strip() == c.text.strip()


@pytest.mark.engine
def test_token_id_prompts_are_used_verbatim_and_share_the_cache(vllm_engine):
    tok = vllm_engine.tokenizer()
    ids = tok.encode(_chat(vllm_engine, "Describe a lighthouse at night in detail. " * 20), add_special_tokens=False)
    assert len(ids) > 96
    gens = vllm_engine.generate([ids, ids[:96]], [SamplingSpec(max_tokens=4, seed=1)] * 2)
    assert [g.prompt_tokens for g in gens] == [len(ids), 96]
    again = vllm_engine.generate([ids[:96] + ids[96:112]], [SamplingSpec(max_tokens=4, seed=2)])
    assert again[0].cached_tokens is not None and again[0].cached_tokens >= 64  # whole 32-token blocks reused


@pytest.mark.engine
def test_prompt_longer_than_the_context_is_a_per_prompt_error(vllm_engine):
    good = _chat(vllm_engine, "Say hello.")
    too_long = list(range(100, 100 + vllm_engine.max_model_len + 5))
    near = list(range(100, 100 + vllm_engine.max_model_len - 3))
    gens = vllm_engine.generate([too_long, good, near], [SamplingSpec(max_tokens=16, seed=3)] * 3)
    assert gens[0].error and "no room in the context" in gens[0].error and not gens[0].completions
    assert gens[1].error is None and gens[1].completions[0].text
    assert gens[2].error is None and len(gens[2].completions[0].token_ids) <= 3 and gens[2].info["max_tokens"] == 3


class _Shared:
    """open_engine for collect_batch that hands out the session engine (and counts the opens)."""

    def __init__(self, engine):
        self.engine, self.opens = engine, 0

    def __call__(self, cfg):
        self.opens += 1
        return _NoClose(self.engine)


class _NoClose:
    def __init__(self, engine):
        self._e = engine

    def __getattr__(self, name):
        return getattr(self._e, name)

    def close(self):
        pass


def _params(plan_cfg, model_extra=None, variant="cot"):
    plan = list_collection_jobs(plan_cfg)
    params = plan.batch_params("smollm2", "tiny", "c0000", plan_cfg["collection"])
    params["model"] = {**params["model"], "think_prefill": True, "reasoning": "prompted", **(model_extra or {})}
    params["prompt_variant"] = variant
    return params


@pytest.mark.engine
def test_collect_batch_stores_each_unit_once(vllm_engine, tmp_path):
    cfg = _config()
    params = _params(cfg)
    # one question is longer than the context: its two units are excluded and stored, the batch goes on
    for u in params["units"][:2]:
        u["question"] = {**u["question"], "text": "word " * 3000}
    opener = _Shared(vllm_engine)
    store, traces = tmp_path / "store", tmp_path / "traces"
    manifest = collect_batch(opener, params, store, traces=str(traces))
    assert opener.opens == 1 and manifest["stats"]["generated"] == 4
    assert manifest["stats"]["traces_written"] == 4  # the job writes its units' trace files itself
    docs = {p: json.loads(store_path(store, u["unit"]).read_text()) for p, u in
            ((UnitKey(**u["unit"]).path, u) for u in params["units"])}
    statuses = {p: d["status"] for p, d in docs.items()}
    assert statuses["smollm2/tiny/ethical-dilemmas-01/1"] == statuses["smollm2/tiny/ethical-dilemmas-01/2"] == "excluded"
    assert "no room in the context" in docs["smollm2/tiny/ethical-dilemmas-01/2"]["reason"]
    ok = [d for d in docs.values() if d["status"] == "ok"]
    assert len(ok) == 2
    for d in ok:
        prov = d["provenance"]
        assert d["reasoning"] and d["token_ids"] and prov["seed"] == prov["sampling"]["seed"]
        assert prov["backend"] == "vllm" and prov["engine_version"].startswith("vllm")
        assert prov["prompt_variant"] == "cot" and prov["reasoning_mode"] == "prompted"
        assert prov["tokens"]["completion"] == len(d["token_ids"]) and prov["tokens"]["prompt"] > 0
        assert vllm_engine.tokenizer().decode(d["token_ids"], skip_special_tokens=True).strip().startswith(
            d["reasoning"][:20])
    files = sorted([*store.rglob("*.json"), *traces.rglob("*.json")])
    assert len(files) == 8  # 4 stored units, 4 trace files (the excluded units' too: the analysis lists them)
    assert all(not (f.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) for f in files)
    entry = manifest["units"]["smollm2/tiny/ethical-dilemmas-02/1"]
    assert entry["trace"] == str(traces / "smollm2/tiny/ethical-dilemmas-02/1.json")
    assert entry["completion_tokens"] == len(docs["smollm2/tiny/ethical-dilemmas-02/1"]["token_ids"])
    assert 0 < entry["reasoning_tokens"] <= entry["completion_tokens"]
    before = {f: (f.read_bytes(), f.stat().st_mtime_ns) for f in files}
    # a rerun finds everything stored: the engine is not even opened, no file is touched (no trace rewritten)
    never = _Shared(None)
    manifest2 = collect_batch(never, params, store, traces=str(traces))
    assert never.opens == 0 and manifest2["stats"]["already_stored"] == 4 and manifest2["stats"]["traces_written"] == 0
    assert {f: (f.read_bytes(), f.stat().st_mtime_ns) for f in files} == before
    # the analysis's unit file: reasoning verbatim, answer apart, origin collected
    unit = params["units"][2]["unit"]
    doc = trace_unit_doc(unit, store_path(store, unit))
    assert doc["status"] == "ok" and doc["origin"] == "collected"
    assert doc["trace"]["text"] == docs[UnitKey(**unit).path]["reasoning"]
    assert doc["generation"]["token_ids"] == docs[UnitKey(**unit).path]["token_ids"]


@pytest.mark.engine
def test_response_without_reasoning_is_retried_then_excluded(vllm_engine, tmp_path):
    cfg = _config(runs=1)
    params = _params(cfg, {"think_prefill": False}, variant="plain")
    params["units"] = params["units"][:1]
    collect_batch(_Shared(vllm_engine), params, tmp_path)
    doc = json.loads(store_path(tmp_path, params["units"][0]["unit"]).read_text())
    if doc["status"] == "ok":  # the model opened <think> by itself: then the reasoning must be there
        assert doc["reasoning"]
        pytest.skip("SmolLM2 wrote a <think> block unprompted in this sample")
    assert doc["status"] == "excluded" and "no reasoning in the response after 2 attempt(s)" in doc["reason"]
    assert len(doc["provenance"]["attempts"]) == 2
    assert len({a["seed"] for a in doc["provenance"]["attempts"]}) == 2


@pytest.mark.fast
def test_units_stored_with_other_settings_are_never_overwritten(tmp_path):
    from thinkprobe.generate.unit_store import StaleUnits, unit_settings, write_store_unit

    cfg = _config()
    params = list_collection_jobs(cfg).batch_params("smollm2", "tiny", "c0000", cfg["collection"])
    u = params["units"][0]
    path = store_path(tmp_path, u["unit"])
    path.parent.mkdir(parents=True)
    # sealed, as the collection job stores it (a unit without a digest is refused: issue 37)
    write_store_unit(path, {"status": "ok", "settings_sha256": unit_settings(u, params)}, u["unit"])
    hotter = {**params, "sampling": {**params["sampling"], "temperature": 1.0}}
    assert unit_settings(u, hotter) != unit_settings(u, params)
    assert unit_settings(params["units"][1], params) != unit_settings(u, params)  # another seed

    def no_engine(cfg):
        raise AssertionError("the engine must not be opened")

    before = path.read_bytes()
    with pytest.raises(StaleUnits, match="never overwritten") as err:
        collect_batch(no_engine, hotter, tmp_path)
    assert str(path) in str(err.value) and path.read_bytes() == before
