"""Reading question records, shared by the task files' loaders: a required field, and a lettered
multiple-choice record in ARC's three layouts (ARC and the generic ``choice`` task read the same fields)."""

from __future__ import annotations

from typing import Any, Mapping

from ..answers import digit_key
from ._task import BadRecord

from ._choices import LETTERS


def field(rec: Mapping[str, Any], key: str, kind: type = str) -> Any:
    """``rec[key]``, of type ``kind`` (a string: not blank), else :class:`BadRecord` naming the field."""
    if key not in rec:
        raise BadRecord(f"missing field {key!r}")
    value = rec[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise BadRecord(f"field {key!r} is {type(value).__name__}, expected {kind.__name__}")
    if kind is str and not value.strip():
        raise BadRecord(f"field {key!r} is empty")
    return value


def labelled_gold(gold: str, label: "str | None", task: str) -> str:
    """``gold`` when the task's parser gives it a label (``label``), else :class:`BadRecord`: a gold answer the task
    cannot read would make every answer to the item wrong or unknown, so the item is excluded with the reason
    at load (issue 33, bad input), never labelled against a null gold."""
    if label is None:
        shown = gold if len(gold) <= 80 else gold[:77] + "..."
        raise BadRecord(f"gold answer {shown!r} does not parse for task {task!r}")
    return gold


def lettered_record(rec: Mapping[str, Any]) -> tuple[str, str, str, tuple[tuple[str, str], ...]]:
    """(source id, stem, gold letter, choices) from a skywork, AllenAI or hub (ai2_arc) record.

    Digit labels 1-5 (about 2% of ARC items) are mapped to A-E, in the choices and in the gold letter alike;
    labels must be A, B, C, ... in order, each once, and the gold one of them: a choice list with a repeated or
    missing letter, or a gold the item does not offer, is a :class:`BadRecord` naming the labels.
    """
    rid = field(rec, "id")
    q = rec.get("question")
    if isinstance(q, dict):
        stem = field(q, "stem")
        raw = q.get("choices")
        if not isinstance(raw, list) or not raw:
            raise BadRecord("question has no 'choices' list")
        choices = []
        for c in raw:
            if not isinstance(c, dict) or "label" not in c or not isinstance(c.get("text"), str):
                raise BadRecord("a choice lacks 'label' or 'text'")
            choices.append((digit_key(str(c["label"])), c["text"].strip()))
        key = rec.get("answerKey")
    elif isinstance(rec.get("choices"), dict):  # the hub's ai2_arc: choices = {text: [...], label: [...]}
        stem = field(rec, "question")
        texts, labels = rec["choices"].get("text"), rec["choices"].get("label")
        if not isinstance(texts, list) or not isinstance(labels, list) or not texts or len(texts) != len(labels):
            raise BadRecord("'choices' needs lists 'text' and 'label' of the same length")
        if not all(isinstance(t, str) for t in texts):
            raise BadRecord("a choice text is not a string")
        choices = [(digit_key(str(lab)), t.strip()) for lab, t in zip(labels, texts)]
        key = rec.get("answerKey")
    else:
        stem = field(rec, "question")
        labels = rec.get("label")
        if not isinstance(labels, list) or not labels:
            raise BadRecord("missing 'label' list of choice keys")
        choices = []
        for lab in labels:
            text = rec.get(str(lab))
            if not isinstance(text, str):
                raise BadRecord(f"choice {lab!r} has no text")
            choices.append((digit_key(str(lab)), text.strip()))
        key = rec.get("answer")
    if not isinstance(key, (str, int)) or isinstance(key, bool) or str(key).strip() == "":
        raise BadRecord("missing gold answer key")
    gold = digit_key(str(key))
    letters = [lab for lab, _ in choices]
    if len(set(letters)) != len(letters):
        raise BadRecord(f"duplicate choice labels {letters}")
    if letters != list(LETTERS[:len(letters)]):
        raise BadRecord(f"choice labels {letters} are not A, B, C, ... in order (a letter is missing or unknown)")
    if gold not in letters:
        raise BadRecord(f"gold {key!r} is none of the choices {letters}")
    return rid, stem.strip(), gold, tuple(choices)
