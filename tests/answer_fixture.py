"""The hand-checked labelled set of real final answers (tests/data/answer_labels.jsonl): its rows and texts.

Used by tests/test_answer_label_fixture.py and by bench/trajectory_bench.py (``--answer-labels``). A row names
its source file in the corpus and its record, the model, the task, the form of the statement and the label a
careful reader gives it (``expected``; checked by reading the answer). Text from an MIT-licensed source
(thought-branches) is stored, the answer tail only; text from a source without a license file
(steering-thinking-llms) is read from the corpus (the last ``tail_chars`` of the answer after ``</think>``)."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "data" / "answer_labels.jsonl"


def _rows(path: Path) -> list[dict]:
    """The rows of a labelled set (one JSON object a line)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def fixture_rows() -> list[dict]:
    return _rows(FIXTURE)


def row_text(row: dict, corpus: Path) -> str:
    """The answer text of a row: stored, or the tail of the corpus record's answer after ``</think>``
    (:func:`corpus_tail`, which every labelled set shares)."""
    return corpus_tail(row, corpus)


def row_choices(row: dict):
    """The item's option keys (texts unknown to the fixture), or None."""
    return tuple((k, "") for k in row["choices"]) if row.get("choices") else None


# ------------------------------------------------------------------ the held-out set (issue 33, second part)

HELD_OUT = Path(__file__).resolve().parent / "data" / "answer_labels_heldout.jsonl"


def held_out_rows() -> list[dict]:
    """The development set (tests/data/answer_labels_heldout.jsonl; held out until its misses were fixed): real
    answers the extractor was not built on (none is in :data:`FIXTURE`), each read and labelled by hand before
    the extractor was measured on it; a hedge is read as stating no answer (form ``hedged``, ``stated`` None,
    the letter it leans to in ``hedge_leans``). A row: ``source`` (corpus file), ``record``, ``model``, ``task``, ``form`` (how the answer is
    stated), ``text`` (stored, MIT-licensed thought-branches) or None with ``tail_chars`` (read from the
    corpus: the thinking-llms-interp run has no license file), ``stated`` (the answer as the reader reads it:
    a letter, a number or fraction as written; None: the text states no answer), ``plain`` (False: the
    reader infers the choice from a paraphrase of an option, no letter and no option text), ``choices``
    (``[[key, text], ...]``, or None) and ``gold`` (the dataset's answer, where known)."""
    return _rows(HELD_OUT)


def held_out_text(row: dict, corpus: Path) -> str:
    """A held-out row's text: stored, or the last ``tail_chars`` of the record's answer after ``</think>``
    (:func:`corpus_tail`)."""
    return corpus_tail(row, corpus)


def held_out_choices(row: dict):
    """The item's options with their texts (so an answer naming an option's text can be read), or None."""
    return tuple((k, t) for k, t in row["choices"]) if row.get("choices") else None


def held_out_expected(row: dict) -> str | None:
    """The label of what the reader read: the letter, or the task's canonical label of the stated value
    (``3/8`` and ``\\frac{3}{8}`` share one label)."""
    from thinkprobe.trajectories.parsing import parse_answer

    if row["stated"] is None or row["task"] == "choice":
        return row["stated"]
    label = parse_answer(row["stated"], row["task"])
    assert label is not None, f"{row['record']}: the stated value {row['stated']!r} has no label"
    return label


# ------------------------------------------------------------------ the second labelled set (issue 33, the 98% target)

HELD_OUT_2 = Path(__file__).resolve().parent / "data" / "answer_labels_heldout2.jsonl"


def held_out_2_rows() -> list[dict]:
    """The second labelled set (tests/data/answer_labels_heldout2.jsonl): real final answers from records that
    neither :data:`FIXTURE` nor :data:`HELD_OUT` (the first development set) uses, each read and labelled by hand
    and measured once before any fix made after it; a development set since three classes of its misses were fixed
    against it (tests/test_answer_labels_heldout2.py). Rows as :func:`held_out_rows`'; ``form`` ``hedged`` marks a
    hedge ("maybe the answer is (D)", "I'm leaning towards ..."), which states no answer (``stated`` None)."""
    return _rows(HELD_OUT_2)


def answer_part(response: str) -> str:
    """The answer of a corpus response: the text after ``</think>`` (a reasoning model), after the last
    ``assistant`` turn marker (an instruct model's decoded chat, ``system\\n...\\nassistant\\n``), or the whole
    response (an instruct model's reply alone), stripped."""
    if "</think>" in response:
        return response[response.find("</think>") + len("</think>"):].strip()
    if response.startswith("system\n") and "\nassistant\n" in response:
        return response[response.rfind("\nassistant\n") + len("\nassistant\n"):].strip()
    return response.strip()


def held_out_2_text(row: dict, corpus: Path) -> str:
    """A row's text: stored (thought-branches, MIT), or the last ``tail_chars`` of the corpus record's answer
    (:func:`answer_part` of ``response``, steering-thinking-llms, or ``full_response``, thinking-llms-interp)."""
    return corpus_tail(row, corpus)


def corpus_tail(row: dict, corpus: Path) -> str:
    """A row's text: stored (``text``), or the last ``tail_chars`` of its corpus record (``record`` ``row=N ...``:
    the N-th of the ``source`` file's records; ``response``, steering-thinking-llms, or ``full_response``,
    thinking-llms-interp): its :func:`answer_part`, or with ``part`` ``reasoning`` the reasoning, the text before
    ``</think>`` (all of a response that never reaches it), stripped."""
    if row["text"] is not None:
        return row["text"]
    records = json.loads((corpus / row["source"]).read_text(encoding="utf-8"))
    rec = records[int(row["record"].split()[0].removeprefix("row="))]
    response = rec.get("response", rec.get("full_response"))
    if row.get("part") == "reasoning":
        text = response[:response.find("</think>")] if "</think>" in response else response
        return text.strip()[-row["tail_chars"]:]
    return answer_part(response)[-row["tail_chars"]:]


def row_key(row: dict) -> str:
    """A labelled row's name in the tests' lists (``NOT_AS_READ``): its record and model."""
    return f"{row['record']} | {row['model']}"


def set_text(row: dict) -> str:
    """A labelled set's row text (:func:`corpus_tail`) from the tests' corpus; a row read from the corpus skips the
    test, saying so, where the corpus is absent (data beside a developer's checkout, never part of a clone)."""
    from .conftest import CORPUS, corpus_path

    if row["text"] is None:
        corpus_path(*row["source"].split("/"))
    return corpus_tail(row, CORPUS)


# ------------------------------------------------------------------ the third labelled set (issue 33, measured once)

HELD_OUT_3 = Path(__file__).resolve().parent / "data" / "answer_labels_heldout3.jsonl"

#: The forms of a row that states no answer (``stated`` None): no statement, a hedge, a reasoning cut before its answer.
NO_ANSWER_FORMS = ("states_no_answer", "hedged", "cut_in_reasoning")


def held_out_3_rows() -> list[dict]:
    """The third labelled set (tests/data/answer_labels_heldout3.jsonl): real texts from corpus records that none of
    :data:`FIXTURE`, :data:`HELD_OUT` and :data:`HELD_OUT_2` uses, each read and labelled by hand and committed
    before the extractor was run on any of them, then measured once with no change to the extractor (the held-out
    measure of bench/README.md, "Answer labels: a third held-out set"). Rows as :func:`held_out_2_rows`'; besides,
    ``part`` ``reasoning`` (the text is the tail of the reasoning, the record having no answer after it) and form
    ``cut_in_reasoning``: a reasoning cut by the run's token limit before it states an answer, which states none
    (``stated`` None; ``leans`` keeps the value it was weighing last, where it names one)."""
    return _rows(HELD_OUT_3)


held_out_3_text = corpus_tail
