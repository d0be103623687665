"""ARC (the trajectory paper's App. A.1): the letter of one of up to five options, A-E.

Records: the skywork format (a JSON array of ``{id, question, answer, A..E, label}``), the AllenAI schema
(JSONL of ``{id, question: {stem, choices: [{text, label}]}, answerKey}``) or the hub's (``allenai/ai2_arc``:
``{id, question, choices: {text: [...], label: [...]}, answerKey}``), read by
:func:`thinkprobe.tasks._records.lettered_record`; id ``arc-<id>``. The loader maps ARC's digit keys (about 2%
of items) to letters, so the prompt shows letters and a digit in an answer is a number, never a key
(:mod:`thinkprobe.tasks._choices`).
"""

from ._choices import parse_choice_answer
from ._records import lettered_record
from ._task import Item, Task


def read_lettered(prefix: str):
    """The loader of lettered records in ARC's layouts, ids ``<prefix><id>`` (ARC's, and the ``choice`` task's)."""
    def reader(options):
        def read(rec):
            rid, stem, gold, choices = lettered_record(rec)
            return Item(f"{prefix}{rid}", stem, gold=gold, choices=choices)

        return read

    return reader


TASK = Task(
    name="arc",
    answer_format="Give the letter of the correct option on the last line, in the form: The answer is X.",
    cot_final="give the letter of the correct option, in the form: The answer is X.",
    trace_tokens=1200,
    read=read_lettered("arc-"),
    extract=lambda text, strict, choices: parse_choice_answer(text, choices, default_keys="ABCDE"),
    choices=True,
    id_prefix="arc-",
    answer_cue="\nTherefore, the answer is (",
)
