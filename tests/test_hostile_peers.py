"""Hostile and failing OpenAI-compatible peers on loopback: real HTTP servers in this process that redirect
to another host, dribble bytes, send malformed replies or are down. The client under test is the real
:class:`~thinkprobe.generate.http_engine.HttpEngine`, and through it continuation sampling and collection.

Each test asserts what happened to every item (stored, or failed and retried next time) and that nothing
finished changed."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from thinkprobe.generate.engine import EngineError, SamplingSpec, open_engine
from thinkprobe.generate.faults import TransientFailures

from .test_trajectory_sampling import Chars as _SamplingChars

pytestmark = pytest.mark.fast

KEY = "sk-thinkprobe-hostile-3c1d"


class Peer:
    """A small OpenAI-compatible server. ``posts`` is a callable (handler, body) -> None that answers a POST
    (default: a fixed completion); ``models`` answers GET /v1/models. Records every request's path and
    Authorization header."""

    def __init__(self):
        self.requests: list[tuple[str, str, str]] = []  # (method, path, authorization)
        self.post = None
        self.get = None
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send(self, status: int, data: bytes | str, headers: dict | None = None):
                data = data.encode() if isinstance(data, str) else data
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                peer.requests.append(("GET", self.path, self.headers.get("Authorization", "")))
                if peer.get is not None:
                    return peer.get(self)
                self.send(200, json.dumps({"object": "list", "data": [{"id": "m", "max_model_len": 4096,
                                                                       "owned_by": "stub"}]}))

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                peer.requests.append(("POST", self.path, self.headers.get("Authorization", "")))
                if peer.post is not None:
                    return peer.post(self, json.loads(body))
                self.send(200, completion("The answer is 7."))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.url = self.origin + "/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()  # shutdown() waits one poll

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def completion(text: str, n: int = 1, chat: bool = False) -> str:
    choice = ({"message": {"role": "assistant", "content": text}} if chat else {"text": text})
    return json.dumps({"choices": [{"index": i, "finish_reason": "stop", **choice} for i in range(n)],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 4}})


@pytest.fixture()
def peers():
    made: list[Peer] = []

    def make() -> Peer:
        made.append(Peer())
        return made[-1]

    yield make
    for p in made:
        p.close()


def engine_for(url: str, monkeypatch, **extra):
    monkeypatch.setenv("THINKPROBE_HOSTILE_KEY", KEY)
    return open_engine({"name": "m", "backend": "openai", "base_url": url, "served_model": "m",
                        "api_key_env": "THINKPROBE_HOSTILE_KEY", "timeout_s": 10.0, "max_retries": 1,
                        "backoff_s": 0.01, **extra})


# ---------------------------------------------------------------- redirects

def tiny_http_collection(url: str) -> dict:
    """A collection of the three builtin questions by one model behind the endpoint at ``url`` (no retries)."""
    return {"models": {"m": {"backend": "openai", "base_url": url, "served_model": "m",
                             "api_key_env": "THINKPROBE_HOSTILE_KEY", "timeout_s": 10, "max_retries": 0,
                             "backoff_s": 0.01}},
            "question_sets": {"tiny": {"source": "builtin", "limit": 3}},
            "collection": {"jobs": [{"model": "m", "question_set": "tiny", "prompt_variant": "plain"}],
                           "runs": 1, "seed": 0, "batch_questions": 10, "chunk_prompts": 8,
                           "sampling": {"max_tokens": 24, "temperature": 0.6},
                           "loop_detection": {"window": 3, "min_repeats": 3, "min_line_chars": 8,
                                              "max_retries": 0}}}


def test_a_redirect_to_another_host_never_carries_the_key(peers, monkeypatch):
    a, b = peers(), peers()
    # 1. the listing redirects to another host: the engine does not open, b never sees the key
    a.get = lambda h: h.send(302, "", {"Location": b.url + "/models"})
    with pytest.raises(EngineError, match="another host"):
        engine_for(a.url, monkeypatch)
    assert all(auth == "" for _, _, auth in b.requests)
    assert not b.requests  # not followed at all
    # 2. completions redirect (307 keeps the POST) to another host: that prompt's transient error
    a.get = None
    a.post = lambda h, body: h.send(307, "", {"Location": b.url + "/completions"})
    engine = engine_for(a.url, monkeypatch)
    gens = engine.generate([[1, 2, 3]], [SamplingSpec(max_tokens=4)])
    assert gens[0].error and "another host" in gens[0].error and gens[0].info["transient"]
    assert not b.requests
    # 3. a redirect within the same origin is followed, with the key
    moved = {"n": 0}

    def same_origin(h, body):
        if h.path.startswith("/v1/"):
            return h.send(307, "", {"Location": "/v2/completions"})
        moved["n"] += 1
        h.send(200, completion("The answer is 7."))

    a.post = same_origin
    gens = engine.generate([[1, 2, 3]], [SamplingSpec(max_tokens=4)])
    assert gens[0].error is None and gens[0].completions[0].text == "The answer is 7."
    assert moved["n"] == 1
    assert ("POST", "/v2/completions", f"Bearer {KEY}") in a.requests


# ---------------------------------------------------------------- deadline

def test_a_dribbling_peer_is_cut_at_the_total_deadline(peers, monkeypatch):
    p = peers()
    body = completion("x" * 400).encode()

    def dribble(h, _):
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        try:
            for k in range(len(body)):  # one byte every 0.1 s: 40 s in all, each read well under timeout_s
                h.wfile.write(body[k:k + 1])
                h.wfile.flush()
                time.sleep(0.1)
        except OSError:
            pass

    p.post = dribble
    engine = engine_for(p.url, monkeypatch, timeout_s=1.5, max_retries=1)
    started = time.monotonic()
    gens = engine.generate([[1, 2]], [SamplingSpec(max_tokens=4)])
    took = time.monotonic() - started
    assert gens[0].error and "deadline of 1.5 s" in gens[0].error and gens[0].info["transient"]
    assert took < 8, f"two attempts of 1.5 s took {took:.1f} s"
    assert sum(1 for m, _, _ in p.requests if m == "POST") == 2  # both attempts were made and cut


# ---------------------------------------------------------------- malformed replies

MALFORMED = {"list": "[]", "null": "null", "string-choices": '{"choices": "abc"}',
             "number-text": '{"choices": [{"text": 5, "finish_reason": "stop"}]}',
             "message-list": '{"choices": [{"message": ["a"]}]}', "not-json": "<html>oops</html>",
             "bad-usage": '{"choices": [{"text": "a", "finish_reason": "stop"}], "usage": []}'}


def test_malformed_replies_are_per_prompt_errors(peers, monkeypatch):
    p = peers()
    kinds = list(MALFORMED)

    def answer(h, body):
        kind = kinds[body["prompt"][0]] if body["prompt"][0] < len(kinds) else None
        h.send(200, MALFORMED[kind] if kind else completion("The answer is 7."))

    p.post = answer
    engine = engine_for(p.url, monkeypatch, max_retries=0)
    prompts = [[i, 50] for i in range(len(kinds))] + [[99, 50]]
    gens = engine.generate(prompts, [SamplingSpec(max_tokens=4)] * len(prompts))
    assert len(gens) == len(prompts)
    for kind, g in zip(kinds, gens):
        assert g.error and g.info["transient"], (kind, g.error)
        assert "malformed reply" in g.error or "JSONDecodeError" in g.error, (kind, g.error)
    assert gens[-1].error is None and gens[-1].completions[0].text == "The answer is 7."


# ---------------------------------------------------------------- transient faults in the stores

class Chars(_SamplingChars):
    """One token per character (the realized traces below are written in it), with a vocabulary size."""

    def __len__(self):
        return 0x110000


def _plans(cfg):
    from thinkprobe.trajectories.checkpoints import RealizedTrace
    from thinkprobe.trajectories.sampling import trace_checkpoints

    traces = []
    for qid, prompt in (("q1", "Q: 3+4?"), ("q2", "REFUSE Q: 2+2?")):
        comp = "<think>three plus four is seven, so seven</think>The answer is 7."
        traces.append(RealizedTrace("m", "tiny", qid, "1", tuple(map(ord, prompt)), tuple(map(ord, comp)), comp,
                                    None, "gsm8k", "7"))
    return traces, [trace_checkpoints(t, Chars(), cfg, 4096) for t in traces]


def test_an_endpoint_outage_is_retried_by_the_next_run_and_a_refusal_is_stored(peers, monkeypatch, tmp_path):
    from thinkprobe.trajectories.sampling import ContinuationStore, SamplingConfig, sample_checkpoints, store_digest

    p = peers()
    state = {"down": True}

    def answer(h, body):
        if "".join(map(chr, body["prompt"])).startswith("REFUSE"):
            return h.send(400, '{"error": {"message": "this prompt is refused"}}')
        if state["down"]:
            return h.send(503, '{"error": {"message": "down for maintenance"}}')
        h.send(200, completion("The answer is 7.", n=body["n"]))

    p.post = answer
    cfg = SamplingConfig(n=2, stride=16, max_tokens=8, seed=1)
    traces, plans = _plans(cfg)
    n_cp = [len(pl.checkpoints) for pl in plans]
    assert all(n > 1 for n in n_cp) and not any(pl.excluded for pl in plans)
    engine = engine_for(p.url, monkeypatch, max_retries=1)
    store = ContinuationStore(tmp_path / "store", store_digest(cfg, engine), {t.key: t.content_hash() for t in traces})
    with pytest.raises(TransientFailures, match=f"{n_cp[0]} of {sum(n_cp)} checkpoints") as err:
        sample_checkpoints(engine, plans, cfg, store)
    assert "down for maintenance" in str(err.value)
    # the outage left nothing in the store for q1; the refusal of q2 is stored with its reason
    assert not store.parts(traces[0].key)
    refused = store.entries([traces[1].key])
    assert len(refused) == n_cp[1] and all(e["status"] == "error" and "refused" in e["reason"]
                                           for e in refused.values())
    before = {f: f.read_bytes() for f in store.parts(traces[1].key)}
    # the endpoint is back: the next run samples exactly the checkpoints of q1, and does not retry q2
    state["down"] = False
    posts = sum(1 for m, _, _ in p.requests if m == "POST")
    stats = sample_checkpoints(engine, plans, cfg, store)
    assert stats["prefixes"] == n_cp[0]
    assert sum(1 for m, _, _ in p.requests if m == "POST") - posts == n_cp[0]
    ok = store.entries([traces[0].key])
    assert len(ok) == n_cp[0] and all(e["status"] == "ok" and len(e["continuations"]) == 2 for e in ok.values())
    assert {f: f.read_bytes() for f in store.parts(traces[1].key)} == before  # nothing finished changed
    assert len(ok) + len(refused) == sum(n_cp)  # stored + stored-with-reason = every checkpoint


def test_a_malformed_reply_costs_one_unit_of_a_collect_chunk_not_the_chunk(peers, monkeypatch, tmp_path):
    from thinkprobe.generate.unit_store import store_path
    from thinkprobe.stages.collect import collect_batch
    from thinkprobe.generate.collection_jobs import list_collection_jobs

    p = peers()
    seen: list[str] = []

    def answer(h, body):
        text = body["messages"][0]["content"]
        seen.append(text)
        if len(set(seen)) == 1 and text == seen[0]:  # the first question: a reply that is a JSON list
            return h.send(200, "[]")
        h.send(200, completion("<think>Add them: 7.</think>The answer is 7.", chat=True))

    p.post = answer
    monkeypatch.setenv("THINKPROBE_HOSTILE_KEY", KEY)
    cfg = tiny_http_collection(p.url)
    params = list_collection_jobs(cfg).batch_params("m", "tiny", "c0000", cfg["collection"])
    units = params["units"]
    assert len(units) == 3
    with pytest.raises(TransientFailures, match="1 of 3 units") as err:
        collect_batch(open_engine, params, tmp_path)
    assert "malformed reply" in str(err.value)
    stored = [u for u in units if store_path(tmp_path, u["unit"]).exists()]
    assert len(stored) == 2  # the good replies of the chunk are kept
    before = {str(store_path(tmp_path, u["unit"])): store_path(tmp_path, u["unit"]).read_bytes() for u in stored}
    manifest = collect_batch(open_engine, params, tmp_path)  # the peer now answers every question well
    assert manifest["stats"]["generated"] == 1 and manifest["stats"]["already_stored"] == 2
    assert all(v["status"] == "ok" for v in manifest["units"].values())
    assert {k: open(k, "rb").read() for k in before} == before
    for f in tmp_path.rglob("*.json"):
        assert KEY not in f.read_text()


# ---------------------------------------------------------------- replies over the limits (issue 28, item 4)

HUGE = 400 * 2**20  # a 400 MB reply: the endpoint streams it, the client must stop reading at its cap

CLIENT = r"""
import json, re, sys
from thinkprobe.generate.engine import SamplingSpec, open_engine
engine = open_engine({"name": "m", "backend": "openai", "base_url": sys.argv[1], "served_model": "m",
                      "timeout_s": 60.0, "max_retries": 1, "backoff_s": 0.01})
gens = engine.generate([[1, 2], [3, 4]], [SamplingSpec(max_tokens=4)] * 2)
print(json.dumps({"errors": [g.error for g in gens], "transient": [g.info.get("transient") for g in gens],
                  "texts": [g.completions[0].text if g.completions else None for g in gens],
                  "peak_rss_mb": int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read())[1]) / 1024}))
"""


def _stream_huge(declare_length: bool):
    """A POST answer: the prompt [1, 2] gets a 400 MB JSON reply, streamed in 1 MB pieces (with its length
    declared, or chunked without one); any other prompt a normal completion. Returns the bytes it sent."""
    sent = {"bytes": 0}

    def answer(h, body):
        if body["prompt"] != [1, 2]:
            return h.send(200, completion("The answer is 7."))
        head = b'{"choices": [{"index": 0, "finish_reason": "stop", "text": "'
        piece = b"The answer is 7. " * (2**20 // 17)
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if declare_length:
            h.send_header("Content-Length", str(HUGE))
        else:
            h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            for data in [head] + [piece] * (HUGE // len(piece)):
                h.wfile.write(data if declare_length else b"%x\r\n%s\r\n" % (len(data), data))
                sent["bytes"] += len(data)
        except OSError:  # the client hung up at its cap
            pass

    return answer, sent


@pytest.mark.parametrize("declare_length", [False, True])
def test_a_400_mb_reply_is_cut_at_the_cap_with_bounded_memory(peers, declare_length):
    """Before: the whole reply was read (400 MB: 824 MB resident). Now the client reads at most
    max_reply_bytes (default 64 MiB) of it, or none when the length is declared, and that prompt alone fails;
    the client runs in its own process, so its peak resident memory is its own (Linux: /proc VmHWM)."""
    import os
    import subprocess
    import sys

    from thinkprobe.generate.defaults import HTTP_DEFAULTS

    p = peers()
    p.post, sent = _stream_huge(declare_length)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-c", CLIENT, p.url], capture_output=True, text=True, timeout=300,
                         env=env, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    cap = HTTP_DEFAULTS["max_reply_bytes"]
    assert res["errors"][0] and "reply over a limit" in res["errors"][0] and res["transient"][0]
    assert (f"announced a reply of {HUGE} bytes" if declare_length else
            f"exceeds max_reply_bytes = {cap}") in res["errors"][0]
    assert res["errors"][1] is None and res["texts"][1] == "The answer is 7."  # the other prompt is unharmed
    assert sum(1 for m, _, _ in p.requests if m == "POST") == 2  # not retried: the same request, the same reply
    # peak resident memory of the client process (VmHWM: its own, not its parent's at fork), bounded by the cap
    assert res["peak_rss_mb"] < 64 + 3 * cap / 2**20, res
    assert sent["bytes"] < HUGE / 2  # the client stopped reading; the peer could not send it all


def test_a_deeply_nested_reply_is_a_clear_error_not_a_recursion_error(peers, monkeypatch):
    deep = "[" * 100_000 + "]" * 100_000
    p = peers()
    p.get = lambda h: h.send(200, '{"object": "list", "data": ' + deep + "}")
    with pytest.raises(EngineError, match="GET /models with a reply over a limit: its JSON is nested deeper than "
                                          "max_json_depth = 64 levels"):
        engine_for(p.url, monkeypatch)
    unclosed = peers()
    unclosed.get = lambda h: h.send(200, '{"data": ' + "[" * 100_000)  # never reaches the parser's recursion
    with pytest.raises(EngineError, match="last: ValueError: unbalanced brackets: not JSON"):
        engine_for(unclosed.url, monkeypatch)
    # a completion: that prompt's error; a reply with too many objects too; the others go on
    q = peers()
    replies = {1: '{"choices": [{"index": 0, "text": "x", "finish_reason": "stop", "extra": ' + deep + "}]}",
               2: '{"choices": [{"index": 0, "text": "x", "finish_reason": "stop", "extra": ['
                  + ",".join(["{}"] * 200_000) + "]}]}"}
    q.post = lambda h, body: h.send(200, replies.get(body["prompt"][0], completion("The answer is 7.")))
    engine = engine_for(q.url, monkeypatch, max_retries=0)
    gens = engine.generate([[1], [2], [3]], [SamplingSpec(max_tokens=4)] * 3)
    assert "nested deeper than max_json_depth = 64" in gens[0].error and gens[0].info["transient"]
    assert "holds 200004 objects and arrays, more than max_json_containers = 100000" in gens[1].error
    assert gens[2].error is None and gens[2].completions[0].text == "The answer is 7."
    # the limits are the model's to set: a deeper limit lets the same reply through to the shape check
    roomy = engine_for(q.url, monkeypatch, max_retries=0, max_json_containers=300_000)
    assert roomy.generate([[2]], [SamplingSpec(max_tokens=4)])[0].error is None
