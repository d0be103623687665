"""Answer parsing for trajectories: real gold answers and real model output formats."""

from __future__ import annotations

import importlib
import json

import pytest

from thinkprobe.answers import digit_key

from .conftest import corpus_path
from thinkprobe.trajectories import parse_answer
from thinkprobe.trajectories.parsing import canonical_number, last_boxed


def _jsonl(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# ---------------------------------------------------------------- real benchmark gold answers

@pytest.mark.fast
def test_gsm8k_gold_answers_parse_to_themselves():
    items = _jsonl(corpus_path("benchmarks", "gsm8k", "test.jsonl"))
    assert len(items) == 1319
    for item in items:
        gold = item["answer"].split("####")[-1].strip()
        expected = str(int(gold.replace(",", "")))
        label = parse_answer(item["answer"], "gsm8k")
        assert label == expected, (item["question"][:60], gold, label)
        assert parse_answer(gold, "gsm8k") == expected
        assert parse_answer(label, "gsm8k") == label


@pytest.mark.fast
def test_svamp_gold_answers_parse_to_themselves():
    with open(corpus_path("benchmarks", "svamp", "SVAMP.json"), encoding="utf-8") as fh:
        items = json.load(fh)
    assert len(items) == 1000
    for item in items:
        value = item["Answer"]
        expected = str(int(value)) if float(value).is_integer() else repr(float(value))
        label = parse_answer(str(value), "svamp")
        assert label == expected, (item["ID"], value, label)
        assert parse_answer(label, "svamp") == label


def _arc_expected(key: str) -> str:
    return "ABCDE"[int(key) - 1] if key.isdigit() else key


@pytest.mark.fast
def test_arc_gold_keys_parse_to_letters():
    with open(corpus_path("benchmarks", "arc-challenge-skywork", "data", "arc", "test.jsonl"),
              encoding="utf-8") as fh:
        challenge = json.load(fh)
    easy = _jsonl(corpus_path("benchmarks", "arc-genmc", "data", "arc_easy", "official", "test.jsonl"))
    keys = [item["answer"] for item in challenge] + [item["answerKey"] for item in easy]
    assert len(keys) == 1172 + 2376
    assert any(k.isdigit() for k in keys), "the digit keys this test must map are absent"
    for key in keys:  # the loader maps digit keys to letters (the prompt shows letters): its gold parses
        assert parse_answer(digit_key(key), "arc") == _arc_expected(key)
        assert parse_answer(f"The answer is ({digit_key(key)}).", "arc") == _arc_expected(key)
        if key.isdigit():  # a digit is a key only on an item whose choices are digits
            digits = tuple((str(i), "x") for i in range(1, 6))
            assert parse_answer(f"The answer is ({key}).", "arc", choices=digits) == key
            assert parse_answer(f"The answer is ({key}).", "arc") is None


@pytest.mark.slow
def test_math_algebra_gold_solutions_give_fixed_point_labels():
    items = _jsonl(corpus_path("benchmarks", "math-evaluation-harness", "data", "math",
                               "DERIVED_algebra_test.jsonl"))
    assert len(items) == 1187
    for item in items:
        label = parse_answer(item["solution"], "math")
        assert label is not None, item["idx"]
        assert parse_answer(label, "math") == label, (item["idx"], label)
        assert parse_answer(f"The final answer is $\\boxed{{{last_boxed(item['solution']).strip()}}}$.", "math") == label


@pytest.mark.fast
def test_math500_solution_and_answer_field_share_a_label():
    items = _jsonl(corpus_path("benchmarks", "math-evaluation-harness", "data", "math_oai", "test.jsonl"))
    assert len(items) == 500
    for item in items:
        from_solution = parse_answer(item["solution"], "math")
        from_answer = parse_answer(item["answer"], "math")
        assert from_solution is not None and from_solution == from_answer, (item["unique_id"], item["answer"])


# ---------------------------------------------------------------- real model output formats

GSM8K_OUTPUTS = [
    ("Janet sells 16 - 3 - 4 = 9 duck eggs a day.\nShe makes 9 * 2 = $18 every day.\n#### 18", "18"),
    ("So the total is 1,250 + 250 = 1,500.\nThe answer is 1500.", "1500"),
    ("Therefore, she makes $\\boxed{18}$ dollars.", "18"),
    ("**Answer:** $18", "18"),
    ("The final answer is $\\$1,080.00$.", "1080"),
    ("Answer: 45 minutes", "45"),
    ("The answer is: 7.50", "7.5"),
    ("So he has 12 apples left.", "12"),
    ("The answer is -4.", "-4"),
    ("The answer is 25%.", "25"),
    ("Final Answer: The final answer is 3/4. I hope it is correct.", "0.75"),
    ("The answer is \\boxed{\\frac{3}{4}}", "0.75"),
    ("She pays 2/3 of it. The answer is 2/3", "2/3"),
    ("#### 1,000,000", "1000000"),
    ("The answer is 5. Wait, she had 3 already, so 5 + 3 = 8.", "5"),
    ("<think>9 * 2 = 18</think>\nShe makes **$18** a day.", "18"),
    ("I cannot determine this without more information.", None),
    ("", None),
]
SVAMP_OUTPUTS = [
    ("The answer is 51.0", "51"),
    ("51 - 25 = 26 so the answer is 26 dollars.", "26"),
    ("x = 26", "26"),
    ("Each pack costs 76 - 25 = 51 dollars.\n#### 51", "51"),
]
ARC_OUTPUTS = [
    ("The answer is (B).", "B"),
    ("Answer: C", "C"),
    ("**Answer:** (D) Planetary gravity will become stronger.", "D"),
    ("B", "B"),
    ("(C)", "C"),
    ("C. Planetary days will become shorter.", "C"),
    ("The correct answer is 3.", None),  # a number, not a key: the prompt shows letters (issue 33)
    ("Therefore, the final answer is $\\boxed{A}$.", "A"),
    ("A plant needs sunlight, so the answer is B", "B"),
    ("The correct option is D because gravity pulls.", "D"),
    ("the answer is (a)", "A"),
    ("A plant needs sunlight to grow.", None),
    ("the answer is a plant", None),
]
MATH_OUTPUTS = [
    ("Thus $x = \\boxed{\\frac{1}{2}}$.", "\\frac{1}{2}"),
    ("so the answer is $\\boxed{\\dfrac12}$", "\\frac{1}{2}"),
    ("The answer is $0.5$.", "\\frac{1}{2}"),
    ("**Answer:** 1/2", "\\frac{1}{2}"),
    ("**Answer:** 3/4", "\\frac{3}{4}"),
    ("The final answer is $\\boxed{\\left( 1, 2 \\right)}$", "\\left(1, 2\\right)"),
    ("\\boxed{(1,2)}", "\\left(1, 2\\right)"),
    ("\\boxed{2+3x}", "3 x + 2"),
    ("\\boxed{3x + 2}", "3 x + 2"),
    ("\\boxed{2, -3}", "\\left\\{-3, 2\\right\\}"),
    ("\\boxed{-3,2}", "\\left\\{-3, 2\\right\\}"),
    ("$\\boxed{x=5}$", "5"),
    ("\\boxed{\\text{Evelyn}}", "evelyn"),
    ("so we need \\boxed{\\frac{\\sqrt{2}}{2}}", "\\frac{\\sqrt{2}}{2}"),
    ("\\boxed{\\sqrt2/2}", "\\frac{\\sqrt{2}}{2}"),
    ("\\boxed{10\\%}", "10"),  # a percentage is labelled by its number (5\\% and 5 share a label)
    ("\\boxed{5\\text{ cm}}", "5"),
    ("Final Answer: The final answer is $-\\frac{1}{3}$. I hope it is correct.", "- \\frac{1}{3}"),
    ("The answer is \\(\\frac{-1}{3}\\)", "- \\frac{1}{3}"),
    ("\\boxed{(-\\infty, 2)}", "\\left(-\\infty, 2\\right)"),
    ("first \\boxed{7}, then corrected: \\boxed{\\frac{a+1}{\\sqrt{b}}}", "\\frac{a + 1}{\\sqrt{b}}"),
    ("<think>hmm</think> the answer is \\boxed{12}.", "12"),
    ("I am not sure.", None),
    ("Let me keep thinking about the factorisation", None),
]


@pytest.mark.fast
@pytest.mark.parametrize(("text", "expected"), GSM8K_OUTPUTS)
def test_gsm8k_output_formats(text, expected):
    assert parse_answer(text, "gsm8k") == expected


@pytest.mark.fast
@pytest.mark.parametrize(("text", "expected"), SVAMP_OUTPUTS)
def test_svamp_output_formats(text, expected):
    assert parse_answer(text, "svamp") == expected


@pytest.mark.fast
@pytest.mark.parametrize(("text", "expected"), ARC_OUTPUTS)
def test_arc_output_formats(text, expected):
    assert parse_answer(text, "arc") == expected


@pytest.mark.fast
@pytest.mark.parametrize(("text", "expected"), MATH_OUTPUTS)
def test_math_output_formats(text, expected):
    assert parse_answer(text, "math") == expected


@pytest.mark.fast
def test_equivalent_math_forms_share_one_label():
    forms = ["\\boxed{\\frac12}", "\\boxed{1/2}", "\\boxed{0.5}", "\\boxed{\\dfrac{1}{2}}", "\\boxed{ \\tfrac{1}{2} }",
             "The answer is $\\frac{2}{4}$"]
    assert {parse_answer(f, "math") for f in forms} == {"\\frac{1}{2}"}
    assert parse_answer("\\boxed{(x+1)^2}", "math") != parse_answer("\\boxed{x^2+2x+1}", "math")


@pytest.mark.fast
def test_strict_mode_requires_an_anchor():
    assert parse_answer("So he has 12 apples left.", "gsm8k", strict=True) is None
    assert parse_answer("So he has 12 apples. The answer is 12.", "gsm8k", strict=True) == "12"


@pytest.mark.fast
def test_canonical_number_is_exact():
    assert canonical_number("0.1") == "0.1"
    assert canonical_number("1/3") == "1/3"
    assert canonical_number("6/4") == "1.5"
    assert canonical_number("1/0") is None


@pytest.mark.fast
def test_parsing_is_deterministic_and_rejects_unknown_tasks():
    text = "\\boxed{\\left(\\frac{3}{2}, -1\\right)}"
    assert len({parse_answer(text, "math") for _ in range(3)}) == 1
    assert parse_answer(None, "gsm8k") is None
    with pytest.raises(ValueError, match="unknown task 'mmlu'"):
        parse_answer("B", "mmlu")


@pytest.mark.slow
def test_question_loader_golds_parse_to_fixed_point_labels():
    """The question loaders' raw gold strings (the data contract) give the same labels as the files."""
    questions = importlib.import_module("thinkprobe.generate.questions")
    bench = corpus_path("benchmarks")
    specs = [("gsm8k", "gsm8k/test.jsonl"), ("svamp", "svamp/SVAMP.json"),
             ("math", "math-evaluation-harness/data/math/DERIVED_algebra_test.jsonl"),
             ("arc", "arc-challenge-skywork/data/arc/test.jsonl"),
             ("arc", "arc-genmc/data/arc_easy/official/test.jsonl")]
    counts = {}
    for source, rel in specs:
        qset = questions.read_question_set({"source": source, "name": source, "path": str(bench / rel)})
        for q in qset.questions:
            label = parse_answer(q.gold, q.task)
            assert label is not None, (q.id, q.gold)
            assert parse_answer(label, q.task) == label, (q.id, q.gold, label)
            if q.task == "math":
                assert label == parse_answer(f"The final answer is $\\boxed{{{q.gold}}}$.", "math"), q.id
        counts[rel] = len(qset.questions)
    assert counts["gsm8k/test.jsonl"] == 1319 and counts["svamp/SVAMP.json"] == 1000


@pytest.mark.fast
def test_real_reasoning_model_choice_answers_parse():
    """MMLU answers of DeepSeek-R1, QwQ-32B and Gemini-thinking (thought-branches corpus): the final
    choice stated in the answer part, and in the whole response (reasoning + answer), is the recorded one."""
    import glob

    folder = corpus_path("thought-branches", "faithfulness", "good_problems")
    n = 0
    for path in sorted(glob.glob(str(folder / "*.json"))):
        with open(path, encoding="utf-8") as fh:
            for rec in json.load(fh):
                assert parse_answer(rec["post_reasoning"], "arc") == rec["answer"], (rec["model"], rec["pn"])
                assert parse_answer(rec["response_text"], "arc") == rec["answer"], (rec["model"], rec["pn"])
                n += 1
    assert n > 100


@pytest.mark.fast
def test_arc_numbered_list_is_not_an_answer():
    assert parse_answer("1. Gravity pulls objects down.\n2. So the planet spins.", "arc") is None
    assert parse_answer("1. Gravity pulls.\n2. Days get shorter, so the answer is (C).", "arc") == "C"


@pytest.mark.fast
def test_the_word_answer_without_a_connector_is_no_anchor():
    # "to answer 2 parts" is reasoning, not an answer statement: the last number / no key decides
    assert parse_answer("To answer 2 parts, add 5 and 7 to get 12.", "gsm8k") == "12"
    assert parse_answer("To answer 2 parts, add 5 and 7 to get 12.", "gsm8k", strict=True) is None
    assert parse_answer("I need to answer 3 things first.", "arc") is None
