"""SVAMP (the trajectory paper's App. A.1): a number, read as GSM8K's is.

Records (``SVAMP.json``, a JSON array): text = ``Body`` + " " + ``Question``; gold = ``Answer`` written as a
number without a trailing ``.0`` (``51.0`` -> ``"51"``, ``0.5`` -> ``"0.5"``); id ``svamp-<ID>`` (the dataset's
own, e.g. ``svamp-chal-1``).
"""

from decimal import Decimal

from ._numbers import parse_number_answer
from ._records import field, labelled_gold
from ._task import BadRecord, Item, Task


def number_string(value) -> str:
    """A number written without a trailing ``.0`` (SVAMP's ``Answer``).

    >>> number_string(51.0), number_string(0.5), number_string("12.0"), number_string(-3), number_string(1e-05)
    ('51', '0.5', '12', '-3', '0.00001')
    """
    if isinstance(value, bool):
        raise BadRecord(f"answer {value!r} is not a number")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise BadRecord(f"answer {value!r} is not a number") from None
    if x != x or x in (float("inf"), float("-inf")):
        raise BadRecord(f"answer {value!r} is not a finite number")
    if x.is_integer():
        return str(int(x))
    return format(Decimal(repr(x)), "f")  # positional, never "1e-05" (which a reader takes for -5)


def read_svamp(options):
    def read(rec):
        sid = rec.get("ID")
        if not isinstance(sid, (str, int)) or isinstance(sid, bool) or str(sid).strip() == "":
            raise BadRecord("missing field 'ID'")
        body = field(rec, "Body").strip()
        question = field(rec, "Question").strip()
        if "Answer" not in rec:
            raise BadRecord("missing field 'Answer'")
        gold = number_string(rec["Answer"])
        labelled_gold(gold, parse_number_answer(gold), "svamp")  # 1e-05, repr of a tiny float: excluded
        if body and body[-1] not in ".!?,;:":
            body += "."
        return Item(f"svamp-{sid}", f"{body} {question}".strip(), gold=gold)

    return read


TASK = Task(
    name="svamp",
    answer_format="Give the final answer as a number on the last line, in the form: The answer is N.",
    cot_final="give the final answer as a number, in the form: The answer is N.",
    trace_tokens=1000,
    read=read_svamp,
    extract=lambda text, strict, choices: parse_number_answer(text, strict=strict),
    id_prefix="svamp-",
    answer_cue="\nTherefore, the final answer is ",
)
