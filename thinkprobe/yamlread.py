"""Configuration files read within bounds (issue 37, item 5): no YAML alias, a bounded size and node count.

An 18-line YAML alias bomb (nine anchors, each a list of nine aliases of the one before) is 387 million
values once walked: ``thinkprobe plan`` grew to 6.2 GB in 90 s validating it. Every configuration the
project reads (the workflow's ``config.yaml`` and ``--configfile`` files, ``thinkprobe analyze --config``,
the planner, the lock file, the schema) goes through :func:`load_yaml`, which refuses an alias (``*name``,
and so ``<<: *name`` merge keys) naming the file and line, refuses a file over :data:`MAX_YAML_BYTES` and a
document of more than :data:`MAX_YAML_NODES` nodes, before anything is built. Write a repeated value out.

:func:`bounded_nodes` bounds the walk of a configuration that someone else loaded (Snakemake's own reading of
``--configfile``, or a dictionary built in Python): it counts the values it visits and stops at the bound, so
a shared node is counted each time it is met and a bomb ends in an error, not in memory.
A leaf module.
"""

from __future__ import annotations

import os
from typing import Any

MAX_YAML_BYTES = 16 * 2**20  # a paper study's config is a few KB; a generated one with every id, a few MB
MAX_YAML_NODES = 1_000_000


class YamlBoundError(ValueError):
    """A configuration file (or mapping) over a bound or holding an alias; the message names it."""


def _loader(source: str):
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        nodes = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise YamlBoundError(f"{source}: line {event.start_mark.line + 1}: a YAML alias (*{event.anchor}) "
                                     "is refused (aliases can multiply a small file into millions of values): "
                                     "write the value out")
            BoundedLoader.nodes += 1
            if BoundedLoader.nodes > MAX_YAML_NODES:
                raise YamlBoundError(f"{source}: more than {MAX_YAML_NODES:,} YAML nodes: not read")
            return super().compose_node(parent, index)

    return BoundedLoader


def load_yaml(text: str | bytes, source: str = "<config>") -> Any:
    """The YAML document ``text`` (safe types only), or :class:`YamlBoundError` / ``yaml.YAMLError`` naming
    ``source``.

    >>> load_yaml("a: [1, 2]")
    {'a': [1, 2]}
    >>> load_yaml("a: &x [1]\\nb: *x", "my.yaml")
    Traceback (most recent call last):
    ...
    thinkprobe.yamlread.YamlBoundError: my.yaml: line 2: a YAML alias (*x) is refused (aliases can multiply a small file into millions of values): write the value out
    """
    import yaml

    if len(text) > MAX_YAML_BYTES:
        raise YamlBoundError(f"{source}: {len(text):,} bytes, more than {MAX_YAML_BYTES:,}: not read")
    loader = _loader(source)(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_yaml(path: str | os.PathLike) -> Any:
    """:func:`load_yaml` of a file, read only up to the size bound."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_YAML_BYTES + 1)
    return load_yaml(data, str(path))


def bounded_nodes(value: Any, source: str, limit: int = MAX_YAML_NODES) -> int:
    """How many values ``value`` holds (each container and leaf, a shared one each time it is met), or
    :class:`YamlBoundError` as soon as there are more than ``limit``: call it before walking a mapping that
    may hold YAML aliases. Iterative (no recursion), so depth costs nothing either.

    >>> shared = [1] * 10
    >>> bounded_nodes({"a": shared, "b": shared}, "c")
    23
    >>> bounded_nodes({"a": [shared] * 100}, "c", limit=1000)
    Traceback (most recent call last):
    ...
    thinkprobe.yamlread.YamlBoundError: c: more than 1,000 values (repeated YAML aliases?): not walked
    """
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        count += 1
        if count > limit:
            raise YamlBoundError(f"{source}: more than {limit:,} values (repeated YAML aliases?): not walked")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return count


__all__ = ["MAX_YAML_BYTES", "MAX_YAML_NODES", "YamlBoundError", "bounded_nodes", "load_yaml", "read_yaml"]
