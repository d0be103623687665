"""ARC (the trajectory paper's App. A.1): the letter of one of up to five options, A-E.

The question loader maps ARC's digit keys (about 2% of items) to letters, so the prompt shows letters and a
digit in an answer is a number, never a key (:mod:`thinkprobe.tasks._choices`).
"""

from ._task import Task
from ._choices import parse_choice_answer

TASK = Task(
    name="arc",
    answer_format="Give the letter of the correct option on the last line, in the form: The answer is X.",
    cot_final="give the letter of the correct option, in the form: The answer is X.",
    trace_tokens=1200,
    source="arc",
    extract=lambda text, strict, choices: parse_choice_answer(text, choices, default_keys="ABCDE"),
    choices=True,
)
