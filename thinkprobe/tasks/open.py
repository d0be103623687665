"""Open-ended questions (the built-in open200 set, or a user's file of the same schema): no answer format, no
label. Records: ``{id, text, domain?}`` (JSONL or a JSON array); the question id is the file's ``id``."""

from ._records import field
from ._task import BadRecord, Item, Task


def read_open(options):
    """The loader of ``{id, text, domain?}`` records (also what a new task of open-format records can use)."""
    def read(rec):
        domain = rec.get("domain")
        if domain is not None and not isinstance(domain, str):
            raise BadRecord("field 'domain' is not a string")
        return Item(field(rec, "id"), field(rec, "text"), domain=domain or None)

    return read


TASK = Task(
    name="open",
    answer_format="",
    cot_final="give your final answer in a few sentences.",
    trace_tokens=4000,
    read=read_open,
)
