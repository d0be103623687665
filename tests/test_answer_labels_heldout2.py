"""The second labelled set of real final answers (tests/data/answer_labels_heldout2.jsonl, issue 33), held out until
its misses were fixed and a **development set** since: real final answers from corpus records neither the fixture
(tests/data/answer_labels.jsonl) nor the first development set (tests/data/answer_labels_heldout.jsonl) uses, each
read and labelled by hand, measured once before any fix (bench/README.md, "Answer labels: a second held-out set":
0.745 of the plain statements labelled as stated before, 0.802 after the fixes made on the first development set).
Three classes of its misses were then fixed, one test per class below with the set's own rows (texts read from the
corpus or the set, never copied here) and synthetic edge cases, so its figure after them is in-sample, no measure out
of sample (bench/README.md, "Answer labels: the second set's classes fixed"). :data:`NOT_AS_READ` lists the rows
still not read as the reader did (record and model, with the class), so a change that breaks a row read as stated
fails here, and one that mends a row says to take it off the list."""

from __future__ import annotations

import json

import pytest

from .answer_fixture import (FIXTURE, HELD_OUT, HELD_OUT_2, held_out_2_rows, held_out_choices,
                             held_out_expected, row_key, set_text)
from thinkprobe.trajectories.parsing import parse_answer

pytestmark = pytest.mark.fast

_OTHER_NUMBER = ("the final statement's result verb names another number than the answer, which an earlier sentence "
                 "or a later clause states ('is **1**. This means ... 30 red marbles', 'are 1258 and 34679, with their "
                 "product being 43566262', 'which is 1, but we can divide both by 1 and get 91/228')")
_CUT = "a final sentence cut by the run's token limit after the answer ('However, the', 'Thus, the probability that ...')"
#: "record | model" of every row the extractor does not read as the reader did, with its class (bench/README.md,
#: "Answer labels: the second set's classes fixed").
NOT_AS_READ = {
    "row=15 | qwen2.5-1.5b-instruct": _OTHER_NUMBER,
    "row=38 | qwen2.5-14b-instruct": _OTHER_NUMBER,
    "row=28 | llama-3.1-8b-instruct": _OTHER_NUMBER,
    "row=28 | llama-3.3-70b-instruct": _CUT,
    "row=77 question_id=334 | deepseek-r1-distill-llama-8b": _CUT,
    "row=14 | qwen2.5-14b-instruct": "a mis-grouped number (646,969,3230)",
    "row=88 | llama-3.1-8b-instruct": "a thousands comma in a plain fraction's denominator (2/6,725)",
    "row=98 | qwen2.5-1.5b-instruct": "the asked value in the first of two boxes",
    "row=7 | qwen2.5-14b-instruct": "a number word (**three**)",
    "row=99 question_id=155 | deepseek-r1-distill-llama-8b": "a box of a word and a number (\\boxed{Spring\\ 5})",
    "row=17 | llama-3.1-8b-instruct": "states no answer, gets a number: an unfinished list of steps ending in one",
    "row=23 | llama-3.1-8b-instruct": "states no answer, gets a number: a runaway line of zeros",
}


_key, _text = row_key, set_text


def test_the_set_is_labelled_and_in_neither_earlier_set():
    rows = held_out_2_rows()
    assert len(rows) >= 200 and HELD_OUT_2.stat().st_size < 200_000
    assert len({(r["source"], _key(r)) for r in rows}) == len(rows)
    earlier = [json.loads(line) for path in (FIXTURE, HELD_OUT)
               for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    used = {(r["source"], r["record"].split(" tail")[0].removesuffix(" reasoning_text").split()[0], r.get("model"))
            for r in earlier}
    texts = [r["text"] for r in earlier if r.get("text")]
    for r in rows:
        assert r["source"] and r["record"] and r["form"] and r["model"], r
        assert (r["stated"] is None) == (r["form"] in ("states_no_answer", "hedged")), _key(r)
        assert r["plain"] == (r["form"] != "paraphrase"), _key(r)
        if r["text"] is not None:  # a stored text (thought-branches): no earlier row holds it, under any record
            assert not any(r["text"].strip()[-80:] in t for t in texts), _key(r)
        else:  # a corpus record: no earlier row of the same file, record and model
            assert (r["source"], r["record"].split()[0], r["model"]) not in used, _key(r)
        if r["task"] == "choice":
            assert r["stated"] is None or r["stated"] in {k for k, _ in r["choices"]}, _key(r)


def test_every_row_read_as_stated_stays_read_and_the_list_is_current():
    misses = set()
    for r in held_out_2_rows():
        if parse_answer(_text(r), r["task"], choices=held_out_choices(r)) != held_out_expected(r):
            misses.add(_key(r))
    assert misses <= set(NOT_AS_READ), sorted(misses - set(NOT_AS_READ))
    assert set(NOT_AS_READ) <= misses, f"read now, take off NOT_AS_READ: {sorted(set(NOT_AS_READ) - misses)}"


# One test per class of miss the set showed that was fixed (issue 33): the set's own rows, by record and model.

def _row(key: str) -> dict:
    (row,) = [r for r in held_out_2_rows() if _key(r) == key]
    return row


def _reads_as_stated(key: str) -> None:
    row = _row(key)
    expected = held_out_expected(row)
    assert expected is not None, key  # a row that states an answer
    assert parse_answer(_text(row), row["task"], choices=held_out_choices(row)) == expected, key


@pytest.mark.parametrize("key", [
    "row=15 | qwen2.5-14b-instruct", "row=15 | qwen2.5-32b-instruct",  # "... is \( \frac{14}{33} \)."
    "row=28 | qwen2.5-1.5b-instruct", "row=28 | qwen2.5-14b-instruct", "row=28 | qwen2.5-32b-instruct",
    "row=34 | qwen2.5-1.5b-instruct", "row=34 | qwen2.5-14b-instruct", "row=34 | qwen2.5-32b-instruct",
    "row=70 | qwen2.5-14b-instruct", "row=70 | qwen2.5-32b-instruct",
    "row=71 | qwen2.5-1.5b-instruct", "row=71 | qwen2.5-14b-instruct", "row=71 | qwen2.5-32b-instruct",
    "row=88 | qwen2.5-14b-instruct", "row=88 | qwen2.5-32b-instruct",
    "row=97 | qwen2.5-32b-instruct",
    "row=98 | llama-3.3-70b-instruct", "row=98 | qwen2.5-14b-instruct",  # \frac{3}{10}: the gold 0.3's label
    "row=10 | llama-3.3-70b-instruct",  # \boxed{\frac{47,250}{593,775}}: digit groups in its parts, 30/377
])
def test_a_latex_fraction_in_a_final_statement_is_one_number(key):
    _reads_as_stated(key)


@pytest.mark.parametrize("key", [
    "row=0 | qwen2.5-32b-instruct",  # "the probability of getting no pairs ... is approximately \( 0.5072 \)"
    "row=94 | llama-3.1-8b-instruct", "row=94 | qwen2.5-32b-instruct",  # "... and no three of a kind ... is"
    "row=84 | qwen2.5-1.5b-instruct",  # "Therefore, if you look at a cube from ..., you can see a total of 18 faces"
])
def test_a_final_statement_that_restates_the_question_commits(key):
    _reads_as_stated(key)


@pytest.mark.parametrize("key", [
    "pn=1163 model=qwen/qwen-2.5-72b-instruct reasoning_text tail | qwen/qwen-2.5-72b-instruct",  # the weakest ... (A)
    "pn=530 model=qwen/qwq-32b-preview reasoning_text tail | qwen/qwq-32b-preview",  # (B) seems like the most direct way
    "pn=272 model=deepseek-reasoner reasoning_text tail | deepseek-reasoner",  # So, D explains why ...
    "pn=458 model=deepseek-reasoner reasoning_text tail | deepseek-reasoner",  # (C) ..., making it a more ... answer
    "pn=390 model=deepseek-reasoner reasoning_text tail | deepseek-reasoner",  # So, ... their realistic niche only
])
def test_a_choice_stated_without_an_answer_cue(key):
    _reads_as_stated(key)


@pytest.mark.parametrize(("text", "expected"), [  # the same forms, written otherwise
    ("Weighing them all, the strongest argument would be **(C)**, since it meets the objection.", "C"),
    ("Hmm.\nThe option that lasts is (B). It looks like the best fit.\n\nSo, (D) looks like the simplest explanation.", "D"),
    ("Hmm.\nThus, (B) best describes the effect of the ruling.", "B"),
    ("Hmm.\nIn conclusion, option A addresses the question directly.", "A"),
    ("The rest are too narrow. Option C covers both, which makes it the correct choice.", "C"),
])
def test_a_choice_without_an_answer_cue_written_otherwise(text, expected):
    assert parse_answer(text, "choice", choices=tuple((k, "") for k in "ABCD")) == expected


# Synthetic: every LaTeX fraction form in every numeric task, each equal to its decimal or integer gold.

#: The registry's tasks whose answers are numbers or expressions (every discrete task without lettered options).
NUMERIC_TASKS = ("gsm8k", "math", "svamp")
FRACTIONS = [  # (as written, the gold it equals)
    (r"\frac{3}{4}", "0.75"), (r"\dfrac{3}{4}", "0.75"), (r"\tfrac{3}{4}", "0.75"), (r"\cfrac{3}{4}", "0.75"),
    (r"\frac34", "0.75"), (r"\frac 3 4", "0.75"), (r"\frac{6}{8}", "0.75"), (r"\frac{1.5}{2}", "0.75"),
    (r"\frac{-3}{4}", "-0.75"), (r"-\frac{3}{4}", "-0.75"), (r"\frac{3}{-4}", "-0.75"), (r"- \dfrac{3}{4}", "-0.75"),
    (r"\frac{8}{2}", "4"), (r"\frac{1}{3}", "1/3"), (r"2\frac{1}{2}", "2.5"), (r"\frac{47,250}{593,775}", "30/377"),
]
WRAPPED = ["{}", "${}$", "$$ {} $$", r"\( {} \)", r"\({}\)", r"\[ {} \]", r"\boxed{{{}}}", r"$\boxed{{{}}}$"]
CONTEXTS = ["The answer is {}.", "So, the probability that it rains is {}.", "{}",
            "Simplifying the fraction gives:\n\n{}\n", "**Answer:** {}", "Therefore, she gets {} of the cake."]


def test_the_numeric_tasks_are_every_discrete_task_without_options():
    from thinkprobe import tasks

    assert NUMERIC_TASKS == tuple(n for n in tasks.answer_names() if not tasks.get(n).choices)


#: The contexts where ``math`` reads a number at all: its final sentence takes an expression only after an answer
#: anchor, a result verb or in a display or a box (a bare ``0.75`` in prose or on its own line is null there, as its
#: fraction is).
MATH_READS = {0, 1, 2, 4}


@pytest.mark.parametrize("task", NUMERIC_TASKS)
@pytest.mark.parametrize(("written", "gold"), FRACTIONS, ids=[w for w, _ in FRACTIONS])
def test_every_latex_fraction_form_equals_its_gold_in_every_numeric_task(task, written, gold):
    expected = parse_answer(gold, task)
    assert expected is not None
    wrong = {}
    for wrap in WRAPPED:
        for i, context in enumerate(CONTEXTS):
            text = context.format(wrap.format(written))
            got = parse_answer(text, task)
            # the fraction reads as its gold written in the same place, and where the task reads a number, as the gold
            as_gold = parse_answer(context.format(wrap.format(gold)), task)
            if got != as_gold or (got != expected and (task != "math" or i in MATH_READS)):
                wrong[text] = got
    assert not wrong, wrong


# What must stay null (or keep its other reading), one case or more per class.

@pytest.mark.parametrize("text", [
    r"So the answer is \(\frac{x}{2}\).",  # a fraction of no numbers is no number, never its denominator
    r"Therefore, the probability is \(\frac{1}{0}\).",
    "\\[\n\\frac{\\text{favourable outcomes}}{\\text{all outcomes}}\n\\]",
    r"Step 2: \( \frac{15}{36} + \frac{1",  # cut inside a fraction
    r"Let's consider the fractions \(\frac{8}{9}\) and \(\frac{1}{2}\).",  # a plan, not a result
])
def test_a_fraction_that_states_no_number_stays_null(text):
    for task in ("gsm8k", "svamp"):
        assert parse_answer(text, task) is None, (task, text)


@pytest.mark.parametrize("text", [
    "So, the probability of getting no pairs is not 0.5.",  # the negation qualifies the result itself
    "We verify that there are no perfect squares between 81 and 99, as the next square after 81 is 100.",
    "It seems there's no valid equation that equals **24**.",
    "If you look at the cube from the front, you might see 6 faces.",  # a condition without a conclusion, a hedge
    "Therefore, if you look at the cube from the front, maybe you can see 6 faces.",  # a hedge in the main clause
    "So, the probability that it rains might be 0.3.",  # a hedge after the subject's complement
])
def test_a_negated_or_hedged_final_statement_stays_null(text):
    assert parse_answer(text, "gsm8k") is None, text


@pytest.mark.parametrize(("text", "choices"), [
    ("So, maybe D explains why knowing something false is impossible.", None),  # a hedge
    ("Perhaps the weakest defense would be (A) no case or controversy.", None),
    ("I checked it.\nSo, A plant needs light, making it the best answer.", None),  # the article, no key
    ("I checked it.\n(C) is narrower than (D), making it a better answer.", None),  # which "it": no reader can tell
    ("I checked it.\n(C) might connect it, making it a better answer.", None),
    ("I checked it.\nSo, D doesn't explain why knowing something false is impossible.", None),
    ("So, they use their realistic niche only rather than their fundamental niche only.", "niches"),  # two options
    ("So, the birds might be using their realistic niche only because of the others.", "niches"),
    ("So, the ice melts because it is warm.", "states"),  # one word of an option's text that prose uses anyway
])
def test_a_hedged_or_ambiguous_choice_without_a_cue_stays_null(text, choices):
    named = {"niches": (("A", "their fundamental niche only"), ("B", "their realistic niche only"),
                        ("C", "their ecological niche only"), ("D", "neither niche")),
             "states": (("A", "ice"), ("B", "steam"), ("C", "water"), ("D", "fog"))}
    options = named[choices] if choices else tuple((k, "") for k in "ABCD")
    assert parse_answer(text, "choice", choices=options) is None, text
