"""GSM8K (the trajectory paper's App. A.1): a number, read by :func:`thinkprobe.tasks._numbers.parse_number_answer`."""

from ._task import Task
from ._numbers import parse_number_answer

TASK = Task(
    name="gsm8k",
    answer_format="Give the final answer as a number on the last line, in the form: The answer is N.",
    cot_final="give the final answer as a number, in the form: The answer is N.",
    trace_tokens=1200,
    source="gsm8k",
    extract=lambda text, strict, choices: parse_number_answer(text, strict=strict),
)
