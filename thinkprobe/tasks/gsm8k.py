"""GSM8K (the trajectory paper's App. A.1): a number, read by :func:`thinkprobe.tasks._numbers.parse_number_answer`.

Records (``test.jsonl``): ``{question, answer}``; the gold is the text after the last ``####`` of ``answer``,
stripped, commas removed. GSM8K has no ids of its own: ``gsm8k-<first 10 hex of sha256(question)>``, a content
hash, so an id survives reordering or a new version of the file; two records with the same question text are
told apart by ``-2``, ``-3`` in file order (none in the public test split).
"""

import hashlib

from ._numbers import canonical_number, parse_number_answer
from ._records import field, labelled_gold
from ._task import BadRecord, Item, Task


def gsm8k_gold(answer: str) -> str:
    """The number after the last ``####`` of a GSM8K answer, stripped, with commas removed.

    >>> gsm8k_gold("She makes 9 * 2 = $18.\\n#### 1,018")
    '1018'

    A gold the task cannot read (``#### seventeen``, ``#### 3,5``) is a :class:`BadRecord`: the record is
    excluded with that reason.
    """
    if "####" not in answer:
        raise BadRecord("answer has no '####' line")
    raw = answer.rsplit("####", 1)[1].strip()
    if not raw:
        raise BadRecord("nothing after '####'")
    gold = raw.replace(",", "")
    if "," in raw and canonical_number(raw) is None:  # "3,5": a decimal comma or a list, never 35
        raise BadRecord(f"gold answer {raw!r} does not parse for task 'gsm8k' (a comma that separates no thousands)")
    return labelled_gold(gold, parse_number_answer(gold), "gsm8k")


def read_gsm8k(options):
    seen: dict[str, int] = {}

    def read(rec):
        text = field(rec, "question")
        gold = gsm8k_gold(field(rec, "answer"))
        base = "gsm8k-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
        seen[base] = seen.get(base, 0) + 1
        return Item(base if seen[base] == 1 else f"{base}-{seen[base]}", text.strip(), gold=gold)

    return read


TASK = Task(
    name="gsm8k",
    answer_format="Give the final answer as a number on the last line, in the form: The answer is N.",
    cot_final="give the final answer as a number, in the form: The answer is N.",
    trace_tokens=1200,
    read=read_gsm8k,
    extract=lambda text, strict, choices: parse_number_answer(text, strict=strict),
    id_prefix="gsm8k-",
    answer_cue="\nTherefore, the final answer is ",
)
