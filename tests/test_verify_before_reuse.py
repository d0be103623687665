"""Stored results are verified before reuse (issue 28, item 1).

Each test alters a stored result the way a hand or a script would, keeping it valid JSON (a checkpoint
dropped, every answer rewritten to 999, a document copied under another key), then runs what would reuse it:
the altered item is never reused, a warning names it, and it is recomputed from what is intact. The sampling
job runs for real against an OpenAI-compatible server on loopback that counts the requests
(:mod:`tests.test_sampling_keys`), so what was sampled again shows in the requests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thinkprobe import integrity

from .test_sampling_keys import Endpoint, run, write_traces


@pytest.fixture()
def endpoint(tok):
    e = Endpoint(tok)
    yield e
    e.peer.close()


from .test_sampling_keys import tok  # noqa: E402,F401 - the module's tokenizer fixture


def _finished(tmp_path: Path, qid: str) -> Path:
    (path,) = (tmp_path / "store/m/qs" / qid / "1").glob("finished-*.json")
    return path


def _documents(tmp_path: Path, out: str = "b0000.json") -> dict:
    return {d["unit"]["question_id"]: d for d in json.loads((tmp_path / "out" / out).read_text())["documents"]}


@pytest.mark.slow
def test_an_altered_finished_document_is_not_reused_but_assembled_again(endpoint, tmp_path, tok):
    """The issue's case: a finished-<key>.json rebuilt with a checkpoint dropped and every answer 999, still
    valid JSON (today it was reused as it is). Now: a warning naming it, the file moved aside, and the trace's
    document assembled again from the store's parts: identical to the original, nothing sampled again."""
    traces = write_traces(tmp_path, tok)
    model = endpoint.model(max_model_len=2048)
    run(endpoint, tmp_path, traces, model)
    original = _documents(tmp_path)
    path = _finished(tmp_path, "q1")
    doc = json.loads(path.read_text())
    cps = doc["document"]["checkpoints"]
    assert len(cps) > 2
    del cps[1]
    for cp in cps:
        for c in cp["continuations"]:
            c["text"] = "The answer is 999."
    path.write_text(json.dumps(doc))  # valid JSON, the old digest block kept
    stats, posts, log = run(endpoint, tmp_path, traces, model, out="again.json")
    assert f"WARNING: {path}: its content does not match its digest: it was altered after it was written; not " \
           "reused" in log and "assembled again from the store's parts" in log
    assert stats["documents_reused"] == 1 and posts == 0  # q2 reused; q1 from its parts, nothing sampled
    again = _documents(tmp_path, "again.json")
    assert again["q1"]["checkpoints"] == original["q1"]["checkpoints"]
    assert "The answer is 999." not in json.dumps(again)
    assert list(path.parent.glob(path.name + ".altered-*"))  # kept, aside; a sound document in its place
    assert integrity.problem(json.loads(path.read_text()), json.loads(path.read_text())["key"]) is None
    stats, posts, log = run(endpoint, tmp_path, traces, model, out="third.json")
    assert stats["documents_reused"] == 2 and "WARNING" not in log


@pytest.mark.slow
def test_a_finished_document_copied_under_another_key_is_not_reused(endpoint, tmp_path, tok):
    """q2's document, copied over q1's file with its key field rewritten to q1's: the key digest differs."""
    traces = write_traces(tmp_path, tok)
    model = endpoint.model(max_model_len=2048)
    run(endpoint, tmp_path, traces, model)
    q1, q2 = _finished(tmp_path, "q1"), _finished(tmp_path, "q2")
    doc = json.loads(q2.read_text())
    doc["key"] = json.loads(q1.read_text())["key"]
    q1.write_text(json.dumps(doc))
    stats, posts, log = run(endpoint, tmp_path, traces, model, out="again.json")
    assert "its key does not match: it was stored under another key" in log
    assert stats["documents_reused"] == 1 and posts == 0
    assert _documents(tmp_path, "again.json")["q1"]["unit"]["question_id"] == "q1"


@pytest.mark.slow
def test_an_altered_part_is_sampled_again_and_the_intact_parts_are_reused(endpoint, tmp_path, tok):
    """A part of the continuation store with its answers rewritten: its checkpoints alone are sampled again."""
    traces = write_traces(tmp_path, tok)
    model = endpoint.model(max_model_len=2048)
    traj = {**__import__("tests.test_sampling_keys", fromlist=["TRAJ"]).TRAJ, "prefixes_per_call": 2}
    run(endpoint, tmp_path, traces, model, traj)
    parts = sorted((tmp_path / "store/m/qs/q1/1").glob("*/part-*.json"))
    assert len(parts) > 1
    total = sum(len(json.loads(p.read_text())["entries"]) for p in parts)
    total += sum(len(json.loads(p.read_text())["entries"])
                 for p in (tmp_path / "store/m/qs/q2/1").glob("*/part-*.json"))
    altered = json.loads(parts[0].read_text())
    for e in altered["entries"]:
        for c in e["continuations"]:
            c["text"] = "The answer is 999."
    parts[0].write_text(json.dumps(altered))
    for f in (tmp_path / "store").rglob("finished-*.json"):
        f.unlink()  # the finished documents gone: the parts are what a rerun reads
    stats, posts, log = run(endpoint, tmp_path, traces, model, traj, out="again.json")
    assert f"WARNING: {parts[0]}: its content does not match its digest" in log
    assert "its checkpoints are sampled again (the other parts are intact)" in log
    assert stats["checkpoints_reused"] == total - len(altered["entries"])
    assert stats["prefixes"] == len(altered["entries"]) and posts == len(altered["entries"])
    assert "The answer is 999." not in (tmp_path / "out/again.json").read_text()
    assert list(parts[0].parent.glob(parts[0].name + ".altered-*"))


@pytest.mark.fast
def test_altered_unit_and_batch_files_are_never_used(tmp_path, capsys):
    """Unit files (what segment, graph, metrics and the tables read) and batch files carry their digests: an
    altered one is excluded (or its job stops) with a warning naming it; a unit file is marked out of date
    for the next run to recompute (it stays, for the other jobs of the run that list it), a batch is moved
    aside; a file copied to another unit's place does not verify either."""
    from thinkprobe.stages.tables import aggregate
    from thinkprobe.stages.unitfiles import (UnitFileError, load_embeddings, read_unit, save_embeddings, unit_doc,
                                             write_unit)
    from thinkprobe.stages.trajectories import BatchFileError, read_batch, write_batch

    import numpy as np
    import pandas as pd

    from thinkprobe.metrics import METRIC_NAMES

    def metrics_file(qid: str) -> Path:
        unit = {"model": "m", "question_set": "qs", "question_id": qid, "run": "1"}
        path = tmp_path / "results/metrics/m/qs" / qid / "1.json"
        write_unit(path, unit_doc(unit, "ok", {}, trace_id=f"m/qs/{qid}/1", ids=unit,
                                  metrics={m: 0.5 for m in METRIC_NAMES}))
        return path

    a, b = metrics_file("a"), metrics_file("b")
    assert read_unit(a)["metrics"]["AT"] == 0.5 and integrity.FIELD not in read_unit(a)
    doc = json.loads(a.read_text())
    doc["metrics"]["AT"] = 999.0
    a.write_text(json.dumps(doc))
    n_ok, n_excluded = aggregate([str(a), str(b)], [], str(tmp_path / "m.parquet"), str(tmp_path / "e.parquet"))
    assert (n_ok, n_excluded) == (1, 1)
    ex = pd.read_parquet(tmp_path / "e.parquet")
    assert ex["trace_id"].tolist() == ["m/qs/a/1"] and "altered after it was written" in ex["reason"][0]
    assert 999.0 not in pd.read_parquet(tmp_path / "m.parquet")["AT"].tolist()
    err = capsys.readouterr().err
    assert f"WARNING: {a}: its content does not match its digest" in err and "the next run recomputes" in err
    assert a.stat().st_mtime < 10 < b.stat().st_mtime  # out of date: older than any input, so rerun

    # copied to another unit's place: its key does not verify
    c = tmp_path / "results/metrics/m/qs/c/1.json"
    c.parent.mkdir(parents=True)
    c.write_bytes(b.read_bytes())
    with pytest.raises(UnitFileError, match="its key does not match"):
        read_unit(c)
    assert c.stat().st_mtime > 10  # a reader outside the workflow marks nothing
    # a unit file without a digest (its block deleted, or null) is refused like an altered one (issue 37)
    c.write_text(json.dumps(integrity.unsealed(json.loads(b.read_text()))))
    with pytest.raises(UnitFileError, match="carries no digest"):
        read_unit(c)
    c.write_text(json.dumps({**integrity.unsealed(json.loads(b.read_text())), integrity.FIELD: None}))
    with pytest.raises(UnitFileError, match="carries no digest"):
        read_unit(c)

    emb = tmp_path / "results/embeddings/m/qs/a/1.npz"
    save_embeddings(emb, np.ones((3, 4)))
    assert load_embeddings(emb).shape == (3, 4)
    with np.load(emb) as data:
        arrays = dict(data)
    arrays["tu"] = arrays["tu"] * 2
    np.savez(emb, **arrays)
    with pytest.raises(UnitFileError, match="altered after it was written"):
        load_embeddings(emb)

    batch = tmp_path / "results/continuations/m/qs/b0000.json"
    write_batch(batch, {"documents": [{"unit": {"question_id": "a"}, "checkpoints": [1, 2]}]})
    assert read_batch(batch)["documents"][0]["checkpoints"] == [1, 2]
    doc = json.loads(batch.read_text())
    doc["documents"][0]["checkpoints"] = [1]
    batch.write_text(json.dumps(doc))
    with pytest.raises(BatchFileError, match="not reused .moved to b0000.json.altered-"):
        read_batch(batch)
    assert not batch.exists()
    # a batch without its digest (the block deleted) is refused like an altered one (issue 37, item 4)
    write_batch(batch, {"documents": [{"unit": {"question_id": "a"}, "checkpoints": [1, 2]}]})
    batch.write_text(json.dumps(integrity.unsealed(json.loads(batch.read_text()))))
    with pytest.raises(BatchFileError, match="carries no digest"):
        read_batch(batch)
    assert not batch.exists()


@pytest.mark.fast
def test_an_altered_collected_unit_is_never_reused(tmp_path):
    """The collection store's units are sealed too. A stored unit rewritten by hand (valid JSON, its digest
    kept) is moved aside with a warning and generated again when no trace file was written from it; when its
    trace file exists (the sample the analysis used), the job stops naming both files instead of generating a
    different sample behind the analysis. The collection job runs for real against an OpenAI-compatible
    server on loopback that counts the requests."""
    import io

    from thinkprobe.generate.unit_store import StaleUnits, store_path
    from thinkprobe.stages.collect import collect_batch
    from thinkprobe.generate.engine import open_engine
    from thinkprobe.generate.collection_jobs import list_collection_jobs

    from .test_hostile_peers import Peer, completion

    peer = Peer()
    asked = []

    def answer(h, body):
        asked.append(body)
        h.send(200, completion("<think>Add them: 3 and 4 make 7.</think>The answer is 7.", chat=True))

    peer.post = answer
    try:
        cfg = {"models": {"m": {"backend": "openai", "base_url": peer.url, "served_model": "m", "timeout_s": 10,
                                "max_retries": 0, "backoff_s": 0.01}},
               "question_sets": {"tiny": {"source": "builtin", "limit": 2}},
               "collection": {"jobs": [{"model": "m", "question_set": "tiny", "prompt_variant": "plain"}],
                              "runs": 1, "seed": 0, "batch_questions": 10, "chunk_prompts": 8,
                              "sampling": {"max_tokens": 24, "temperature": 0.6},
                              "loop_detection": {"window": 3, "min_repeats": 3, "min_line_chars": 8,
                                                 "max_retries": 0}}}
        params = list_collection_jobs(cfg).batch_params("m", "tiny", "c0000", cfg["collection"])
        store = tmp_path / "store"
        collect_batch(open_engine, params, store)
        assert len(asked) == 2
        first, second = (store_path(store, u["unit"]) for u in params["units"])
        doc = json.loads(first.read_text())
        assert integrity.FIELD in doc and doc["status"] == "ok"
        doc["reasoning"] = "The answer is 999."  # rewritten by hand, still valid JSON, the old digest kept
        first.chmod(0o644)
        first.write_text(json.dumps(doc))
        log = io.StringIO()
        manifest = collect_batch(open_engine, params, store, log=log)
        assert f"WARNING: {first}: its content does not match its digest" in log.getvalue()
        assert "the unit is generated again" in log.getvalue()
        assert manifest["stats"]["generated"] == 1 and manifest["stats"]["already_stored"] == 1 and len(asked) == 3
        assert "The answer is 999." not in first.read_text() and list(first.parent.glob(first.name + ".altered-*"))

        # a unit whose trace file was written from it: the job stops, naming both, generates nothing
        traces = tmp_path / "traces"
        collect_batch(open_engine, params, store, traces=str(traces))
        (trace,) = [p for p in traces.rglob("*.json") if p.parent.name == second.parent.name]
        doc = json.loads(second.read_text())
        doc["answer"] = "999"
        second.chmod(0o644)
        second.write_text(json.dumps(doc))
        with pytest.raises(StaleUnits, match="Move each trace file aside") as err:
            collect_batch(open_engine, params, store, traces=str(traces), log=io.StringIO())
        assert str(second) in str(err.value) and str(trace) in str(err.value)
        assert len(asked) == 3 and not second.exists() and list(second.parent.glob(second.name + ".altered-*"))
        assert trace.exists()  # the analysed sample stays where it is
    finally:
        peer.close()


@pytest.mark.fast
def test_a_page_never_shows_an_altered_unit_file(tmp_path):
    """Trace pages (`thinkprobe show`, rule trace_pages) read the graph and metrics unit files verified: an
    altered one is an error naming the file, never a page of what was written into it."""
    from thinkprobe.stages.unitfiles import unit_doc, write_unit
    from thinkprobe.stages.page_sources import ShowError, page_from_results

    unit = {"model": "m", "question_set": "qs", "question_id": "q1", "run": "1"}
    graph = tmp_path / "results/graphs/m/qs/q1/1.json"
    write_unit(graph, unit_doc(unit, "excluded", {}, "too short", "segment", trace_id="m/qs/q1/1", ids=unit))
    assert page_from_results(tmp_path / "results", "m/qs/q1/1").reason == "too short"
    doc = json.loads(graph.read_text())
    doc["reason"] = "<b>edited</b>"
    graph.write_text(json.dumps(doc))
    with pytest.raises(ShowError, match=f"{graph}: its content does not match its digest"):
        page_from_results(tmp_path / "results", "m/qs/q1/1")
