"""MATH, algebra track (the trajectory paper's App. A.1): the boxed expression, canonical through math-verify."""

from ._task import Task
from ._math import parse_math_answer

TASK = Task(
    name="math",
    answer_format="Put the final answer in \\boxed{}.",
    cot_final="give the final answer in \\boxed{}.",
    trace_tokens=3000,
    source="math",
    extract=lambda text, strict, choices: parse_math_answer(text, strict=strict),
)
