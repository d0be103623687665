"""Open-ended questions (the built-in open200 set): no answer format, no label."""

from ._task import Task

TASK = Task(
    name="open",
    answer_format="",
    cot_final="give your final answer in a few sentences.",
    trace_tokens=4000,
    source="open",
)
