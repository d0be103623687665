"""The task registry (issue 33): one file per task, the schema's enums generated from it, unknown tasks named.

The last test follows the worked example of docs/adding-a-task.md: a new task file, registered, is a task of
the schema, the prompts and the parser, without touching any other file."""

from __future__ import annotations

import pytest

from thinkprobe import tasks
from thinkprobe.config import load_schema
from thinkprobe.trajectories.parsing import parse_answer

pytestmark = pytest.mark.fast


def test_an_unknown_task_is_an_error_naming_the_known_ones():
    with pytest.raises(tasks.UnknownTask, match="known tasks are arc, choice, gsm8k, math, open, svamp"):
        parse_answer("The answer is 4.", "mmlu")
    with pytest.raises(tasks.UnknownTask, match="no answer labels"):
        parse_answer("anything", "open")


def test_the_schema_enums_are_the_registry():
    from pathlib import Path

    schema = load_schema(Path(__file__).resolve().parents[1] / "config" / "schema.yaml")
    props = schema["properties"]
    assert props["planning"]["properties"]["trace_tokens_prior"]["propertyNames"]["enum"] == tasks.names()
    assert props["planning"]["properties"]["trace_tokens_prior"]["default"] == tasks.token_priors()
    cues = props["trajectories"]["properties"]["forced"]["properties"]["answer_cues"]
    assert cues["propertyNames"]["enum"] == tasks.answer_names()


def test_every_task_file_is_imported_by_name():
    """The code hashes see only the task files that tasks/__init__.py imports by name (see its _load)."""
    import ast
    from pathlib import Path

    folder = Path(tasks.__file__).parent
    files = sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))
    tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
    named = sorted(a.name for node in tree.body if isinstance(node, ast.ImportFrom) and node.level == 1
                   and node.module is None for a in node.names)
    assert named == files


def _worked_example_file() -> str:
    """The task file of docs/adding-a-task.md's worked example (the block between its ``yesno.py`` markers)."""
    import re
    import textwrap
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "adding-a-task.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- yesno.py -->\s*```python\n(.*?)```\s*<!-- /yesno.py -->", page, re.S)
    assert block, "docs/adding-a-task.md: no <!-- yesno.py --> block"
    return textwrap.dedent(block.group(1))


def test_the_worked_example_of_adding_a_task(tmp_path):
    """docs/adding-a-task.md: a yes/no task in one file (run as ``thinkprobe.tasks.yesno``), its question set
    loaded by its own loader (a gold it cannot read excluded with the reason), its prompt, its labels and its
    forced-answer cue from config."""
    import json
    import sys
    import types

    from thinkprobe.generate.prompts import format_prompt
    from thinkprobe.generate.questions import read_question_set, source_names
    from thinkprobe.trajectories.forced import forced_answer_text, forced_suffix_text
    from thinkprobe.trajectories.sampling import SamplingConfig

    module = types.ModuleType("thinkprobe.tasks.yesno")
    module.__package__ = "thinkprobe.tasks"
    exec(compile(_worked_example_file(), "thinkprobe/tasks/yesno.py", "exec"), module.__dict__)
    sys.modules[module.__name__] = module
    task = tasks.register(module.TASK)
    try:
        assert "yesno" in tasks.names() and "yesno" in tasks.answer_names() and "yesno" in source_names()
        assert tasks.token_priors()["yesno"] == 800
        path = tmp_path / "yesno.jsonl"
        path.write_text(json.dumps({"id": "1", "question": "Is ice cold?", "answer": "Yes"}) + "\n"
                        + json.dumps({"id": "2", "question": "Is fire cold?", "answer": "maybe"}) + "\n")
        qs = read_question_set({"name": "yn", "source": "yesno", "path": str(path)})
        (q,) = qs.questions
        assert (q.id, q.task, q.gold, q.question_set) == ("yesno-1", "yesno", "yes", "yn")
        (skipped,) = qs.skipped
        assert skipped.line == 2 and skipped.reason == "gold 'maybe' is not yes or no"
        assert [x.id for x in read_question_set({"source": "yesno", "path": str(path), "ids": ["1"]}).questions] \
            == ["yesno-1"]  # the id prefix may be left out
        assert format_prompt(q, "native").endswith("The answer is X.")
        assert parse_answer("Hmm. The answer is No.", "yesno") == "no"
        cfg = SamplingConfig.from_config({"estimator": "forced", "task": "yesno",
                                          "forced": {"answer_cues": {"yesno": "\nTherefore, the answer is "}}})
        assert forced_suffix_text(cfg.answer_cue, native=True) == "\n</think>\n\nTherefore, the answer is "
        assert parse_answer(forced_answer_text(cfg.answer_cue, " yes."), "yesno") == "yes"
    finally:
        tasks._REGISTRY.pop(task.name)
        sys.modules.pop(module.__name__, None)


def test_every_task_option_is_a_question_set_key_of_the_schema():
    """A task's loader options (``Task.options``, MATH's ``math_type``) are question-set spec keys of the
    schema, and the spec keys that name a hub dataset's data include them (rule fetch_dataset)."""
    from pathlib import Path

    from thinkprobe.generate.questions import dataset_keys, source_names, task_options

    schema = load_schema(Path(__file__).resolve().parents[1] / "config" / "schema.yaml")
    spec = schema["properties"]["question_sets"]["additionalProperties"]["properties"]
    assert spec["source"]["enum"] == source_names() == ["builtin", *tasks.names()]
    assert set(task_options()) <= set(spec) and set(task_options()) <= set(dataset_keys())
    assert task_options() == {"math_type": "Algebra"}


_EDIT = r'''
import json, sys
from thinkprobe import codedeps
from thinkprobe.trajectories import sampling

def state():
    codedeps._script_code.cache_clear()
    sampling.sampling_code_sha256.cache_clear()
    return {"traj_label": codedeps.script_code(codedeps.SCRIPTS_DIR / "traj_label.py"),
            "traj_tables": codedeps.script_code(codedeps.SCRIPTS_DIR / "traj_tables.py"),
            "sample_off": sampling.sampling_code_sha256(False, "vllm", "full"),
            "sample_on": sampling.sampling_code_sha256(True, "vllm", "full")}

before = state()
path = codedeps.PACKAGE_DIR / "tasks" / "_choices.py"
text = path.read_text()
path.write_text(text.replace("LETTERS = \"ABCDEFGHIJ\"", "LETTERS = \"ABCDEFGH\""))  # an extraction edit
print("STATE " + json.dumps({"before": before, "after": state()}))
'''


def test_an_extraction_edit_schedules_labelling_and_no_sampling(tmp_path):
    """An edit of one task's extraction (in a copy of the package) changes the code of the labelling job
    (``traj_label``'s ``code`` param: Snakemake reruns it) and not the identity of the sampling job
    (``traj_sample`` has no code param; its batches are keyed by the sampling code, which with sequential
    stopping off holds no task file): stored continuations are relabelled, never resampled. With stopping on the
    labels decide how many are sampled, so there the sampling identity changes (docs/adding-a-task.md)."""
    import json
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    shutil.copytree(repo / "thinkprobe", tmp_path / "thinkprobe", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(repo / "workflow" / "scripts", tmp_path / "workflow" / "scripts")
    shutil.copytree(repo / "rules", tmp_path / "rules")
    proc = subprocess.run([sys.executable, "-c", _EDIT], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("STATE ")), None)
    assert line, proc.stderr[-3000:]
    got = json.loads(line[len("STATE "):])
    before, after = got["before"], got["after"]
    assert before["traj_label"] != after["traj_label"], "the labelling job would not rerun"
    assert before["sample_off"] == after["sample_off"], "the sampling job would resample"
    assert before["sample_on"] != after["sample_on"]


def test_a_choice_list_with_a_missing_or_repeated_letter_is_excluded_with_the_reason(tmp_path):
    import json

    from thinkprobe.generate.questions import read_question_set

    items = [{"id": "ok", "question": "q?", "label": ["A", "B", "C", "D"], "A": "a", "B": "b", "C": "c", "D": "d",
              "answer": "B"},
             {"id": "gap", "question": "q?", "label": ["A", "B", "D"], "A": "a", "B": "b", "D": "d", "answer": "B"},
             {"id": "twice", "question": "q?", "label": ["A", "B", "B"], "A": "a", "B": "b", "answer": "A"}]
    path = tmp_path / "mc.json"
    path.write_text(json.dumps(items))
    qs = read_question_set({"source": "choice", "path": str(path)})
    assert [q.id for q in qs.questions] == ["choice-ok"] and qs.questions[0].task == "choice"
    reasons = sorted(s.reason for s in qs.skipped)
    assert len(reasons) == 2
    assert "a letter is missing" in reasons[0] and "['A', 'B', 'D']" in reasons[0]
    assert "duplicate choice labels" in reasons[1]


def test_a_gold_answer_the_task_cannot_parse_is_a_note_not_a_crash():
    from thinkprobe.trajectories.labelling import label_document

    doc = {"unit": {"model": "m", "question_set": "s", "question_id": "q", "run": 1}, "status": "excluded",
           "reason": "test", "gold": "seventeen"}
    record = label_document(doc, task="gsm8k")
    assert record["gold"] is None
    assert record["notes"] == ["gold answer 'seventeen' does not parse for task 'gsm8k'"]


def test_the_labelling_job_reads_the_items_own_choices(tmp_path):
    """traj_label passes each item's options from the question set to the labeller: a key outside them is
    null, an answer that states one option's text gets that option."""
    import json

    from thinkprobe.stages.trajectories import label_batch

    def cont(text):
        return {"text": text, "stop": "eos", "finish_reason": "stop"}

    doc = {"unit": {"model": "m", "question_set": "mc", "question_id": "q1", "run": "1"}, "task": "choice",
           "status": "ok", "estimator": "full", "sampling": {"temperature": 0.6},
           "reasoning": {"answer_text": "So the answer is steam.", "native": False, "k": 16, "how": "test"},
           "checkpoints": [{"checkpoint_index": 0, "prefix_tokens": 0, "status": "ok",
                            "continuations": [cont("The answer is (E)."), cont("The answer is steam."),
                                              cont("Therefore, the best answer is: (B).")]}]}
    path = tmp_path / "b0000.json"
    from thinkprobe.stages.trajectories import write_batch
    write_batch(path, {"documents": [doc]})  # sealed, as traj_sample writes it (an unsealed batch is refused)
    out = tmp_path / "labels.json"
    questions = {"q1": {"task": "choice", "gold": "B", "choices": [["A", "ice"], ["B", "steam"], ["C", "wood"],
                                                                    ["D", "sand"]]}}
    label_batch(str(path), str(out), questions)
    rec = json.loads(out.read_text())["records"][0]
    assert rec["checkpoints"][0]["labels"] == [None, "B", "B"]
    assert rec["endpoint_label"] == "B" and rec["gold"] == "B"


# ------------------------------------------------------------------ bad input (issue 33): excluded with the reason

def test_a_gold_answer_the_task_cannot_read_excludes_the_item_at_load(tmp_path):
    """A gold the task's parser gives no label is a per-item exclusion with the reason when the question set is
    read, never a question whose every answer is then wrong or unknown; a decimal comma in a GSM8K gold is no
    thousands separator (``3,5`` was read as 35), and a tiny SVAMP answer is written positionally (``1e-05``
    was read as -5)."""
    import json

    from thinkprobe.generate.questions import read_question_set

    g = tmp_path / "g.jsonl"
    g.write_text("\n".join(json.dumps({"question": f"q{i}?", "answer": f"so\n#### {a}"})
                           for i, a in enumerate(["1,018", "seventeen", "3,5"])))
    qs = read_question_set({"source": "gsm8k", "path": str(g)})
    assert [q.gold for q in qs.questions] == ["1018"]
    reasons = [s.reason for s in qs.skipped]
    assert reasons == ["gold answer 'seventeen' does not parse for task 'gsm8k'",
                       "gold answer '3,5' does not parse for task 'gsm8k' (a comma that separates no thousands)"]
    m = tmp_path / "m.jsonl"
    m.write_text("\n".join(json.dumps({"problem": f"p{i}", "solution": f"so \\boxed{{{b}}}", "type": "Algebra"})
                           for i, b in enumerate(["5", "1+" * 600 + "1"])))
    qs = read_question_set({"source": "math", "path": str(m)})
    assert [q.gold for q in qs.questions] == ["5"]
    assert len(qs.skipped) == 1 and "does not parse for task 'math'" in qs.skipped[0].reason
    s = tmp_path / "s.json"
    s.write_text(json.dumps([{"ID": "tiny", "Body": "b.", "Question": "q?", "Answer": 0.00001}]))
    (q,) = read_question_set({"source": "svamp", "path": str(s)}).questions
    assert q.gold == "0.00001" and parse_answer(q.gold, "svamp") == "0.00001"


@pytest.mark.parametrize("task", ["gsm8k", "svamp", "math", "arc", "choice"])
def test_an_answer_of_megabytes_gets_a_label_or_null_in_bounded_time(task):
    """Bad input (issue 33): every task reads a text of a megabyte or more in bounded time; a runaway line of
    digits is no number (a label of a megabyte would be stored in every record), a megabyte of prose ending
    in a statement gets that statement's label."""
    import time

    choices = (("A", "ice"), ("B", "steam")) if task in ("arc", "choice") else None
    texts = {"digits": "1" * 1_200_000, "prose": "The answer is maybe. " * 60_000,
             "boxes": "\\boxed{" * 100_000,
             "stated": "12 + 5 = 17. " * 100_000 + ("So the answer is (B)." if choices else "So the total is 42.")}
    t0 = time.perf_counter()
    got = {name: parse_answer(text, task, choices=choices) for name, text in texts.items()}
    assert time.perf_counter() - t0 < 20
    assert got["digits"] is None and got["prose"] is None and got["boxes"] is None
    assert got["stated"] == ("B" if choices else "42")


def test_a_megabyte_continuation_is_labelled_null_and_the_rest_are_labelled():
    from thinkprobe.trajectories.labelling import label_document

    def cont(text):
        return {"text": text, "stop": "eos", "finish_reason": "stop"}

    doc = {"unit": {"model": "m", "question_set": "s", "question_id": "q", "run": 1}, "task": "gsm8k",
           "status": "ok", "estimator": "full", "sampling": {"temperature": 0.6}, "gold": "18",
           "reasoning": {"answer_text": "The answer is 18.", "native": False, "k": 16, "how": "test"},
           "checkpoints": [{"checkpoint_index": 0, "prefix_tokens": 0, "status": "ok",
                            "continuations": [cont("9" * 2_000_000), cont("The answer is 18."),
                                              cont("x = " * 300_000)]}]}
    record = label_document(doc)
    assert record["checkpoints"][0]["labels"] == [None, "18", None]
    assert record["gold"] == "18" and record["endpoint_label"] == "18"
