"""The mapping from an annotation format's labels to thinkprobe's node and edge types, declared before the
comparison in a committed YAML file (``config/validity/<format>.yaml``; docs/validity.md).

A mapping file names its ``format`` and maps **every** node label and every edge label of that format's
published vocabulary (:mod:`thinkprobe.validity.formats`): ``nodes: {label: TYPE}`` with TYPE one of the
paper's 8 node types (§3.3, Table 1), ``edges: {label: TYPE}`` with TYPE a semantic edge type (SEQ is the
default flow, not a relation) or ``ANY`` (compare with thinkprobe's semantic edges of every type, for a
format whose edges are untyped). ``null`` declares a label deliberately left out of the comparison. A label
of the vocabulary that the file does not name, or a key that is not in the vocabulary, is an error naming
it: a mapping chosen label by label after seeing the scores is not declared beforehand.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..graph import EDGE_TYPES, NODE_TYPES
from . import formats

ANY = "ANY"


@dataclass(frozen=True)
class Mapping:
    format: str
    nodes: dict[str, str | None]
    edges: dict[str, str | None]
    source: str = ""

    def node_type(self, label: str | None) -> str | None:
        return None if label is None else self.nodes[label]

    def edge_type(self, label: str) -> str | None:
        return self.edges[label]


def _section(raw: Any, key: str, vocabulary: tuple[str, ...], allowed: tuple[str, ...], where: str) -> dict:
    part = raw.get(key) or {}
    if not isinstance(part, dict):
        raise ValueError(f"{where}: '{key}' must map labels to types")
    unmapped = [label for label in vocabulary if label not in part]
    if unmapped:
        raise ValueError(f"{where}: {key} label(s) left unmapped: {', '.join(unmapped)} (map each to one of "
                         f"{', '.join(allowed)}, or to null to leave it out of the comparison)")
    unknown = [label for label in part if label not in vocabulary]
    if unknown:
        raise ValueError(f"{where}: {key} label(s) not in the {raw['format']} vocabulary: {', '.join(map(str, unknown))}")
    bad = {label: t for label, t in part.items() if t is not None and t not in allowed}
    if bad:
        raise ValueError(f"{where}: {key} mapped to unknown types: "
                         + ", ".join(f"{k} -> {v}" for k, v in bad.items()) + f" (known: {', '.join(allowed)})")
    return dict(part)


def from_dict(raw: Any, where: str = "mapping") -> Mapping:
    if not isinstance(raw, dict) or "format" not in raw:
        raise ValueError(f"{where}: expected a mapping with 'format', 'nodes' and 'edges'")
    fmt = formats.get(str(raw["format"]))
    nodes = _section(raw, "nodes", fmt.node_labels, NODE_TYPES, where)
    edges = _section(raw, "edges", fmt.edge_labels, (*[t for t in EDGE_TYPES if t != "SEQ"], ANY), where)
    return Mapping(fmt.name, nodes, edges, where)


def load(path: str | Path) -> Mapping:
    """The mapping declared in ``path``; any label left unmapped is a ``ValueError`` naming it."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML ({exc})") from exc
    return from_dict(raw, str(path))


def outside(mapping: Mapping, labels: list[str | None], edge_labels: list[str]) -> list[str]:
    """The labels of one trace that the mapping does not name (the trace is then excluded)."""
    return sorted({x for x in labels if x is not None and x not in mapping.nodes}
                  | {x for x in edge_labels if x not in mapping.edges})
