"""The forced-answer cue belongs to the task, and a batch's identity holds only its own task's cue.

Each task file declares its default cue (``Task.answer_cue``); ``trajectories.forced.answer_cues`` overrides it
per task. A batch's settings (its sampling job's param, its identity, its store digest, its documents) hold the
cue of the batch's own task, and only under the forced estimator: editing the math cue resamples no ARC batch,
and no cue resamples a batch of the full-continuation estimator. The generic ``choice`` task has ARC's cue, so a
forced run on a lettered set plans and samples without extra config.
"""

from __future__ import annotations

import copy
import json

import pytest

from thinkprobe import tasks
from thinkprobe.config import load_schema, validate_config
from thinkprobe.trajectories.batches import TrajectoryJobs, batch_identity
from thinkprobe.trajectories.checkpoints import RealizedTrace
from thinkprobe.trajectories.labelling import continuation_label, label_document
from thinkprobe.trajectories.sampling import SamplingConfig, trace_checkpoints, store_digest

from .test_trajectory_sampling import Chars  # one id per character: enough to plan checkpoints
from .workflow_helpers import REPO, default_config

pytestmark = pytest.mark.fast

QSETS = ("gsm8k_demo", "arc_set", "choice_set")


def _lettered(path, prefix: str) -> str:
    rows = [{"id": f"{prefix}{i}", "question": {"stem": f"Which is item {i}?", "choices": [
        {"label": k, "text": f"option {k}"} for k in "ABCD"]}, "answerKey": "B"} for i in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture(scope="module")
def base_config(tmp_path_factory):
    """The embedded default with an ARC-format set and a generic lettered set beside GSM8K, all three sampled."""
    folder = tmp_path_factory.mktemp("sets")
    cfg = default_config()
    cfg["question_sets"]["arc_set"] = {"source": "arc", "path": _lettered(folder / "arc.jsonl", "a")}
    cfg["question_sets"]["choice_set"] = {"source": "choice", "path": _lettered(folder / "choice.jsonl", "c")}
    cfg["trajectories"]["question_sets"] = list(QSETS)
    return cfg


def _jobs(cfg: dict, estimator: str, cues: dict[str, str]) -> TrajectoryJobs:
    cfg = copy.deepcopy(cfg)
    cfg["trajectories"]["estimator"] = estimator
    cfg["trajectories"]["forced"] = {"max_tokens": 16, "answer_cues": cues}
    return TrajectoryJobs(validate_config(cfg, load_schema(REPO / "config" / "schema.yaml")), base=REPO)


def _identities(jobs: TrajectoryJobs) -> dict[str, dict]:
    """Each question set's batch identity, as planning and the sampling job build it (from the job's param)."""
    return {q: batch_identity(jobs.sampling("b0000", q), jobs.models["smollm2"]) for q in QSETS}


def _settings(jobs: TrajectoryJobs, qset: str) -> dict:
    return jobs.sampling_config("b0000", qset).as_dict()


def test_a_forced_batch_is_keyed_by_its_own_tasks_cue_only(base_config):
    jobs = _jobs(base_config, "forced", {})
    before = _identities(jobs)
    assert _settings(jobs, "arc_set")["answer_cue"] == tasks.get("arc").answer_cue
    assert _settings(jobs, "gsm8k_demo")["answer_cue"] == tasks.get("gsm8k").answer_cue
    assert "answer_cues" not in _settings(jobs, "arc_set")  # no other task's cue
    # its own task's cue edited: that batch's identity (and so its store digest) changes, no other batch's
    edited = _jobs(base_config, "forced", {"arc": "\nSo the option is ("})
    arc_edit = _identities(edited)
    assert arc_edit["arc_set"] != before["arc_set"]
    assert _settings(edited, "arc_set")["answer_cue"] == "\nSo the option is ("
    assert arc_edit["gsm8k_demo"] == before["gsm8k_demo"] and arc_edit["choice_set"] == before["choice_set"]
    # another task's cue edited (one with no batch here, and one with): nothing else changes
    other = _identities(_jobs(base_config, "forced", {"math": "\nThus $\\boxed{", "gsm8k": "\nSo: "}))
    assert other["arc_set"] == before["arc_set"] and other["choice_set"] == before["choice_set"]
    assert other["gsm8k_demo"] != before["gsm8k_demo"]
    # the sampling job's param holds its own task's override only
    param = _jobs(base_config, "forced", {"math": "\nThus $\\boxed{", "arc": "\nSo ("}).sampling("b0000", "arc_set")
    assert param["task"] == "arc" and param["forced"]["answer_cues"] == {"arc": "\nSo ("}
    assert _jobs(base_config, "forced", {"math": "x"}).sampling("b0000", "arc_set")["forced"] == {"max_tokens": 16}


def test_no_cue_keys_a_batch_of_the_full_estimator(base_config):
    jobs = _jobs(base_config, "full", {})
    before = _identities(jobs)
    for qset in QSETS:
        assert not {"answer_cue", "answer_cues"} & set(_settings(jobs, qset))
    edited = _identities(_jobs(base_config, "full", {"arc": "\nSo (", "gsm8k": "\nSo: ", "math": "\nThus "}))
    assert edited == before
    param = _jobs(base_config, "full", {"arc": "\nSo ("}).sampling("b0000", "arc_set")
    assert "answer_cues" not in param["forced"]  # the job's param does not change either: Snakemake reruns nothing


def test_the_store_digest_follows_the_identity():
    class Engine:
        model, backend, max_model_len = "m", "vllm", 2048

    arc = SamplingConfig(estimator="forced", task="arc")
    assert store_digest(arc, Engine()) != store_digest(SamplingConfig(estimator="forced", task="arc",
                                                                      answer_cue="\nSo ("), Engine())
    assert store_digest(SamplingConfig(task="arc"), Engine()) == store_digest(
        SamplingConfig(task="arc", answer_cue="\nSo ("), Engine()) == store_digest(SamplingConfig(), Engine())


def test_every_discrete_task_but_none_other_has_a_default_cue():
    assert set(tasks.answer_cues()) == set(tasks.answer_names())
    assert tasks.get("choice").answer_cue == tasks.get("arc").answer_cue == "\nTherefore, the answer is ("
    assert tasks.get("open").answer_cue is None


def test_a_forced_run_on_a_choice_set_plans_without_extra_config(base_config):
    jobs = _jobs(base_config, "forced", {})
    cfg = jobs.sampling_config("b0000", "choice_set")
    assert (cfg.task, cfg.answer_cue) == ("choice", "\nTherefore, the answer is (")
    tok = Chars()
    trace = RealizedTrace("smollm2", "choice_set", "choice-c0", "1", tuple(tok.encode("Q: which?")),
                          tuple(tok.encode("Option B fits, so the answer is B.")), None, None, "choice", "B")
    plan = trace_checkpoints(trace, tok, cfg, 4096)
    assert plan.excluded is None and plan.checkpoints
    assert tok.decode(plan.prompts[0]).endswith("Therefore, the answer is (")
    # its continuations are labelled with that cue, from the document's own settings
    cont = {"text": "B) option B", "finish_reason": "stop", "stop": "eos"}
    assert continuation_label(cont, "choice", cfg, native=False, choices=[["A", "a"], ["B", "b"]]) == "B"


def test_a_batch_of_a_task_without_a_cue_excludes_its_traces_naming_the_task():
    tok = Chars()
    cfg = SamplingConfig(estimator="forced", task="open")
    trace = RealizedTrace("m", "o", "q", "1", (1,), tuple(tok.encode("abc")), None, None, "open", None)
    assert trace_checkpoints(trace, tok, cfg, 4096).excluded.startswith("no answer cue for task 'open'")
    wrong = SamplingConfig(estimator="forced", task="arc")
    other = RealizedTrace("m", "g", "q", "1", (1,), tuple(tok.encode("abc")), None, None, "gsm8k", "1")
    assert "a question of task 'gsm8k' in a batch of task 'arc'" in trace_checkpoints(other, tok, wrong, 4096).excluded


def test_labels_read_the_cue_the_document_was_sampled_with():
    doc = {"unit": {"model": "m", "question_set": "a", "question_id": "q", "run": "1"}, "task": "arc", "gold": "B",
           "estimator": "forced", "status": "ok", "stop": [],
           "sampling": SamplingConfig(estimator="forced", task="arc", answer_cue="\nSo the answer is (").as_dict(),
           "reasoning": {"answer_text": "The answer is B.", "native": False, "k": 4, "how": "cot"},
           "checkpoints": [{"checkpoint_index": 0, "prefix_tokens": 4, "status": "ok", "continuations": [
               {"text": "C).", "finish_reason": "stop", "stop": "eos"}]}]}
    assert label_document(doc)["checkpoints"][0]["labels"] == ["C"]
    # a document sampled before this release held every task's cue: its own task's entry is read
    old = {**doc, "sampling": {k: v for k, v in doc["sampling"].items() if k != "answer_cue"}
           | {"answer_cues": {"arc": "\nSo the answer is (", "gsm8k": "\nx "}}}
    assert label_document(old)["checkpoints"][0]["labels"] == ["C"]
