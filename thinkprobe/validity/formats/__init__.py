"""The annotation formats ``thinkprobe validate`` reads: a registry, one module per format (DESIGN.md §2).

Each member module calls :func:`register` with a :class:`Format`: its name, its reader (a path to the
annotated traces of one file or folder, yielding :class:`~thinkprobe.validity.annotation.AnnotatedTrace` or
:class:`~thinkprobe.validity.annotation.Skipped`), and the node and edge labels of its published vocabulary,
which a mapping file must map every one of (:mod:`thinkprobe.validity.mapping`). :func:`get` names the known
formats when asked for another; :func:`names` lists them. Adding a format is adding a file here and its test.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..annotation import AnnotatedTrace, Skipped

MEMBERS = ("reasoningflow", "thought_anchors", "step_labels")  # the member modules, one per format


@dataclass(frozen=True)
class Format:
    name: str
    read: Callable[[Path], Iterator[AnnotatedTrace | Skipped]]
    node_labels: tuple[str, ...]
    edge_labels: tuple[str, ...]
    summary: str  # one line: what the format is and who publishes it


_REGISTRY: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    if fmt.name in _REGISTRY:
        raise ValueError(f"annotation format {fmt.name!r} registered twice")
    _REGISTRY[fmt.name] = fmt
    return fmt


def _load() -> None:
    for member in MEMBERS:
        importlib.import_module(f"{__name__}.{member}")


def names() -> list[str]:
    """The known formats, sorted."""
    _load()
    return sorted(_REGISTRY)


def get(name: str) -> Format:
    """The format called ``name``; an unknown name is an error naming the known ones."""
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown annotation format {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None
