"""What keys a stored continuation (issue 25, item 5; issue 28, "engine settings outside the key").

Every input that changes which continuations are sampled, cut or recorded keys the finished documents, the
continuation store's parts and the protection check: the sampling settings, the model, the engine settings
of each backend's ``identity_keys`` (:func:`thinkprobe.protect.engine_settings`: the context length, the dtype, an endpoint's token ids) and the
sampling code's hash. Performance knobs and resources key nothing.

The sampling job runs for real (:func:`thinkprobe.stages.trajectories.sample_batch`) against an
OpenAI-compatible server on loopback (a small one in this process that answers every request with the
same continuation and counts the requests), with SmolLM2's real tokenizer: what is asked of the endpoint
shows what was reused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from thinkprobe import protect
from thinkprobe.generate.defaults import ESTIMATORS
from thinkprobe.generate.backends import continuation_names
from thinkprobe.trajectories.sampling import (BACKEND_CODE, ESTIMATOR_CODE, SamplingConfig, sampling_code,
                                              sampling_code_sha256)
from thinkprobe.stages.trajectories import sample_batch
from thinkprobe.stages.unitfiles import write_unit
from thinkprobe.trajectories.batches import batch_identity

from .test_hostile_peers import Peer

REPO = Path(__file__).resolve().parents[1]
TRAJ = {"n": 2, "stride": 4, "prefixes_per_call": 64, "sampling": {"temperature": 0.6, "top_p": 0.95,
                                                                      "max_tokens": 8, "seed": 0}}
QUESTIONS = {"q1": {"task": "gsm8k", "gold": "7"}, "q2": {"task": "gsm8k", "gold": "4"}}


@pytest.fixture(scope="module")
def tok():
    from transformers import AutoTokenizer

    from thinkprobe.generate.models import local_model_folder

    return AutoTokenizer.from_pretrained(str(local_model_folder("smollm2")))


class Endpoint:
    """A loopback OpenAI-compatible server that says it is vLLM and answers every prompt with the same
    continuation (token ids included); ``posts`` counts the completion requests."""

    def __init__(self, tok):
        self.peer = Peer()
        self.posts = 0
        ids = tok.encode(" so the answer is 7.", add_special_tokens=False)

        def models(h):
            h.send(200, json.dumps({"data": [{"id": "m", "owned_by": "vllm", "max_model_len": 4096}]}))

        def complete(h, body):
            self.posts += 1
            h.send(200, json.dumps({"choices": [{"index": i, "text": tok.decode(ids), "token_ids": ids,
                                                 "finish_reason": "stop", "stop_reason": None}
                                                for i in range(body["n"])],
                                    "usage": {"prompt_tokens": len(body["prompt"]),
                                              "completion_tokens": body["n"] * len(ids)}}))

        self.peer.get, self.peer.post = models, complete
        self.url = self.peer.url

    def model(self, **extra) -> dict:
        return {"name": "m", "backend": "openai", "base_url": self.url, "served_model": "m", "tokenizer": "smollm2",
                "timeout_s": 10.0, "max_retries": 0, "backoff_s": 0.01, **extra}


@pytest.fixture()
def endpoint(tok):
    e = Endpoint(tok)
    yield e
    e.peer.close()


def write_traces(root: Path, tok) -> list[str]:
    """Two collected trace units (the model's own token ids) as the collection rules write them."""
    paths = []
    for qid, (question, answer) in {"q1": ("3 + 4?", "three plus four is seven, so seven"),
                                    "q2": ("2 + 2?", "two and two make four, so four")}.items():
        completion = f"<think>{answer}, then check it again once more</think>The answer is {answer[-4:]}."
        doc = {"unit": {"model": "m", "question_set": "qs", "question_id": qid, "run": "1"}, "status": "ok",
               "generation": {"prompt_token_ids": tok.encode(f"Question: {question}\n", add_special_tokens=False),
                              "completion_token_ids": tok.encode(completion, add_special_tokens=False),
                              "completion_text": completion}}
        path = root / "results/traces/m/qs" / qid / "1.json"
        write_unit(path, doc)  # sealed, as the collection job writes it (a unit file without a digest is refused)
        paths.append(str(path))
    return paths


def run(endpoint, tmp_path, traces, model, traj=TRAJ, out="b0000.json"):
    """One sampling job; returns its stats, the requests it made and its log."""
    lines: list[str] = []
    before = endpoint.posts
    traj = dict(traj)  # prefixes_per_call is a job's performance knob (an argument), not a sampling setting
    knob = {"prefixes_per_call": traj.pop("prefixes_per_call")} if "prefixes_per_call" in traj else {}
    stats = sample_batch(traces, str(tmp_path / "out" / out), model, traj, QUESTIONS, str(tmp_path / "store"),
                         log=lines.append, **knob)
    return stats, endpoint.posts - before, "\n".join(lines)


@pytest.mark.slow
def test_a_changed_engine_setting_reuses_no_stored_document_and_a_performance_knob_reuses_all(
        endpoint, tmp_path, tok):
    traces = write_traces(tmp_path, tok)
    base = endpoint.model(max_model_len=2048)
    stats, posts, _ = run(endpoint, tmp_path, traces, base)
    assert posts > 0 and stats["documents_reused"] == 0
    # performance knobs and resources: every document reused, no engine started, nothing asked
    knobs = endpoint.model(max_model_len=2048, concurrency=2, timeout_s=30.0, max_retries=3, mem_mb=999,
                           threads=7, runtime=5, max_reply_bytes=2**22)
    stats, posts, log = run(endpoint, tmp_path, traces, knobs, {**TRAJ, "prefixes_per_call": 3})
    assert stats["documents_reused"] == 2 and posts == 0 and "no engine started" in log
    # the context length (what the cut-share warning advises to raise): no document and no part reused
    stats, posts, _ = run(endpoint, tmp_path, traces, endpoint.model(max_model_len=4096))
    assert stats["documents_reused"] == 0 and stats["checkpoints_reused"] == 0 and posts > 0
    # whether the endpoint's token ids were asked for: the same
    stats, posts, _ = run(endpoint, tmp_path, traces, endpoint.model(max_model_len=2048, return_token_ids=False))
    assert stats["documents_reused"] == 0 and stats["checkpoints_reused"] == 0 and posts > 0
    # back to the first settings: everything is still there
    stats, posts, _ = run(endpoint, tmp_path, traces, base)
    assert stats["documents_reused"] == 2 and posts == 0


@pytest.mark.fast
def test_every_key_sees_the_engine_settings_and_no_performance_knob():
    """The vLLM backend's keys, checked on the identity that keys finished documents, parts and protection."""
    from thinkprobe.trajectories.store import FinishedDocuments

    model = {"name": "m", "backend": "vllm", "path": "m",
             "engine": {"max_model_len": 4096, "block_size": 32, "max_num_seqs": 256}}
    base = batch_identity(TRAJ, model)
    question = {"task": "gsm8k", "gold": "7"}
    same = [{**model, "engine": {**model["engine"], "block_size": 16, "max_num_seqs": 8, "max_num_batched_tokens": 4096,
                                 "enable_prefix_caching": False, "gpu_memory_utilization": 0.5,
                                 "kv_cache_space_gb": 4, "enforce_eager": False, "tensor_parallel_size": 2}},
            {**model, "mem_mb": 64000, "threads": 16, "runtime": 600, "gpu_model": "a100", "device": "cpu"},
            {**model, "engine": {**model["engine"], "dtype": "auto"}}]  # the default, stated
    for other in same:
        assert batch_identity(TRAJ, other) == base, other
    assert batch_identity({**TRAJ, "prefixes_per_call": 1}, model) == base
    changed = [({**model, "engine": {**model["engine"], "max_model_len": 8192}}, "max_model_len"),
               ({**model, "engine": {"block_size": 32}}, "max_model_len"),  # unset: the model's own
               ({**model, "engine": {**model["engine"], "dtype": "float16"}}, "dtype")]
    keys = {FinishedDocuments.key(b"unit", base, question)}
    for other, what in changed:
        ident = batch_identity(TRAJ, other)
        assert ident["engine"] != base["engine"] and ident["sampling_sha256"] == base["sampling_sha256"], what
        keys.add(FinishedDocuments.key(b"unit", ident, question))
    assert len(keys) == 1 + len(changed)  # each change: another finished-document key


@pytest.mark.fast
def test_protection_names_a_changed_engine_setting_and_the_sampling_code(tmp_path):
    model = {"name": "m", "backend": "vllm", "path": "m", "engine": {"max_model_len": 4096}}
    batch = tmp_path / "b0000.json"
    batch.write_text("{}")
    protect.record(batch, batch_identity(TRAJ, model))
    assert protect.changed({str(batch): batch_identity(TRAJ, model)}) == []
    raised = {**model, "engine": {"max_model_len": 8192}}
    assert protect.changed({str(batch): batch_identity(TRAJ, raised)}) == [(str(batch), "the engine settings")]
    other_code = {**batch_identity(TRAJ, model), "code_sha256": "0" * 64}
    assert protect.changed({str(batch): other_code}) == [(str(batch), "the sampling code")]
    # a batch recorded before the engine settings and the code were keyed: refused, and the message says why
    old = protect.identity(SamplingConfig.from_config(TRAJ).as_dict(), model)
    protect.record(batch, {k: v for k, v in old.items() if k not in ("engine", "code_sha256")})
    (path, why), = protect.changed({str(batch): batch_identity(TRAJ, model)})
    assert why == ("the engine settings and the sampling code, which the batch does not record (an older "
                   "thinkprobe wrote it),")
    assert f"{batch} (the engine settings and the sampling code, which the batch does not record" in \
        protect.refusal([(path, why)])


MODELS = {"vllm": {"name": "m", "backend": "vllm", "path": "m"},
          "openai": {"name": "m", "backend": "openai", "base_url": "http://127.0.0.1:9/v1", "served_model": "m"}}
# In a copy of the package: the code hash of a batch's identity (what planning, the store and the finished
# documents compare) for each (backend, trajectories section) given as JSON.
CODE_HASH = ("import json, sys; from thinkprobe.trajectories.batches import batch_identity; "
             "print(json.dumps([batch_identity(traj, model)['code_sha256'] for model, traj in json.loads(sys.argv[1])]))")


def _code_hashes(package_root: Path, combos: list[tuple[str, dict]]) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    arg = json.dumps([[MODELS[backend], traj] for backend, traj in combos])
    out = subprocess.run([sys.executable, "-c", CODE_HASH, arg], capture_output=True, text=True,
                         env=env, check=True, cwd=package_root)
    return json.loads(out.stdout)


def _code_hash(package_root: Path, traj: dict, backend: str = "vllm") -> str:
    return _code_hashes(package_root, [(backend, traj)])[0]


@pytest.mark.fast
def test_an_edit_of_the_sampling_code_changes_the_key_and_a_label_parser_edit_does_not(tmp_path):
    """A copy of the package, edited as a developer would: the sampling code's hash (in every key) follows
    an edit of the sampling module; an edit of the label parser changes it only where labels decide how
    many continuations are sampled (sequential stopping), so a parser change never costs GPU time."""
    off, on = sampling_code(False, "vllm", "full"), sampling_code(True, "vllm", "full")
    assert "trajectories.sampling" in off and "trajectories.labelling" not in off
    assert {"trajectories.labelling", "trajectories.parsing", "trajectories.stopping"} <= set(on)
    assert not {"trajectories.dynamics", "trajectories.distributions"} & set(on)
    stopping = {**TRAJ, "stopping": {"enabled": True}}
    root = tmp_path / "copy"
    shutil.copytree(REPO / "thinkprobe", root / "thinkprobe", ignore=shutil.ignore_patterns("__pycache__"))
    assert _code_hash(root, TRAJ) == sampling_code_sha256(False, "vllm", "full")
    assert _code_hash(root, stopping) == sampling_code_sha256(True, "vllm", "full")
    with open(root / "thinkprobe/trajectories/labelling.py", "a", encoding="utf-8") as fh:
        fh.write("\n# a parser edit\n")
    assert _code_hash(root, TRAJ) == sampling_code_sha256(False, "vllm", "full")
    assert _code_hash(root, stopping) != sampling_code_sha256(True, "vllm", "full")
    with open(root / "thinkprobe/trajectories/sampling.py", "a", encoding="utf-8") as fh:
        fh.write("\n# a sampling edit\n")
    assert _code_hash(root, TRAJ) != sampling_code_sha256(False, "vllm", "full")


def _edit(root: Path, module: str) -> None:
    with open(root / "thinkprobe" / module, "a", encoding="utf-8") as fh:
        fh.write(f"\n# an edit of {module}\n")


@pytest.mark.fast
def test_a_batch_is_keyed_by_the_code_of_its_own_backend_and_estimator_only(tmp_path):
    """Stored work keyed by what made it (issue 34, item 3), in a copy of the package edited as a developer
    would: an edit of the HTTP client leaves the identity of every vLLM batch as it was (so a finished vLLM
    sampling run finds its batches, parts and finished documents and samples nothing) and changes the HTTP
    batches'; an edit of the forced-answer estimator leaves every batch of the full-continuation estimator as
    it was; an edit of the vLLM engine changes the vLLM batches' and no HTTP batch's; an edit of the engine
    factory (a new backend's branch) changes none."""
    forced = {**TRAJ, "estimator": "forced"}
    combos = [("vllm", TRAJ), ("vllm", forced), ("openai", TRAJ), ("openai", forced)]
    names = ["vllm/full", "vllm/forced", "openai/full", "openai/forced"]
    assert set(BACKEND_CODE) == set(continuation_names()) and set(ESTIMATOR_CODE) == set(ESTIMATORS)
    root = tmp_path / "copy"
    shutil.copytree(REPO / "thinkprobe", root / "thinkprobe", ignore=shutil.ignore_patterns("__pycache__"))
    base = dict(zip(names, _code_hashes(root, combos)))
    assert base == {f"{b}/{e}": sampling_code_sha256(False, b, e) for b in continuation_names() for e in ESTIMATORS}
    assert len(set(base.values())) == 4, base  # each combination its own code

    def changed_by(module: str) -> set[str]:
        nonlocal base
        _edit(root, module)
        after = dict(zip(names, _code_hashes(root, combos)))
        moved, base = {n for n in names if after[n] != base[n]}, after
        return moved

    assert changed_by("generate/http_engine.py") == {"openai/full", "openai/forced"}
    assert changed_by("trajectories/forced.py") == {"vllm/forced", "openai/forced"}
    assert changed_by("generate/vllm_engine.py") == {"vllm/full", "vllm/forced"}
    assert changed_by("generate/engine.py") == set()
    assert changed_by("generate/interface.py") == set(names)  # the interface both backends run is shared


@pytest.mark.fast
def test_an_unknown_backend_or_estimator_has_no_sampling_code():
    with pytest.raises(ValueError, match="unknown backend 'tgi' \\(one of openai, vllm\\)"):
        sampling_code(False, "tgi", "full")
    with pytest.raises(ValueError, match="unknown estimator 'cut' \\(one of forced, full\\)"):
        sampling_code(False, "vllm", "cut")


@pytest.mark.fast
def test_every_module_only_one_backend_or_estimator_imports_is_declared_as_its_code():
    """The walk from the sampling functions reaches every backend (a package's __init__ re-exports the engine
    factory), so :data:`BACKEND_CODE` / :data:`ESTIMATOR_CODE` name what only one member runs. A helper module
    that a backend's (or estimator's) module imports and no shared sampling module imports belongs to that member:
    left undeclared, it would key every other member's batches too. Fails naming the module to declare."""
    from thinkprobe import codedeps
    from thinkprobe.trajectories.sampling import NOT_SAMPLING_CODE

    def imports(module: str) -> set[str]:
        info = codedeps._module_info(module)
        refs = set(info.bindings.values()) | set(info.always_imports)
        refs |= {r for found in info.def_imports.values() for r in found}
        return {m for m, _ in refs}

    members = {m for table in (BACKEND_CODE, ESTIMATOR_CODE) for mods in table.values() for m in mods}
    # the shared code's modules and what they import, never through a member or the factory (NOT_SAMPLING_CODE)
    shared, todo = set(), ["trajectories.sampling"]
    while todo:
        module = todo.pop()
        if module not in shared and module not in members and module not in NOT_SAMPLING_CODE:
            shared.add(module)
            todo += imports(module)
    assert "generate.interface" in shared and not {"generate.vllm_engine", "generate.http_engine"} & shared
    shared_imports = shared.union(*(imports(m) for m in shared))
    for table in (BACKEND_CODE, ESTIMATOR_CODE):
        for name, mods in table.items():
            for module in mods:
                loose = imports(module) - shared_imports - members - NOT_SAMPLING_CODE
                assert not loose, f"{module} ({name}) imports {sorted(loose)}: declare them as its code"


RESAMPLE = r'''
import json, sys
from thinkprobe.stages.trajectories import sample_batch
a = json.loads(sys.argv[1])
lines = []
stats = sample_batch(a["traces"], a["out"], a["model"], a["traj"], a["questions"], a["store"], log=lines.append)
print("STATS " + json.dumps({"documents_reused": stats["documents_reused"], "log": "\n".join(lines)}))
'''


@pytest.mark.slow
def test_a_finished_run_is_left_with_nothing_to_sample_by_an_edit_of_another_backend_or_estimator(
        endpoint, tmp_path, tok):
    """End to end, through a real (loopback) endpoint: a finished sampling run of the HTTP backend and the full
    estimator, rerun by a copy of the package whose vLLM engine and forced-answer estimator were edited, takes
    every document from the store and asks the endpoint nothing; the same copy with its HTTP client edited
    samples again. (The vLLM direction is the identity test above: an engine start here costs a minute.)"""
    traces = write_traces(tmp_path, tok)
    model = endpoint.model(max_model_len=2048)
    stats, posts, _ = run(endpoint, tmp_path, traces, model)
    assert posts > 0 and stats["documents_reused"] == 0
    root = tmp_path / "copy"
    shutil.copytree(REPO / "thinkprobe", root / "thinkprobe", ignore=shutil.ignore_patterns("__pycache__"))
    traj = {k: v for k, v in TRAJ.items() if k != "prefixes_per_call"}
    arg = json.dumps({"traces": traces, "out": str(tmp_path / "out" / "b0000.json"), "model": model, "traj": traj,
                      "questions": QUESTIONS, "store": str(tmp_path / "store")})

    def rerun() -> tuple[dict, int]:
        before = endpoint.posts
        out = subprocess.run([sys.executable, "-c", RESAMPLE, arg], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "PYTHONPATH": str(root)}, cwd=root)
        line = next((ln for ln in out.stdout.splitlines() if ln.startswith("STATS ")), None)
        assert line, out.stderr[-3000:]
        return json.loads(line[len("STATS "):]), endpoint.posts - before

    _edit(root, "generate/vllm_engine.py")
    _edit(root, "trajectories/forced.py")
    got, posts = rerun()
    assert got["documents_reused"] == 2 and posts == 0 and "no engine started" in got["log"], got
    _edit(root, "generate/http_engine.py")
    got, posts = rerun()
    assert got["documents_reused"] == 0 and posts > 0, got
