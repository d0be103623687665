"""JSON read within bounds: its shape checked on the bytes before anything is parsed (issue 28 item 4, issue 37).

:func:`json_shape` counts how deeply a JSON text nests and how many objects and arrays it holds, in a few
linear passes over its bytes; :func:`read_json_bounded` reads a file as a regular file of at most a given
size (never a device, a FIFO or a symlink to one: ``/dev/zero`` would be read for ever) and refuses one
nested deeper than :data:`MAX_JSON_DEPTH` with a clear error, never a bare ``RecursionError``. The HTTP
backend checks every reply with :func:`json_shape`; the per-unit files (graphs included) are read with
:func:`read_json_bounded`. A leaf module.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

# Deeper than any file the project writes (a node-link graph nests 4 levels) and far below the parser's
# recursion limit.
MAX_JSON_DEPTH = 256


class JsonBoundError(ValueError):
    """A JSON file over a bound (size, depth) or not a regular file; the message names the file and bound."""


# A string, or an unterminated one up to the end of the text (a lone backslash at the end included): the
# pattern matches at every quote it starts from, so no start is ever retried and one pass is linear in the
# reply (issue 37: the old pattern, which needed the closing quote, was quadratic on an unterminated string
# of escaped quotes, 64 KB taking 11.7 s). Possessive loops: nothing to backtrack into.
_JSON_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)', re.DOTALL)
_KEEP_BRACKETS = bytes.maketrans(b"{}", b"[]")  # for depth, an object nests like an array
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_shape(payload: bytes, max_depth: int) -> tuple[int, int]:
    """``(depth, containers)`` of a JSON text, read from its bytes without parsing it: how deeply its arrays and
    objects nest (counted up to ``max_depth + 1``: anything deeper reads ``max_depth + 1``) and how many there
    are.

    Strings are removed first (a bracket inside a string is text; one linear pass), then everything but
    brackets; the depth is the maximum of the running sum of +1 per opening and -1 per closing bracket
    (numpy, in pieces of a MB). A few linear passes over the bytes at C speed, whatever the depth, and
    nothing is allocated per element. Brackets that do not balance are no JSON:
    ``ValueError`` (so an unclosed nest never reaches the parser's recursion).

    >>> json_shape(b'{"a": [1, {"b": "[[["}], "c": []}', 64)
    (3, 4)
    >>> json_shape(b"[" * 5000 + b"]" * 5000, 64)
    (65, 5000)
    >>> json_shape(b"[" * 5000, 64)
    Traceback (most recent call last):
    ...
    ValueError: unbalanced brackets: not JSON
    """
    brackets = _JSON_STRING.sub(b"", payload).translate(_KEEP_BRACKETS, _NOT_BRACKETS)
    containers = brackets.count(b"[")
    if not brackets:
        return 0, 0
    import numpy as np

    # the nesting level after each bracket is the running sum of +1 ("[") and -1 ("]"): its maximum is the
    # depth; it never goes below 0 and ends at 0 when they balance. In pieces, so memory stays small.
    marks = np.frombuffer(brackets, dtype=np.uint8)
    depth = low = level = 0
    for start in range(0, len(marks), _PIECE):
        run = np.cumsum((marks[start:start + _PIECE] == ord("[")).astype(np.int64) * 2 - 1) + level
        depth, low, level = max(depth, int(run.max())), min(low, int(run.min())), int(run[-1])
    if low < 0 or level != 0:
        raise ValueError("unbalanced brackets: not JSON")
    return min(depth, max_depth + 1), containers


_PIECE = 1 << 20


def read_json_bounded(path: str | os.PathLike, max_bytes: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON document in ``path``, read as a regular file of at most ``max_bytes`` bytes and nested at most
    ``max_depth`` levels; :class:`JsonBoundError` naming the file otherwise (``OSError`` when it cannot be
    opened, ``ValueError`` when it is no JSON).

    >>> read_json_bounded("/dev/zero", 1024)
    Traceback (most recent call last):
    ...
    thinkprobe.boundedjson.JsonBoundError: /dev/zero: not a regular file (a device, a FIFO or a link to one): not read
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block the open
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise JsonBoundError(f"{path}: not a regular file (a device, a FIFO or a link to one): not read")
        if info.st_size > max_bytes:
            raise JsonBoundError(f"{path}: {info.st_size:,} bytes, more than the limit of {max_bytes:,}: not read")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:  # grew while being read
        raise JsonBoundError(f"{path}: more than the limit of {max_bytes:,} bytes: not read")
    try:
        depth, _ = json_shape(data, max_depth)
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if depth > max_depth:
        raise JsonBoundError(f"{path}: its JSON is nested deeper than {max_depth} levels: not read")
    return json.loads(data.decode("utf-8"))
