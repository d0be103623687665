"""Question sets: the builtin 200 open-ended questions, benchmark loaders on the real files, prompt variants."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from thinkprobe.generate.questions import (
    PROMPT_VARIANTS, Question, QuestionSetError, format_prompt, last_boxed, load_question_set, number_string,
    read_question_set,
)

from .conftest import corpus_path


DOMAINS = {"Ethical Dilemmas", "Philosophical Inquiry", "Strategic Planning", "Creative Ideation", "Geopolitics",
           "Economics", "Scientific Reasoning", "Public Policy", "Technology and Society", "Counterfactual History"}


# ------------------------------------------------------------------------------------ builtin questions


@pytest.fixture(scope="module")
def open200():
    return load_question_set({"name": "open200", "source": "builtin"})


@pytest.mark.fast
def test_builtin_set_has_200_questions_20_per_domain(open200):
    assert len(open200) == 200
    assert Counter(q.domain for q in open200) == {d: 20 for d in DOMAINS}
    assert all(q.task == "open" and q.gold is None and q.question_set == "open200" for q in open200)


@pytest.mark.fast
def test_builtin_ids_and_texts_unique_and_slugged(open200):
    assert len({q.id for q in open200}) == 200
    assert len({q.text.strip().lower() for q in open200}) == 200
    for q in open200:
        slug, num = q.id.rsplit("-", 1)
        assert slug == q.domain.lower().replace(" and ", "-").replace(" ", "-")
        assert 1 <= int(num) <= 20 and len(num) == 2
        assert q.text.rstrip().endswith(("?", ".")) and len(q.text.split()) >= 15


@pytest.mark.fast
def test_builtin_questions_are_not_near_duplicates(open200, encoder):
    emb = np.asarray(encoder.encode([q.text for q in open200]), dtype=np.float64)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    sim = emb @ emb.T
    np.fill_diagonal(sim, -1.0)
    i, j = np.unravel_index(int(np.argmax(sim)), sim.shape)
    assert sim[i, j] <= 0.9, f"near-duplicates: {open200[i].id} and {open200[j].id} (cosine {sim[i, j]:.3f})"


@pytest.mark.fast
def test_limit_offset_and_ids_select_stably(open200):
    window = load_question_set({"source": "builtin", "offset": 20, "limit": 3})
    assert [q.id for q in window] == [q.id for q in open200[20:23]]
    picked = load_question_set({"source": "builtin", "ids": ["economics-03", "ethical-dilemmas-02"]})
    assert [q.id for q in picked] == ["ethical-dilemmas-02", "economics-03"]  # file order, not list order
    with pytest.raises(QuestionSetError, match="economics-99"):
        load_question_set({"source": "builtin", "ids": ["economics-99"]})


@pytest.mark.parametrize("spec, message", [
    ({"source": "nope"}, "unknown source 'nope'"),
    ({"source": "gsm8k"}, "needs a 'path'"),
    ({"source": "gsm8k", "path": "absent/test.jsonl"}, "question file not found"),
    ({"source": "builtin", "limit": -1}, "limit = -1"),
    ({"source": "builtin", "lmit": 3}, "unknown key"),
])
@pytest.mark.fast
def test_bad_specs_raise_a_named_error(spec, message):
    with pytest.raises(QuestionSetError, match=message):
        load_question_set(spec)


# ------------------------------------------------------------------------------- malformed records


@pytest.mark.fast
def test_malformed_jsonl_records_are_skipped_with_file_and_line(tmp_path):
    path = tmp_path / "test.jsonl"
    lines = [
        {"question": "Ann has 1,200 apples and buys 3. How many?", "answer": "1200+3=1203\n#### 1,203"},
        "{not json",
        {"question": "No gold here?", "answer": "just words"},
        ["a", "list"],
        {"question": "Bob has 2 pens. How many?", "answer": "#### 2"},
    ]
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    result = read_question_set({"name": "g", "source": "gsm8k", "path": str(path)})
    assert [q.gold for q in result.questions] == ["1203", "2"]
    assert [(s.line, s.path) for s in result.skipped] == [(2, str(path)), (3, str(path)), (4, str(path))]
    assert "not valid JSON" in result.skipped[0].reason
    assert "####" in result.skipped[1].reason
    assert "not an object" in result.skipped[2].reason
    assert str(result.skipped[0]).startswith(f"{path}:2: ")


@pytest.mark.fast
def test_json_array_records_report_their_starting_line(tmp_path):
    path = tmp_path / "SVAMP.json"
    path.write_text('[\n  {"ID": "a", "Body": "Tom had 5 apples", "Question": "How many now?", "Answer": 5.0},\n'
                    '  {"ID": "b", "Body": "x.",\n   "Question": "y?"},\n'
                    '  {"ID": "c", "Body": "Half of 3.", "Question": "What is it?", "Answer": 1.5}\n]\n')
    result = read_question_set({"source": "svamp", "path": str(path)})
    assert [(q.id, q.text, q.gold) for q in result.questions] == [
        ("svamp-a", "Tom had 5 apples. How many now?", "5"), ("svamp-c", "Half of 3. What is it?", "1.5")]
    assert [(s.line, s.reason) for s in result.skipped] == [(3, "missing field 'Answer'")]


@pytest.mark.fast
def test_arc_digit_labels_map_to_letters_and_bad_gold_is_skipped(tmp_path):
    path = tmp_path / "arc.jsonl"
    recs = [
        {"id": "q1", "question": {"stem": "Pick two.", "choices": [{"text": "one", "label": "1"},
                                                                   {"text": "two", "label": "2"}]},
         "answerKey": "2"},
        {"id": "q2", "question": {"stem": "Pick.", "choices": [{"text": "x", "label": "A"}]}, "answerKey": "C"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    result = read_question_set({"source": "arc", "path": str(path)})
    (q,) = result.questions
    assert (q.id, q.gold, q.choices) == ("arc-q1", "B", (("A", "one"), ("B", "two")))
    assert result.skipped[0].line == 2 and "none of the choices" in result.skipped[0].reason


@pytest.mark.fast
def test_last_boxed_handles_nesting_and_takes_the_last():
    assert last_boxed(r"first \boxed{1} then \boxed{\frac{a}{b^{2}}} done") == r"\frac{a}{b^{2}}"
    assert last_boxed(r"$\boxed{(-\infty, 3] \cup \{5\}}$") == r"(-\infty, 3] \cup \{5\}"
    assert last_boxed(r"so \fbox{7}") == "7"
    assert last_boxed(r"\boxed 12$") == "12"
    assert last_boxed(r"unclosed \boxed{3") is None
    assert last_boxed("none") is None
    assert [number_string(x) for x in (51.0, 0.25, "3.0", 1e3)] == ["51", "0.25", "3", "1000"]


# ------------------------------------------------------------------------------------------ prompts


@pytest.mark.fast
def test_prompt_variants():
    q_open = Question("x-01", "open200", "open", "Should we?", domain="Ethics")
    assert format_prompt(q_open, "native") == "Should we?"
    assert format_prompt(q_open, "plain") == "Should we?"
    cot = format_prompt(q_open, "cot")
    assert cot.startswith("Should we?\n\n") and "<think>" in cot and "</think>" in cot and "step by step" in cot
    q_math = Question("math-1", "m", "math", "Solve $x+1=2$.", gold="1")
    assert format_prompt(q_math, "native").endswith("\\boxed{}.")
    assert "\\boxed{}" in format_prompt(q_math, "cot")
    q_gsm = Question("g", "g", "gsm8k", "How many?", gold="3")
    assert "The answer is N" in format_prompt(q_gsm, "cot")
    q_arc = Question("arc-1", "a", "arc", "Which?", gold="A", choices=(("A", "this"), ("B", "that")))
    assert format_prompt(q_arc, "cot").startswith("Which?\nA. this\nB. that\n\n")
    assert format_prompt(q_arc, "plain") == "Which?\nA. this\nB. that"
    assert set(PROMPT_VARIANTS) >= {"native", "cot"}
    with pytest.raises(ValueError, match="unknown prompt variant 'nope'"):
        format_prompt(q_open, "nope")


# ----------------------------------------------------------------------------- real benchmark files

BENCH = [
    ("gsm8k", ("benchmarks", "gsm8k", "test.jsonl"), 1319),
    ("svamp", ("benchmarks", "svamp", "SVAMP.json"), 1000),
    ("math", ("benchmarks", "math-evaluation-harness", "data", "math", "test.jsonl"), 1187),
    ("math", ("benchmarks", "math-evaluation-harness", "data", "math", "DERIVED_algebra_test.jsonl"), 1187),
    ("arc", ("benchmarks", "arc-challenge-skywork", "data", "arc", "test.jsonl"), 1172),
    ("arc", ("benchmarks", "arc-genmc", "data", "arc_easy", "official", "test.jsonl"), 2376),
]


@pytest.mark.parametrize("source, parts, count", BENCH, ids=[f"{s}-{c}" for s, _, c in BENCH])
@pytest.mark.slow
def test_every_gold_of_the_real_benchmark_loads(source, parts, count):
    path = corpus_path(*parts)
    result = read_question_set({"name": source, "source": source, "path": str(path)})
    assert result.skipped == []
    qs = result.questions
    assert len(qs) == count
    assert len({q.id for q in qs}) == count
    assert all(q.task == source and q.gold and q.text for q in qs)
    again = load_question_set({"name": source, "source": source, "path": str(path)})
    assert [(q.id, q.gold, q.text) for q in again] == [(q.id, q.gold, q.text) for q in qs]
    if source in ("gsm8k", "svamp"):
        for q in qs:
            float(q.gold)
            assert "," not in q.gold and not q.gold.endswith(".0")
    if source == "arc":
        for q in qs:
            letters = [lab for lab, _ in q.choices]
            assert q.gold in letters and all(lab in "ABCDE" for lab in letters)
            assert letters == sorted(letters) and len(letters) >= 3


@pytest.mark.slow
def test_real_gold_answers_match_independent_reading():
    """Raw records read here, without the loaders, against the loaders' gold and ids."""
    gsm = corpus_path("benchmarks", "gsm8k", "test.jsonl")
    raw = [json.loads(line) for line in gsm.read_text().splitlines()]
    qs = load_question_set({"source": "gsm8k", "path": str(gsm)})
    assert qs[0].gold == "18" and raw[0]["answer"].endswith("#### 18")
    assert [q.gold for q in qs] == [r["answer"].split("####")[-1].strip().replace(",", "") for r in raw]

    svamp = json.loads(corpus_path("benchmarks", "svamp", "SVAMP.json").read_text())
    qs = load_question_set({"source": "svamp", "path": str(corpus_path("benchmarks", "svamp", "SVAMP.json"))})
    assert [q.id for q in qs] == [f"svamp-{r['ID']}" for r in svamp]
    assert [float(q.gold) for q in qs] == [float(r["Answer"]) for r in svamp]

    # MATH-500 carries its own "answer" field: the loader's last-\boxed gold must equal it on the overlap.
    m500 = corpus_path("benchmarks", "math-evaluation-harness", "data", "math_oai", "test.jsonl")
    answers = {json.loads(line)["problem"].strip(): json.loads(line)["answer"] for line in m500.read_text().splitlines()}
    math = load_question_set({"source": "math", "path": str(
        corpus_path("benchmarks", "math-evaluation-harness", "data", "math", "test.jsonl"))})
    overlap = [(q.gold, answers[q.text]) for q in math if q.text in answers]
    assert len(overlap) > 100
    assert all(a == b for a, b in overlap)

    arc = corpus_path("benchmarks", "arc-challenge-skywork", "data", "arc", "test.jsonl")
    first = json.loads(arc.read_text())[0]
    q = load_question_set({"source": "arc", "path": str(arc), "limit": 1})[0]
    assert (q.id, q.gold, q.choices[2]) == (f"arc-{first['id']}", first["answer"], ("C", first["C"]))


@pytest.mark.fast
def test_ids_select_benchmark_questions_by_source_id():
    path = corpus_path("benchmarks", "svamp", "SVAMP.json")
    qs = load_question_set({"source": "svamp", "path": str(path), "ids": ["chal-2", "svamp-chal-1"]})
    assert [(q.id, q.gold) for q in qs] == [("svamp-chal-1", "51"), ("svamp-chal-2", "1")]
    window = load_question_set({"source": "svamp", "path": str(path), "offset": 1, "limit": 1})
    assert [q.id for q in window] == ["svamp-chal-2"]
