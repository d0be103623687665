"""The answer parser on real-format answers (issue 15, issue 25): a committed fixture of 149 answers with their labels.

``tests/data/real_format_answers.jsonl`` holds, one per line, ``task``, ``text``, the expected label
(``expected``, read by hand; or ``gold``, the benchmark's own gold answer whose label is expected) and
``source`` naming where the text came from: the text after ``</think>`` of DeepSeek-R1 distills
(steering-thinking-llms), DeepSeek-R1's MMLU answers (thought-branches), MATH algebra solutions as the
benchmark writes them and the same solutions with the ``\\boxed`` macro removed, GSM8K reference solutions,
and the outputs quoted in issue 15 and issue 25. Issue 25 added 41: the answer forms R1-style, QwQ and
gpt-oss models write (thin-space thousands, units inside ``\\text``, ARC letters in other wrappers, a short
prose final line), each alone as quoted and inside a real answer of the corpus whose final answer was
rewritten in that form (the source says which line and what was rewritten). The fixture is committed, so the
test needs no corpus.

Equivalence: for every MATH entry with a ``gold`` or a ``pair`` (an equivalent or a different answer
written another way), math-verify decides whether the extracted answer and the other one are the same
value, and the parser must say the same (equal labels exactly when math-verify says equal).
"""

import json
from pathlib import Path

import pytest

from thinkprobe.trajectories.parsing import extract_math_answer, parse_answer

pytestmark = pytest.mark.fast

FIXTURE = Path(__file__).parent / "data" / "real_format_answers.jsonl"
ENTRIES = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_fixture_is_large_and_mixed():
    assert len(ENTRIES) >= 149
    tasks = {e["task"] for e in ENTRIES}
    assert tasks == {"math", "gsm8k", "arc"}
    unboxed = [e for e in ENTRIES if e["task"] == "math" and "\\boxed" not in e["text"]]
    assert len(unboxed) >= 20  # prose answers, not only boxes
    assert all(e.get("source") for e in ENTRIES)


@pytest.mark.parametrize("entry", ENTRIES, ids=[f"{i}-{e['task']}" for i, e in enumerate(ENTRIES)])
def test_real_format_answer_gets_its_label(entry):
    expected = entry["expected"] if "expected" in entry else parse_answer(entry["gold"], entry["task"])
    if "gold" in entry:
        assert expected is not None, entry["gold"]
    assert parse_answer(entry["text"], entry["task"]) == expected, entry["source"]


PAIRS = [(e, other) for e in ENTRIES if e["task"] == "math" for other in (e.get("gold"), e.get("pair"))
         if other is not None]


@pytest.mark.parametrize(("entry", "other"), PAIRS, ids=[f"{i}" for i in range(len(PAIRS))])
def test_parser_agrees_with_math_verify_on_equivalence(entry, other):
    from math_verify import parse, verify

    answer = extract_math_answer(entry["text"])
    assert answer is not None, entry["source"]
    same_value = verify(parse("$" + other + "$"), parse("$" + answer + "$"))
    same_label = parse_answer(entry["text"], "math") == parse_answer(other, "math")
    assert same_label == same_value, (entry["source"], answer, other)


def test_pairs_cover_both_verdicts():
    from math_verify import parse, verify

    verdicts = {verify(parse("$" + o + "$"), parse("$" + extract_math_answer(e["text"]) + "$")) for e, o in PAIRS}
    assert verdicts == {True, False}


def test_followup_question_never_decides_the_label():
    from thinkprobe.answers import DEFAULT_STOP, cut_at_stop

    text = "So she has 7 apples. The answer is 7.\nQuestion: Tom has 3 pens and buys 2. The answer is 5."
    assert parse_answer(text, "gsm8k") == "5"  # the invented follow-up wins without stop strings
    assert parse_answer(cut_at_stop(text, DEFAULT_STOP["cot"]), "gsm8k") == "7"
