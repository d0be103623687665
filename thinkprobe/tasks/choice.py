"""Any lettered multiple-choice set (MMLU-, GPQA-style; four, five or up to ten options, A-J).

Its records have ARC's fields (``question`` with options ``A``..``J`` and ``answer``, or the AllenAI schema;
read by ARC's loader, ids ``choice-<id>``); its answers are read by the same extractor
(:mod:`thinkprobe.tasks._choices`), keys limited to the item's own letters.
"""

from ._choices import LETTERS, parse_choice_answer
from ._task import Task
from .arc import read_lettered

TASK = Task(
    name="choice",
    answer_format="Give the letter of the correct option on the last line, in the form: The answer is X.",
    cot_final="give the letter of the correct option, in the form: The answer is X.",
    trace_tokens=1500,
    read=read_lettered("choice-"),
    extract=lambda text, strict, choices: parse_choice_answer(text, choices, default_keys=LETTERS),
    choices=True,
    id_prefix="choice-",
    answer_cue="\nTherefore, the answer is (",
)
