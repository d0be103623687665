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


def fixture_rows() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


def row_text(row: dict, corpus: Path) -> str:
    """The answer text of a row: stored, or the tail of the corpus record's answer after ``</think>``."""
    if row["text"] is not None:
        return row["text"]
    records = json.loads((corpus / row["source"]).read_text(encoding="utf-8"))
    response = records[int(row["record"].removeprefix("row="))]["response"]
    answer = response[response.find("</think>") + len("</think>"):].strip()
    return answer[-row["tail_chars"]:]


def row_choices(row: dict):
    """The item's option keys (texts unknown to the fixture), or None."""
    return tuple((k, "") for k in row["choices"]) if row.get("choices") else None
