"""Reliability, fourth round (issue 37): each test reproduces one attack as the issue describes it and asserts
the time, memory or outcome. Replies come from real HTTP servers on loopback (tests/test_hostile_peers.py's
``Peer``) answering the real :class:`~thinkprobe.generate.http_engine.HttpEngine`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from thinkprobe.config import ConfigError, load_schema, validate_config
from thinkprobe.generate.engine import EngineError, SamplingSpec, open_engine
from thinkprobe.generate.http_engine import json_shape

from .test_hostile_peers import KEY, completion, engine_for, peers, tiny_http_collection  # noqa: F401 - the fixture
from .workflow_helpers import REPO, default_config

pytestmark = pytest.mark.fast

ESCAPED_QUOTES = 1 << 20  # an unterminated string of 1 MB of \" : about 50 minutes before the fix


# ---------------------------------------------------------------- item 1: checks linear, inside the deadline

def test_an_unterminated_string_of_escaped_quotes_is_checked_in_linear_time():
    """Before: 8 KB 0.19 s, 64 KB 11.7 s (quadratic). Now 1 MB and 16 MB take a few milliseconds to a second,
    and 16 times the input costs at most ~16 times the time (plus noise under load)."""
    times = {}
    for size in (1 << 20, 16 << 20):
        payload = b'{"choices": [{"text": "' + b'\\"' * (size // 2)
        t0 = time.perf_counter()
        with pytest.raises(ValueError, match="unbalanced brackets"):
            json_shape(payload, 64)
        times[size] = time.perf_counter() - t0
    assert times[1 << 20] < 1.0, times
    assert times[16 << 20] < 8.0, times
    # a string that ends in a lone backslash, and strings that hold brackets, still read right
    assert json_shape(b'["a\\\\", "[[", {"b": "]\\"]"}]', 64) == (2, 2)


def test_a_hostile_reply_at_open_and_to_a_prompt_ends_within_the_deadline(peers, monkeypatch):  # noqa: F811
    hostile = '{"data": [{"id": "m", "x": "' + '\\"' * (ESCAPED_QUOTES // 2)
    p = peers()
    p.get = lambda h: h.send(200, hostile)
    t0 = time.perf_counter()
    with pytest.raises(EngineError, match="GET /models"):
        engine_for(p.url, monkeypatch, max_retries=0)
    assert time.perf_counter() - t0 < 5.0
    q = peers()
    q.post = lambda h, body: h.send(200, hostile if body["prompt"][0] == 1 else completion("The answer is 7."))
    engine = engine_for(q.url, monkeypatch, max_retries=0)
    t0 = time.perf_counter()
    gens = engine.generate([[1], [2]], [SamplingSpec(max_tokens=4)] * 2)
    assert time.perf_counter() - t0 < 5.0
    assert gens[0].error and gens[0].info["transient"]
    assert gens[1].error is None and gens[1].completions[0].text == "The answer is 7."


ERROR_CLIENT = r"""
import json, re, sys
from thinkprobe.generate.engine import SamplingSpec, open_engine
engine = open_engine({"name": "m", "backend": "openai", "base_url": sys.argv[1], "served_model": "m",
                      "timeout_s": 60.0, "max_retries": 0})
g = engine.generate([[1]], [SamplingSpec(max_tokens=4)])[0]
print(json.dumps({"error": g.error,
                  "peak_rss_mb": int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read())[1]) / 1024}))
"""


def test_an_error_reply_is_read_under_the_reply_limits(peers):  # noqa: F811
    """Before: a 500 whose body is 60 MB of [{},{},...] was parsed whole, 1.5 GB per request. Now the body is
    checked like a reply (max_json_containers) and quoted as text: the client stays near its own size."""
    body = ("[" + ",".join(["{}"] * (10 * 2**20)) + "]").encode()  # 30 MB, 10.5 million objects
    p = peers()
    p.post = lambda h, _: h.send(400, body)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-c", ERROR_CLIENT, p.url], capture_output=True, text=True,
                         timeout=120, env=env, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["error"].startswith("request refused: HTTP 400: [{},{}")
    assert len(res["error"]) < 400
    assert res["peak_rss_mb"] < 64 + 3 * 30, res  # the body itself, a copy, the interpreter; never its objects


@pytest.mark.parametrize("key, value", [("max_retries", 10**9), ("timeout_s", 1e12), ("max_reply_bytes", 10**15),
                                        ("concurrency", 10**6), ("backoff_s", 1e9),
                                        ("max_json_containers", 10**12), ("max_json_depth", 10**6)])
def test_every_http_limit_has_a_maximum(key, value):
    cfg = default_config()
    model = next(iter(cfg["models"]))
    cfg["models"][model].update({"backend": "openai", "base_url": "http://127.0.0.1:1/v1", key: value})
    with pytest.raises(ConfigError, match=key):
        validate_config(cfg, load_schema(REPO / "config" / "schema.yaml"))


# ---------------------------------------------------------------- item 2: one bad reply costs one unit

def test_a_lone_surrogate_in_a_reply_excludes_that_unit_and_the_job_completes(peers, monkeypatch, tmp_path):  # noqa: F811
    """Before: the reply was accepted, writing the unit raised UnicodeEncodeError and the whole job ended (and
    every seeded rerun the same way). Now that unit is excluded naming the character; the others are stored."""
    from thinkprobe.generate.collection_jobs import list_collection_jobs
    from thinkprobe.generate.unit_store import store_path
    from thinkprobe.stages.collect import collect_batch

    p = peers()
    seen: list[str] = []

    def answer(h, body):
        text = body["messages"][0]["content"]
        seen.append(text)
        bad = text == seen[0]  # the first question's reply carries a lone surrogate, as JSON allows
        content = "<think>Add them: 7.\\ud800</think>The answer is 7." if bad else "<think>Add: 7.</think>7."
        h.send(200, json.dumps({"choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": "@@"}}],
                                "usage": {"prompt_tokens": 3, "completion_tokens": 4}}).replace("@@", content))

    p.post = answer
    monkeypatch.setenv("THINKPROBE_HOSTILE_KEY", KEY)
    cfg = tiny_http_collection(p.url)
    params = list_collection_jobs(cfg).batch_params("m", "tiny", "c0000", cfg["collection"])
    manifest = collect_batch(open_engine, params, tmp_path)  # no exception: the job completes
    statuses = sorted(v["status"] for v in manifest["units"].values())
    assert statuses == ["excluded", "ok", "ok"], manifest["units"]
    docs = [json.loads(store_path(tmp_path, u["unit"]).read_text(encoding="utf-8")) for u in params["units"]]
    bad = [d for d in docs if d["status"] == "excluded"]
    assert len(bad) == 1 and "lone surrogate U+D800" in bad[0]["reason"], bad
    assert "cannot be stored" in bad[0]["reason"]


# ---------------------------------------------------------------- item 3: a digest is required

def test_a_stored_unit_without_its_digest_is_refused_and_generated_again(peers, monkeypatch, tmp_path):  # noqa: F811
    """Before: a stored unit whose integrity block was deleted (or set to null) was reused as it was, so an
    altered reasoning and answer went into the store's output. Now it is moved aside and generated again; a
    store written before digests passes only through ``thinkprobe migrate``, which records it."""
    import io

    from thinkprobe import integrity
    from thinkprobe.cli import main
    from thinkprobe.generate.collection_jobs import list_collection_jobs
    from thinkprobe.generate.unit_store import store_path, verified_store
    from thinkprobe.stages.collect import collect_batch

    p = peers()
    asked = []

    def answer(h, body):
        asked.append(body)
        h.send(200, completion("<think>Add them: 3 and 4 make 7.</think>The answer is 7.", chat=True))

    p.post = answer
    cfg = {"models": {"m": {"backend": "openai", "base_url": p.url, "served_model": "m", "timeout_s": 10,
                            "max_retries": 0, "backoff_s": 0.01}},
           "question_sets": {"tiny": {"source": "builtin", "limit": 2}},
           "collection": {"jobs": [{"model": "m", "question_set": "tiny", "prompt_variant": "plain"}],
                          "runs": 1, "seed": 0, "batch_questions": 10, "chunk_prompts": 8,
                          "sampling": {"max_tokens": 24, "temperature": 0.6},
                          "loop_detection": {"window": 3, "min_repeats": 3, "min_line_chars": 8, "max_retries": 0}}}
    params = list_collection_jobs(cfg).batch_params("m", "tiny", "c0000", cfg["collection"])
    store = tmp_path / "results/collect/m/tiny/units"
    collect_batch(open_engine, params, store)
    first, second = (store_path(store, u["unit"]) for u in params["units"])
    for path, block in ((first, "deleted"), (second, None)):
        doc = integrity.unsealed(json.loads(path.read_text()))
        doc.update(reasoning="The answer is 999.", answer="999")
        if block is None:
            doc[integrity.FIELD] = None
        path.chmod(0o644)
        path.write_text(json.dumps(doc))
    log = io.StringIO()
    assert verified_store(params["units"], store, None, log) == {}
    assert log.getvalue().count("carries no digest") == 2
    manifest = collect_batch(open_engine, params, store, log=io.StringIO())
    assert manifest["stats"]["generated"] == 2 and len(asked) == 4
    assert all(json.loads(f.read_text())["answer"] != "999" for f in (first, second))

    # a store written before digests: refused until the explicit migration seals it, and records it
    legacy = integrity.unsealed(json.loads(first.read_text()))
    first.chmod(0o644)
    first.write_text(json.dumps(legacy))
    first.chmod(0o444)
    assert main(["migrate", str(tmp_path / "results")]) == 0
    (record,) = (tmp_path / "results/migrations").glob("digests-*.json")
    assert json.loads(record.read_text())["sealed"] == [str(first)]
    assert first.stat().st_mode & 0o222 == 0  # still read-only
    assert len(verified_store(params["units"], store, None, io.StringIO())) == 2
    collect_batch(open_engine, params, store)
    assert len(asked) == 4  # nothing generated again


# ---------------------------------------------------------------- item 6: reads bounded

def test_a_unit_file_linked_to_dev_zero_or_nested_deeply_is_refused_cleanly(tmp_path, capsys):
    """Before: a unit file symlinked to /dev/zero was read for ever, and a graph file nested 200,000 levels
    ended `thinkprobe show` in a bare RecursionError. Now both are refused at once, naming the file."""
    from thinkprobe.cli import main
    from thinkprobe.stages.unitfiles import UnitFileError, read_unit

    zero = tmp_path / "results/graphs/m/qs/q1/1.json"
    zero.parent.mkdir(parents=True)
    zero.symlink_to("/dev/zero")
    t0 = time.perf_counter()
    with pytest.raises(UnitFileError, match="not a regular file"):
        read_unit(zero)
    assert time.perf_counter() - t0 < 1.0
    zero.unlink()
    zero.write_text('{"unit": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert main(["show", "m/qs/q1/1", "--results", str(tmp_path / "results"),
                 "--out", str(tmp_path / "page.html")]) == 2
    err = capsys.readouterr().err
    assert "nested deeper than 256 levels" in err and str(zero) in err and "RecursionError" not in err


# ---------------------------------------------------------------- item 5: configs bounded before they are walked

BOMB = "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + BOMB  # 387 million values


def test_a_yaml_alias_bomb_is_refused_by_plan_and_analyze_at_once(tmp_path):
    """Before: ``thinkprobe plan`` grew to 6.2 GB in 90 s. Now the alias is refused naming file and line,
    in the time it takes to start (the child's peak memory is its interpreter's)."""
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB)
    for args in (["plan", "--configfile", str(bomb)], ["analyze", "--config", str(bomb), str(REPO / "README.md"),
                                                        "--out", str(tmp_path / "o")]):
        t0 = time.perf_counter()
        proc = subprocess.run(["bash", "-c", 'ulimit -v 3000000; exec "$@"', "_", sys.executable, "-m",
                               "thinkprobe.cli", *args], capture_output=True, text=True, timeout=120, cwd=REPO)
        assert proc.returncode == 2, proc.stderr
        assert f"{bomb}: line 2: a YAML alias (*a) is refused" in proc.stderr, proc.stderr
        assert time.perf_counter() - t0 < 30


def test_a_config_holding_shared_nodes_is_refused_before_it_is_walked():
    """What Snakemake loaded itself (aliases become shared objects): counted before validation walks it."""
    level: list = ["lol"] * 9
    for _ in range(8):
        level = [level] * 9
    cfg = default_config()
    cfg["bomb"] = level
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="more than 1,000,000 values .repeated YAML aliases.*not walked"):
        validate_config(cfg, load_schema(REPO / "config" / "schema.yaml"))
    assert time.perf_counter() - t0 < 10


def test_ids_equal_after_unicode_normalisation_are_one_id_and_the_second_is_refused_naming_both(tmp_path):
    """Before: "Modèle" written precomposed (NFC) and with a combining accent (NFD) became two models that
    printed identically. Now ids are normalised to NFC: the second record is the same unit, refused naming
    both sources; a config naming both spellings as keys is refused naming both."""
    from thinkprobe.config import nfc_ids
    from thinkprobe.units import discover

    nfc, nfd = "Mod\u00e8le", "Mode\u0300le"
    src = tmp_path / "t.jsonl"
    src.write_text("\n".join(json.dumps({"id": i, "model": m, "question_id": "q", "run": 1,
                                          "text": "<think>x y z.</think>"}) for i, m in (("a", nfc), ("b", nfd))) + "\n")
    found = discover([{"path": str(src), "question_set": "s"}])
    assert len(found.records) == 1 and len(found.found_models) == 1
    (problem,) = found.problems
    assert problem.reason.startswith("duplicate unit") and f"already taken from {src}:1" in problem.reason
    assert problem.source == f"{src}:2"
    assert dict(next(iter(found.records.values())).ids)["model"] == nfc
    assert nfc_ids({"inputs": [{"model": nfd}]})[0] == {"inputs": [{"model": nfc}]}
    assert "are the same id once normalised" in nfc_ids({"question_sets": {nfc: {}, nfd: {}}})[1][0]


@pytest.mark.parametrize("value", ["main\n", "x\n"])
def test_schema_patterns_match_the_whole_value(value):
    """``$`` matched before a final newline: ``revision: "x\\n"`` passed. Every pattern now ends in ``\\Z``."""
    cfg = default_config()
    name = next(iter(cfg["models"]))
    cfg["models"][name].update({"hub_id": "org/name", "revision": value})
    with pytest.raises(ConfigError, match="revision"):
        validate_config(cfg, load_schema(REPO / "config" / "schema.yaml"))
    schema = load_schema(REPO / "config" / "schema.yaml")
    stack, patterns = [schema], []
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            patterns += [v for k, v in node.items() if k == "pattern"]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    assert patterns and all(p.endswith("\\Z") for p in patterns), [p for p in patterns if not p.endswith("\\Z")]


JSONL_CLIENT = r"""
import json, re, sys
from thinkprobe.traces import iter_records
items = list(iter_records(sys.argv[1]))
print(json.dumps({"items": [[type(i).__name__, getattr(i, "reason", None)] for i in items],
                  "peak_rss_mb": int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read())[1]) / 1024}))
"""


def test_a_100_mb_jsonl_line_is_excluded_before_it_is_copied_or_parsed(tmp_path):
    """Before: a 100 MB JSONL line was excluded correctly but after 550 MB of memory. Now a line over
    input.max_trace_bytes is excluded by its length, never copied out of the file's bytes or parsed."""
    src = tmp_path / "big.jsonl"
    good = json.dumps({"id": "ok", "model": "m", "text": "<think>x y z.</think>"}).encode()
    with open(src, "wb") as fh:
        fh.write(good + b"\n" + b'{"id": "huge", "text": "' + b"word " * (20 * 2**20) + b'"}\n' + good + b"\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-c", JSONL_CLIENT, str(src)], capture_output=True, text=True,
                         timeout=120, env=env, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    kinds = [k for k, _ in res["items"]]
    assert kinds == ["RawRecord", "Exclusion", "RawRecord"], res
    assert res["items"][1][1].startswith("too large: a line of 104,857,626 bytes"), res
    assert res["peak_rss_mb"] < 100 + 120, res  # the file's bytes and the interpreter; no copy of the line
