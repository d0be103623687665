"""The third labelled set of real final answers (tests/data/answer_labels_heldout3.jsonl, issue 33), held out until its
misses were measured and a **development set** since: texts from corpus records that none of the fixture
(tests/data/answer_labels.jsonl) and the two earlier development sets (tests/data/answer_labels_heldout.jsonl,
tests/data/answer_labels_heldout2.jsonl) uses, each read and labelled by hand and committed before the extractor was
run on any of them, then measured once with no change to the extractor (bench/README.md, "Answer labels: a third
held-out set, measured before any fix": 9 of 12 plain statements). Its three choice misses were then fixed, one test
per class below with the set's own rows and synthetic edge cases, so its figure after them is in-sample.
:data:`NOT_AS_READ` lists every row the extractor still does not read as the reader did (record and model, with the
class), so a change that breaks a row read as stated fails here, and one that mends a row says to take it off the
list."""

from __future__ import annotations

import pytest

from .answer_fixture import (FIXTURE, HELD_OUT, HELD_OUT_2, HELD_OUT_3, NO_ANSWER_FORMS, _rows, held_out_3_rows,
                             held_out_choices, held_out_expected, row_key, set_text)
from .conftest import corpus_path
from thinkprobe.trajectories.parsing import parse_answer

pytestmark = pytest.mark.fast

_CUT = ("states no answer, gets a number: a reasoning cut by the run's token limit before its answer, read as a number "
        "it was computing or weighing (the text gives parse_answer no sign of the cut; continuation_label's cut path "
        "reads all 75 such rows as null)")
#: "record | model" of every row the extractor does not read as the reader did, with its class (bench/README.md,
#: "Answer labels: the third set's choice misses fixed").
NOT_AS_READ = {
    **{f"{record} | {model}": _CUT for record, model in [
        ("row=0", "deepseek-r1-distill-llama-70b"), ("row=0", "deepseek-r1-distill-qwen-1.5b"),
        ("row=0", "deepseek-r1-distill-qwen-32b"), ("row=10", "deepseek-r1-distill-qwen-32b"),
        ("row=38", "deepseek-r1-distill-qwen-1.5b"), ("row=38", "deepseek-r1-distill-qwen-14b"),
        ("row=41", "deepseek-r1-distill-qwen-1.5b"), ("row=57", "deepseek-r1-distill-qwen-1.5b"),
        ("row=57", "deepseek-r1-distill-qwen-14b"), ("row=77", "deepseek-r1-distill-qwen-1.5b"),
        ("row=78", "deepseek-r1-distill-llama-70b"), ("row=78", "deepseek-r1-distill-qwen-32b"),
        ("row=94", "deepseek-r1-distill-qwen-1.5b"), ("row=94", "deepseek-r1-distill-qwen-32b"),
        ("row=97", "deepseek-r1-distill-qwen-1.5b"),
        *((f"row={i}", "deepseek-r1-distill-llama-8b") for i in (
            "24 question_id=7", "47 question_id=326", "118 question_id=31", "130 question_id=322",
            "278 question_id=312", "285 question_id=337", "295 question_id=43", "307 question_id=306",
            "316 question_id=319", "377 question_id=33", "400 question_id=36", "458 question_id=81",
            "475 question_id=13", "489 question_id=346")),
    ]},
}


_key, _text = row_key, set_text


def test_the_set_is_labelled_and_in_no_earlier_set():
    rows = held_out_3_rows()
    assert len(rows) >= 90 and HELD_OUT_3.stat().st_size < 100_000
    assert len({(r["source"], _key(r)) for r in rows}) == len(rows)
    earlier = [r for path in (FIXTURE, HELD_OUT, HELD_OUT_2) for r in _rows(path)]
    used = {(r["source"], r["record"].split()[0], r.get("model")) for r in earlier if r.get("text") is None}
    texts = [r["text"] for r in earlier if r.get("text")]
    for r in rows:
        assert r["source"] and r["record"] and r["form"] and r["model"], r
        assert (r["stated"] is None) == (r["form"] in NO_ANSWER_FORMS), _key(r)
        assert r["plain"] == (r["form"] != "paraphrase"), _key(r)
        if r["text"] is not None:  # a stored text (thought-branches): no earlier row holds it, under any record
            assert not any(r["text"].strip()[-80:] in t for t in texts), _key(r)
        else:  # a corpus record: no earlier row of the same file, record and model, whichever part it read
            assert (r["source"], r["record"].split()[0], r["model"]) not in used, _key(r)
            assert r["tail_chars"] and r.get("part") in (None, "reasoning"), _key(r)
        if r["task"] == "choice":
            assert r["stated"] is None or r["stated"] in {k for k, _ in r["choices"]}, _key(r)


def test_every_row_resolves_in_the_corpus():
    corpus_path()  # skips, saying what is missing, where the corpus is absent
    for r in held_out_3_rows():
        text = _text(r)
        assert text.strip(), _key(r)
        if r["text"] is None:
            assert len(text) == r["tail_chars"], _key(r)  # the record is long enough: its tail, not all of a short one
            assert "</think>" not in text, _key(r)


def test_every_row_read_as_stated_stays_read_and_the_list_is_current():
    misses = set()
    for r in held_out_3_rows():
        if parse_answer(_text(r), r["task"], choices=held_out_choices(r)) != held_out_expected(r):
            misses.add(_key(r))
    assert misses <= set(NOT_AS_READ), sorted(misses - set(NOT_AS_READ))
    assert set(NOT_AS_READ) <= misses, f"read now, take off NOT_AS_READ: {sorted(set(NOT_AS_READ) - misses)}"


_ROWS = {"odd": "pn=819 model=qwen/qwq-32b-preview reasoning_text tail", "quoted": "pn=371 model=qwen/qwq-32b-preview "
         "reasoning_text tail", "cover": "pn=27 model=deepseek-reasoner reasoning_text tail"}


def _row(name: str) -> dict:
    return next(r for r in held_out_3_rows() if r["record"] == _ROWS[name])


@pytest.mark.parametrize("name", sorted(_ROWS))
def test_the_sets_choice_misses_are_read(name):
    """The three plain choices the set's measurement missed ('C is the odd one out because ...', '(D) "all of the
    above" would be the correct answer because ...', 'So, putting it all together, (A) seems to cover ...')."""
    r = _row(name)
    assert parse_answer(_text(r), "choice", choices=held_out_choices(r)) == r["stated"]


ABCD = [("A", "ecological"), ("B", "equitable"), ("C", "evolutionary"), ("D", "all of the above.")]


@pytest.mark.parametrize("text, expected", [
    # the exception a "which is not" question asks for, named by its key
    ("So, the reasoning is that C is the odd one out because it comes from within.", "C"),
    ("Clearly B is the exception here.", "B"),
    ("Is C the odd one out? Maybe C is the odd one out, or D.", None),  # asked, then hedged
    ("If C is the odd one out, then the answer changes.", None),
    # a key, its option text in quotes, then the predicate
    ('Therefore, (D) "all of the above" would be the correct answer because all three hold.', "D"),
    ('Therefore, (D) "all of the above" might be the correct answer.', None),
    ('So (B) "equitable" is the correct answer, not (D).', "B"),
    # a conclusion with an opening phrase, "seems to" and a verb that says the option answers the question
    ("So, putting it all together, (A) seems to cover the necessary aspects: x, y and z.", "A"),
    ("In conclusion, (C) covers every case.", "C"),
    ("So, putting it all together, maybe (A) seems to cover it.", None),
    ("So, A seems to cover more ground than I thought, but the answer is (B).", "B"),  # the last commitment wins
])
def test_the_third_sets_classes_on_edge_cases(text, expected):
    assert parse_answer(text, "choice", choices=ABCD) == expected
