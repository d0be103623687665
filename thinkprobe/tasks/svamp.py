"""SVAMP (the trajectory paper's App. A.1): a number, read as GSM8K's is."""

from ._task import Task
from ._numbers import parse_number_answer

TASK = Task(
    name="svamp",
    answer_format="Give the final answer as a number on the last line, in the form: The answer is N.",
    cot_final="give the final answer as a number, in the form: The answer is N.",
    trace_tokens=1000,
    source="svamp",
    extract=lambda text, strict, choices: parse_number_answer(text, strict=strict),
)
