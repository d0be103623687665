"""The second held-out labelled set (tests/data/answer_labels_heldout2.jsonl, issue 33): real final answers from
corpus records neither the fixture (tests/data/answer_labels.jsonl) nor the development set
(tests/data/answer_labels_heldout.jsonl) uses, each read and labelled by hand, and measured once before any fix
(bench/README.md, "Answer labels: a second held-out set": 0.745 of the plain statements labelled as stated
before, 0.802 after the fixes made on the development set). Its misses are left unfixed so that it stays held
out; :data:`NOT_AS_READ` lists them (record and model), so a change that breaks a row read as stated fails
here, and one that mends a row says to take it off the list (and that the set is no longer held out for that
class)."""

from __future__ import annotations

import json

import pytest

from .answer_fixture import (FIXTURE, HELD_OUT, HELD_OUT_2, held_out_2_rows, held_out_2_text, held_out_choices,
                             held_out_expected)
from .conftest import CORPUS, corpus_path
from thinkprobe.trajectories.parsing import parse_answer

pytestmark = pytest.mark.fast

#: "record | model" of every row the extractor does not read as the reader did (classes: bench/README.md).
NOT_AS_READ = {
    "pn=1163 model=qwen/qwen-2.5-72b-instruct reasoning_text tail | qwen/qwen-2.5-72b-instruct",
    "pn=530 model=qwen/qwq-32b-preview reasoning_text tail | qwen/qwq-32b-preview",
    "pn=272 model=deepseek-reasoner reasoning_text tail | deepseek-reasoner",
    "pn=390 model=deepseek-reasoner reasoning_text tail | deepseek-reasoner",
    "pn=458 model=deepseek-reasoner reasoning_text tail | deepseek-reasoner",
    "row=0 | qwen2.5-32b-instruct",
    "row=10 | llama-3.3-70b-instruct",
    "row=14 | qwen2.5-14b-instruct",
    "row=15 | qwen2.5-1.5b-instruct",
    "row=15 | qwen2.5-14b-instruct",
    "row=15 | qwen2.5-32b-instruct",
    "row=17 | llama-3.1-8b-instruct",
    "row=23 | llama-3.1-8b-instruct",
    "row=28 | llama-3.1-8b-instruct",
    "row=28 | llama-3.3-70b-instruct",
    "row=28 | qwen2.5-1.5b-instruct",
    "row=28 | qwen2.5-14b-instruct",
    "row=28 | qwen2.5-32b-instruct",
    "row=34 | qwen2.5-1.5b-instruct",
    "row=34 | qwen2.5-14b-instruct",
    "row=34 | qwen2.5-32b-instruct",
    "row=38 | qwen2.5-14b-instruct",
    "row=70 | qwen2.5-14b-instruct",
    "row=70 | qwen2.5-32b-instruct",
    "row=71 | qwen2.5-1.5b-instruct",
    "row=71 | qwen2.5-14b-instruct",
    "row=71 | qwen2.5-32b-instruct",
    "row=88 | llama-3.1-8b-instruct",
    "row=88 | qwen2.5-14b-instruct",
    "row=88 | qwen2.5-32b-instruct",
    "row=94 | llama-3.1-8b-instruct",
    "row=94 | qwen2.5-32b-instruct",
    "row=97 | qwen2.5-32b-instruct",
    "row=98 | llama-3.3-70b-instruct",
    "row=98 | qwen2.5-1.5b-instruct",
    "row=98 | qwen2.5-14b-instruct",
    "row=77 question_id=334 | deepseek-r1-distill-llama-8b",
    "row=7 | qwen2.5-14b-instruct",
    "row=84 | qwen2.5-1.5b-instruct",
    "row=99 question_id=155 | deepseek-r1-distill-llama-8b",
}


def _key(row: dict) -> str:
    return f"{row['record']} | {row['model']}"


def _text(row: dict) -> str:
    if row["text"] is None:
        corpus_path(*row["source"].split("/"))
    return held_out_2_text(row, CORPUS)


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
    assert misses <= NOT_AS_READ, sorted(misses - NOT_AS_READ)
    assert NOT_AS_READ <= misses, f"read now, take off NOT_AS_READ: {sorted(NOT_AS_READ - misses)}"
