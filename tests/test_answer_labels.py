"""Trajectory labels a reasoning model would agree with (issue 25, items 2, 3 and 6, and its bad input).

* the answer forms R1-style, QwQ and gpt-oss models write, as quoted in the issue, with their labels (the
  same forms inside real answers of the corpus are in ``tests/data/real_format_answers.jsonl``);
* the thin-space guard in front of math-verify, checked against math-verify's own reading;
* a continuation cut by the budget or the context: only a complete answer statement gives a label;
* bad answer texts: a label or null in bounded time, never an exception that costs the batch;
* an incomplete trajectory: every K-dependent or cumulative measure null, condition means count the
  complete trajectories they average, one definition of "incomplete".
"""

from __future__ import annotations

import time

import pytest

from thinkprobe.trajectories.aggregates import K_DEPENDENT, condition_table, disagreement, trace_summary, trace_table
from thinkprobe.trajectories.labelling import continuation_label, label_document, trajectory_incomplete
from thinkprobe.trajectories.parsing import join_thousands, parse_answer, parse_cut_answer

pytestmark = pytest.mark.fast

# ---------------------------------------------------------------- item 3: the answer forms real models write

FORMS = [
    # thin-space thousands: math-verify read 4\,000 as 4*0 (math: 0), the number reader stopped at 4 (gsm8k: 4)
    ("math", r"\boxed{4\,000}", "4000"),
    ("gsm8k", r"\boxed{4\,000}", "4000"),
    ("math", r"\boxed{1\,000\,000}", "1000000"),
    ("gsm8k", r"\boxed{1\,000\,000}", "1000000"),
    ("math", r"\boxed{4\ 000}", "4000"),
    ("gsm8k", r"\boxed{4\ 000}", "4000"),
    ("math", "The total is $4\u2009000$ dollars.\n\n**Final Answer**\n\\[\n\\boxed{4\u2009000}\n\\]", "4000"),
    ("gsm8k", "So she saves 3\\,500 + 500 = 4\\,000 dollars.", "4000"),  # last-number reading, thin spaces too
    ("math", r"\boxed{3.141\,592}", parse_answer("3.141592", "math")),  # grouped decimals
    # units inside or outside \text: one hypothesis
    ("math", r"\boxed{\text{42 dollars}}", "42"),
    ("math", r"\boxed{42\text{ dollars}}", "42"),
    ("gsm8k", r"\boxed{\text{42 dollars}}", "42"),
    ("gsm8k", r"\boxed{42\text{ dollars}}", "42"),
    ("math", r"\boxed{42 dollars}", "42"),
    ("math", r"\boxed{\text{1:03 PM}}", "1:03pm"),  # a time stays a word answer
    ("math", r"\boxed{\text{June 20}}", "june20"),
    # ARC letters in other wrappers
    ("arc", r"\boxed{\textbf{C}}", "C"),
    ("arc", r"\boxed{\mathrm{C}}", "C"),
    ("arc", r"\boxed{\mathbf{(B)}}", "B"),
    ("arc", "**C**", "C"),
    ("arc", "Therefore, B is correct.", "B"),
    ("arc", "The light is bent.\n\n**(D)** Refraction", "D"),
    ("arc", "Thus, **C** is the correct answer.", "C"),
    # ... and what must stay no answer
    ("arc", "**A** plant needs light.", None),
    ("arc", "Let me check if D is correct.", None),
    ("arc", "So maybe A is correct.", None),
    ("arc", "C is incorrect.", None),
    ("arc", r"\boxed{Because}", None),
    # a short prose final line
    ("math", "So $x=5$.", "5"),
    ("math", "Thus, $x = 5$.", "5"),
    # an identity (sympy: True) is its right-hand side
    ("math", "So the answer is $7\\cdot6\\cdot5\\cdot 4\\cdot 3\\cdot2\\cdot 1=5,\\!040$.", "5040"),
]


@pytest.mark.parametrize(("task", "text", "expected"), FORMS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(FORMS)])
def test_answer_form_gets_its_label(task, text, expected):
    assert parse_answer(text, task) == expected


def test_units_inside_or_outside_text_are_one_hypothesis():
    for task in ("math", "gsm8k"):
        labels = {parse_answer(t, task) for t in (r"\boxed{\text{42 dollars}}", r"\boxed{42\text{ dollars}}",
                                                   r"\boxed{42}", "The answer is 42 dollars.")}
        assert labels == {"42"}, task


THIN = [(r"4\,000", "4000"), (r"1\,000\,000", "1000000"), (r"4\ 000", "4000"), (r"4\;000", "4000"),
        ("4\u2009000", "4000"), ("4\u202f000", "4000"), ("4 000", "4000")]


@pytest.mark.parametrize(("form", "value"), THIN)
def test_thin_space_guard_against_math_verify(form, value):
    """math-verify alone reads the form as a product (4*0); after the guard it reads its own value, and the
    parser's label is the value's label. When math-verify learns the form, the first assertion says so."""
    from math_verify import parse, verify

    assert not verify(parse(f"${value}$"), parse(f"${form}$")), "math-verify now reads this form: guard unneeded?"
    guarded = join_thousands(form, spaces=True)
    assert guarded == value and verify(parse(f"${value}$"), parse(f"${guarded}$"))
    assert parse_answer(rf"\boxed{{{form}}}", "math") == parse_answer(value, "math") == value


def test_guard_keeps_what_is_no_thousands_group():
    # two numbers in prose, a 4-digit group, an exponent: untouched (plain spaces only inside an answer)
    assert join_thousands("on day 4 100 people came") == "on day 4 100 people came"
    assert join_thousands(r"12\,3456") == r"12\,3456" and join_thousands(r"x^2\,y") == r"x^2\,y"


# ---------------------------------------------------------------- item 2: strict labels for cut output

def _cont(text, stop="budget", **extra):
    finish = {"budget": "length", "context": "length", "eos": "stop", "stop_string": "stop"}.get(stop, "error")
    return {"text": text, "stop": stop, "finish_reason": finish, **extra}


@pytest.mark.parametrize("stop", ["budget", "context"])
def test_cut_continuation_is_null_unless_its_answer_statement_is_complete(stop):
    cut = _cont("Half of the 18 eggs is 9, so 9 * 2 = 1", stop)
    assert continuation_label(cut, "gsm8k", "full", native=False) is None
    assert continuation_label({**cut, "stop": "eos", "finish_reason": "stop"}, "gsm8k", "full", False) == "1"
    # the bug on a native reasoner: the answer part after </think> was cut mid-number
    native = _cont("9 * 2 = 18</think>\n\nShe makes 9 * 2 = 1", stop)
    assert continuation_label(native, "gsm8k", "full", native=True) is None
    ids = _cont("", stop, think_closed=True, answer_text="\n\nShe makes 9 * 2 = 1")
    assert continuation_label(ids, "gsm8k", "full", native=True) is None
    # a statement running into the cut could have gone on: null
    for text, task in [("#### 1", "gsm8k"), ("The answer is 1", "gsm8k"), ("The answer is 18.", "gsm8k"),
                       ("so the answer is \\boxed{18", "math"), ("The answer is $\\frac{1}{2}", "math"),
                       ("The answer is (B", "arc"), ("\\boxed{4\\,0", "math")]:
        assert continuation_label(_cont(text, stop), task, "full", native=False) is None, text
    # a complete statement before the cut keeps its label
    for text, task, label in [("The answer is 18. Let me double-check: 9 * 2", "gsm8k", "18"),
                              ("#### 18\nQuest", "gsm8k", "18"),
                              ("So $x = \\boxed{\\frac{1}{2}}$. To verify, we plug", "math", "\\frac{1}{2}"),
                              ("The answer is (B) because plants", "arc", "B")]:
        assert continuation_label(_cont(text, stop), task, "full", native=False) == label, text
    answer = _cont("x</think>\n\nThe answer is \\boxed{18}. To verify, 9", stop)
    assert continuation_label(answer, "math", "full", native=True) == "18"
    # reasoning that never closed began no answer: null, whatever it said
    assert continuation_label(_cont("The answer is 18. Wait, let me", stop), "gsm8k", "full", native=True) is None


def test_cut_forced_answer_and_stop_strings():
    # forced answers: cue + a few tokens, nearly always cut by their budget
    assert continuation_label(_cont("18 apples, because"), "gsm8k", "forced", native=False) == "18"
    assert continuation_label(_cont("1"), "gsm8k", "forced", native=False) is None  # could be 18
    assert continuation_label(_cont("1", "eos"), "gsm8k", "forced", native=False) == "1"
    # a stop string ended the answer before the budget: the statement before it is complete
    text = "The answer is 7\nQuestion: Tom has 3 pens and buys 2 more. The answer is 5"
    assert continuation_label(_cont(text), "gsm8k", "full", False, stop=("\nQuestion:",)) == "7"
    assert continuation_label(_cont(text), "gsm8k", "full", False) is None  # the invented answer, cut: null


def test_parse_cut_answer_agrees_with_the_strict_parser_on_complete_statements():
    for text, task in [("The answer is 12 because the sum is even.", "gsm8k"), ("\\boxed{\\dfrac12} so", "math"),
                       ("Answer: C\n", "arc"), ("**Final Answer:** $3$\n", "math")]:
        assert parse_cut_answer(text, task) == parse_answer(text, task, strict=True) is not None, text


def _doc(checkpoints, k=32, native=False, **extra):
    return {"unit": {"model": "m", "question_set": "qs", "question_id": "q1", "run": "1"}, "task": "gsm8k",
            "gold": "18", "status": "ok", "estimator": "full", "sampling": {"temperature": 0.6},
            "reasoning": {"answer_text": "so 9 * 2 = 18. The answer is 18.", "native": native, "k": k, "how": "test"},
            "checkpoints": [{"checkpoint_index": i, "prefix_tokens": p, "status": "ok", "continuations": cs}
                            for i, (p, cs) in enumerate(checkpoints)], **extra}


def test_label_document_counts_cut_labelled_and_null_per_checkpoint():
    conts = [_cont("The answer is 18. Let me check"),  # cut, complete statement: labelled
             _cont("so 9 * 2 = 1"),                       # cut mid-statement: null
             _cont("so 9 * 2 = 1", "context"),
             _cont("The answer is 18.", "eos")]
    rec = label_document(_doc([(0, conts), (16, conts), (32, conts)]))
    cp = rec["checkpoints"][0]
    assert cp["labels"] == ["18", None, None, "18"]
    assert (cp["n_cut_budget"], cp["n_cut_context"], cp["n_cut_labelled"], cp["n_null"]) == (2, 1, 1, 2)
    row = trace_summary(rec)
    assert (row["n_cut_budget"], row["n_cut_context"], row["n_cut_labelled"], row["n_null"]) == (6, 3, 3, 6)
    cond = condition_table(trace_table([rec])[0]).iloc[0]
    assert cond["share_cut"] == pytest.approx(0.75) and cond["share_cut_labelled"] == pytest.approx(0.25)
    assert cond["share_null"] == pytest.approx(0.5)


# ---------------------------------------------------------------- bad input: bounded, never an exception

N = 100_000
BAD = [
    ("100k prose", ("Half of 18 is 9, so 9 * 2 = 18 apples. " * 3000)[:N]),
    ("100k unclosed \\[", "\\[" * (N // 2)),  # took over a minute (quadratic math scan) before issue 25
    ("100k unbalanced {", "{" * N),
    ("100k unbalanced }", "}" * N),
    ("100k $", "$" * N),
    ("100k runaway box", "\\boxed{" + "1+" * (N // 2) + "1}"),  # math-verify's 5 s timeout before issue 25
    ("5,000 nested boxes", "\\boxed{" * 5000 + "5" + "}" * 5000),
    ("100k \\begin{align}", "\\begin{align}" * (N // 13)),
    ("nested empty box", "\\boxed{\\boxed{}}"),
    ("empty box", "\\boxed{}"),
    ("unbalanced box", "The answer is \\boxed{\\frac{1}{2}"),
    ("unbalanced braces", "The answer is \\boxed{3}}}} {{{"),
]
LIMIT_S = 10.0  # generous: the measured times are in bench/README.md (bench/trajectory_bench.py --labels)


@pytest.mark.parametrize(("name", "text"), BAD, ids=[b[0] for b in BAD])
def test_bad_answer_text_gets_a_label_or_null_in_bounded_time(name, text):
    for task in ("gsm8k", "svamp", "arc", "math"):
        for label in (lambda: parse_answer(text, task), lambda: parse_cut_answer(text, task)):
            t0 = time.perf_counter()
            got = label()
            assert got is None or (isinstance(got, str) and len(got) < 2000), (task, got)
            assert time.perf_counter() - t0 < LIMIT_S, (name, task)
    assert parse_answer("\\boxed{}", "math") is None and parse_answer("\\boxed{\\boxed{}}", "gsm8k") is None


def test_unreadable_continuation_is_a_null_label_not_a_lost_batch():
    conts = [_cont("The answer is 18.", "eos"), {"text": 12345, "stop": "eos"},
             _cont("\\[" * 20_000, "budget")]
    rec = label_document(_doc([(0, conts), (16, conts), (32, conts)]))
    assert rec["status"] == "ok" and [c["labels"] for c in rec["checkpoints"]] == [["18", None, None]] * 3
    assert any("checkpoint 0 continuation 1: no label" in n for n in rec["notes"])


# ---------------------------------------------------------------- item 6: incomplete trajectories

def _record(labels_by_pos, k, qid="q1", positions=True, **extra):
    cps = [{"checkpoint_index": i, "labels": labs, "status": "ok" if labs else "skipped",
            **({"prefix_tokens": p} if positions else {})} for i, (p, labs) in enumerate(labels_by_pos)]
    return {"model": "m", "question_set": "qs", "question_id": qid, "run": "1", "task": "gsm8k", "gold": "7",
            "endpoint_label": "7", "status": "ok", "cot_tokens_realized": k, "checkpoints": cps, **extra}


def test_incomplete_trajectory_has_no_cumulative_measure_and_means_count_complete_ones():
    full = _record([(0, ["3", "3"]), (16, ["7", "3"]), (32, ["7", "7"]), (40, ["7", "7"])], 40)
    cut = _record([(0, ["3", "5"]), (16, ["7", "3"]), (32, ["3", "7"]), (40, [])], 40, qid="q2")
    a, b = trace_summary(full), trace_summary(cut)
    assert not a["incomplete"] and b["incomplete"]
    for key in ("s_eff", "s_eff_max", "entropy_mean", "switches", "recurrence", "n_dominant_answers", "path_length",
                "motion_concentration", "motion_center", "r_direct", "t_commit", "mechanism", "endpoint_prediction"):
        assert key in K_DEPENDENT and b[key] is None, key
        assert a[key] is not None, key
    assert a["switches"] == 2 and a["path_length"] == pytest.approx(1.0) and a["t_commit"] == 32
    assert b["gold_dominant"] == [False, True, True] and b["cot_tokens"] == 40 and b["n_checkpoints"] == 3
    rows, _ = trace_table([full, cut, _record([(0, ["7", "7"]), (16, ["7", "7"])], 16, qid="q3")])
    cond = condition_table(rows).iloc[0]
    assert (cond["n_traces"], cond["n_complete"], cond["n_incomplete"]) == (3, 2, 1)
    assert cond["n_switches"] == cond["n_path_length"] == 2  # the incomplete trajectory is in no mean
    assert cond["switches"] == pytest.approx((2 + 0) / 2) and cond["s_eff"] == pytest.approx((a["s_eff"] + 1.0) / 2)
    assert cond["accuracy"] == 1.0  # the endpoint is the realized trace's own answer: every trace counts


def test_one_definition_of_incomplete_for_hand_written_records():
    """Records without prefix_tokens: the final checkpoint is the last one listed. Before issue 25 the trace
    row compared the last checkpoint *index* with K (tokens) and the disagreement table compared None with
    K, so such a record with K given was incomplete in both, by accident, even with every checkpoint labelled."""
    done = _record([(0, ["7", "7"]), (16, ["7", "7"]), (40, ["7", "7"])], 40, positions=False)
    other = {**_record([(0, ["3", "3"]), (16, ["7", "7"]), (40, ["7", "7"])], 40, positions=False), "model": "n"}
    open_ = _record([(0, ["7", "7"]), (16, ["7", "7"]), (40, [])], 40, positions=False)
    assert not trajectory_incomplete(done) and not trace_summary(done)["incomplete"]
    assert trace_summary(done)["switches"] == 0 and len(disagreement([done, other], grid=3)) == 1
    assert trajectory_incomplete(open_) and trace_summary(open_)["incomplete"]
    assert disagreement([open_, other], grid=3).empty
    # with positions, the final checkpoint is the one at K: a capped record listing up to 32 of K = 40 is incomplete
    capped = _record([(0, ["7", "7"]), (16, ["7", "7"]), (32, ["7", "7"])], 40)
    assert trajectory_incomplete(capped) and trace_summary(capped)["incomplete"]
    # the labeller stores the same verdict
    rec = label_document(_doc([(0, [_cont("The answer is 18.", "eos")]), (16, [])], k=16))
    assert rec["incomplete"] is trajectory_incomplete({**rec, "incomplete": False}) is True


# ---------------------------------------------------------------- the documentation's table is the parser's

def test_docs_table_matches_the_parser():
    """docs/answer-labels.md documents the normalisation in one table (task, written, label, why): every row
    is what the parser does, so the page cannot drift from the code."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "answer-labels.md").read_text(encoding="utf-8")
    section = page.split("## Normalisation: one table", 1)[1].split("\n## ", 1)[0]
    rows = [re.fullmatch(r"\| `(\w+)` \| `(.+?)` \| (?:`(.+?)`|(null)) \| (.+) \|", line)
            for line in section.splitlines() if line.startswith("| `")]
    assert rows and all(rows), [line for line in section.splitlines() if line.startswith("| `")]
    assert {m.group(1) for m in rows} == {"gsm8k", "arc", "math"} and len(rows) >= 30
    for m in rows:
        assert parse_answer(m.group(2), m.group(1)) == m.group(3), m.group(0)


def test_a_trace_cut_during_collection_is_labelled_only_from_a_complete_answer():
    """The realized trace's own answer (``endpoint_label``): a trace the collection cut at its budget
    (``generation.finish_reason: length``) ends wherever the budget fell, so its last number is no answer;
    it is labelled like a cut continuation. The same text that ended on its own keeps its lenient label."""
    from thinkprobe.trajectories.checkpoints import realized_from_unit

    def unit(finish):
        return {"unit": {"model": "m", "question_set": "qs", "question_id": "q", "run": "1"}, "status": "ok",
                "generation": {"prompt_token_ids": [1, 2], "token_ids": [3, 4], "finish_reason": finish}}

    assert realized_from_unit(unit("length")).extra["finish_reason"] == "length"

    def record(cut, text):
        doc = {"unit": {"model": "m", "question_set": "qs", "question_id": "q", "run": "1"}, "status": "ok",
               "task": "gsm8k", "gold": "18", "checkpoints": [],
               "reasoning": {"how": "whole", "native": False, "k": 2, "text": text, "answer_text": text, "cut": cut}}
        return label_document(doc)["endpoint_label"]

    assert record(False, "so 9 * 2 = 1") == "1" and record(True, "so 9 * 2 = 1") is None
    assert record(True, "The answer is 18. Let me double") == "18"
