"""The hand-checked labelled set of real final answers (tests/data/answer_labels.jsonl, issue 33).

Each row names its source file in the corpus (``../shared/corpus``) and its record, the task, the form of the
statement and the label a careful reader gives it (checked by reading the answer). Text from an MIT-licensed
source (thought-branches) is stored, the answer tail only; text from a source without a license
(steering-thinking-llms) is read from the corpus at test time (``tail_chars`` of the answer after
``</think>``), and those rows skip when the corpus is absent. One test per form of statement."""

from __future__ import annotations


import pytest

from .answer_fixture import FIXTURE, fixture_rows, row_choices
from .answer_fixture import row_text as _row_text
from .conftest import CORPUS, corpus_path
from thinkprobe.trajectories.parsing import parse_answer

pytestmark = pytest.mark.fast

def row_text(row: dict) -> str:
    """A row's text; a row kept by reference skips when the corpus is absent."""
    if row["text"] is None:
        corpus_path(*row["source"].split("/"))
    return _row_text(row, CORPUS)


FORMS = sorted({r["form"] for r in fixture_rows()})


@pytest.mark.parametrize("form", FORMS)
def test_every_real_answer_of_a_form_gets_its_label(form):
    rows = [r for r in fixture_rows() if r["form"] == form]
    assert rows
    wrong = [(r["source"], r["record"], r["expected"], parse_answer(row_text(r), r["task"], choices=row_choices(r)))
             for r in rows if parse_answer(row_text(r), r["task"], choices=row_choices(r)) != r["expected"]]
    assert not wrong, wrong


def test_the_fixture_covers_the_sources_and_stays_small():
    rows = fixture_rows()
    assert len(rows) >= 280 and FIXTURE.stat().st_size < 150_000
    assert {r["task"] for r in rows} == {"choice", "gsm8k"}
    for r in rows:
        assert r["source"] and r["record"], r
        assert (r["expected"] is None) == r["form"].endswith("states_no_answer"), r  # null only where none is stated
        assert r["text"] is None or len(r["text"]) <= 600, r["record"]


# Forms the issue quotes from held-out real answers (not in the corpus): each a committed statement.
STATED = [
    ("The mechanism described corresponds to **B**.", "B"),
    ("Of the values given, the closest option is D.", "D"),
    ("\\boxed{\\text{Option C}}", "C"),
    ("\\boxed{B. Sunlight}", "B"),
    ("All of this points to the effect of friction (C).", "C"),
    ("Weighing these,\n\n**C.**", "C"),
    ("The correct answer is B.\n\nHmm, wait. Reconsidering the units, so actually it is **D**.", "D"),
    ("**Final Answer**\n\n**A. The cell membrane**", "A"),
    ("The answer is 3.2 hours.", None),
    ("If the answer is B, the pressure would fall.", None),
    ("The answer is (F).", None),  # outside the item's four letters
    ("Since A is not right, the answer is B.", "B"),  # a negation in another clause hedges nothing
    ("Let me check whether the answer is C.", None),
    ("The answer is not C.", None),
    ("So the answer is B or C.", None),
    ("Is the answer C? Yes, the answer is C.", "C"),
]


@pytest.mark.parametrize(("text", "expected"), STATED)
def test_the_issue_forms_get_their_label(text, expected):
    assert parse_answer(text, "choice", choices=tuple((k, "") for k in "ABCD")) == expected


def test_an_option_text_is_matched_only_when_unambiguous():
    choices = (("A", "ice"), ("B", "steam"), ("C", "liquid water"), ("D", "water"))
    assert parse_answer("The answer is steam.", "choice", choices=choices) == "B"
    assert parse_answer("The answer is water.", "choice", choices=choices) == "D"
    assert parse_answer("The answer is liquid.", "choice", choices=choices) is None


def test_a_megabyte_answer_is_labelled_in_bounded_time():
    import time

    text = ("reasoning " * 100_000) + "\nThe answer is (C)."
    t0 = time.perf_counter()
    assert parse_answer(text, "choice") == "C"
    assert parse_answer("x" * 2_000_000, "gsm8k") is None
    assert time.perf_counter() - t0 < 5
