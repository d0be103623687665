"""Open-ended questions (the built-in open200 set): no answer format, no label."""

from . import Task, register

TASK = register(Task(
    name="open",
    answer_format="",
    cot_final="give your final answer in a few sentences.",
    trace_tokens=4000,
    source="open",
))
