"""MATH, algebra track (the trajectory paper's App. A.1): the boxed expression, canonical through math-verify.

Records (the harness's ``test.jsonl`` with ``type``, ``DERIVED_algebra_test.jsonl``, or the hub's copies with
``subject``): those whose type is the spec's ``math_type`` (default ``"Algebra"``: 1,187 of the 5,000 test
problems; ``null`` keeps every type); gold = the content of the LAST ``\\boxed{...}`` (or ``\\fbox{...}``, or
``\\boxed 5``) of ``solution``, nested braces balanced; a gold the task's parser gives no label (an empty or
over-long box) excludes the record with that reason. Id ``math-<idx>`` from the harness's ``idx`` (its index
into the fixed 5,000-problem test split; the derived algebra file keeps it), else ``math-h<content hash>``.
"""

import hashlib

from ..answers import last_boxed
from ._math import parse_math_answer
from ._records import field, labelled_gold
from ._task import BadRecord, Item, Task


def read_math(options):
    math_type = options["math_type"]

    def read(rec):
        if math_type is not None and rec.get("type", rec.get("subject")) != math_type:
            return None
        problem = field(rec, "problem")
        gold = last_boxed(field(rec, "solution"))
        if gold is None or not gold.strip():
            raise BadRecord("solution has no \\boxed{...} answer")
        labelled_gold(gold.strip(), parse_math_answer(gold), "math")  # a box the parser cannot read: excluded
        idx = rec.get("idx")
        if isinstance(idx, int) and not isinstance(idx, bool):
            qid = f"math-{idx}"
        else:
            qid = "math-h" + hashlib.sha256(problem.encode("utf-8")).hexdigest()[:10]
        return Item(qid, problem.strip(), gold=gold.strip())

    return read


TASK = Task(
    name="math",
    answer_format="Put the final answer in \\boxed{}.",
    cot_final="give the final answer in \\boxed{}.",
    trace_tokens=3000,
    read=read_math,
    extract=lambda text, strict, choices: parse_math_answer(text, strict=strict),
    options={"math_type": "Algebra"},
    id_prefix="math-",
    answer_cue="\nTherefore, the final answer is $\\boxed{",
)
