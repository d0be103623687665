"""Validation of the workflow configuration against its JSON schema, with defaults filled in.

Errors name the key (as a dotted path), the value and what is allowed, and all of them are reported at
once, before any job runs. Defaults come from the schema's ``default`` entries, so ``config/config.yaml``
only needs the keys a study changes; the ``analysis`` section's schema (the paper's constants as defaults)
is generated from :mod:`thinkprobe.params` (:func:`load_schema`).

Beyond the schema, the checks that would otherwise fail only at run time (or as a Snakemake error that
names no key) are made here too: a lexicon path that does not exist, an encoder model (or the second
encoder of ``stats.sensitivity_encoder``) that is not available on this machine, and duplicate entries of
``grid.models``/``grid.runs`` (``1`` and ``"1"`` are the same run). A key that was renamed
(:data:`RENAMED`) is an error naming its new name, never a silent alias: one name per role (docs/glossary.md).
Checks that need a higher layer's code (a vLLM model folder, the statistics' second encoder) are that layer's own functions, named by their
schema block (``x-checks-from``, :func:`declared_checks`), as the defaults are (``x-defaults-from``): this
module's code names nothing of :mod:`thinkprobe.generate`, :mod:`thinkprobe.stats` or any other subpackage
(``tests/test_import_graph.py``); what it runs of them, the schema names.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from .params import RENAMED_PARAMS, Params, ParamsError


class ConfigError(ValueError):
    """The configuration is invalid; the message lists every problem with its key and value."""


GENERATED = "x-generated-from"


def load_schema(path: str | Path) -> dict[str, Any]:
    """The workflow schema, with its generated blocks filled in.

    A block marked ``x-generated-from: thinkprobe.params.analysis_schema`` (the ``analysis`` section) is
    replaced by what that function returns, so the paper's constants have one home (:mod:`thinkprobe.params`).
    """
    from .params import analysis_schema
    from .yamlread import read_yaml

    schema = read_yaml(path)
    generators = {"thinkprobe.params.analysis_schema": analysis_schema}
    for key, block in (schema.get("properties") or {}).items():
        if isinstance(block, dict) and GENERATED in block:
            if block[GENERATED] not in generators:
                raise ConfigError(f"{path}: {key}: unknown {GENERATED} {block[GENERATED]!r}")
            schema["properties"][key] = {**generators[block[GENERATED]](), "description": block.get("description", "")}
    _fill_declared_defaults(schema, str(path))
    _fill_generated(schema)
    return schema


ENUM_FROM = "x-enum-from"
DEFAULT_FROM = "x-default-from"


def _fill_generated(node: Any) -> None:
    """Set the ``enum`` of every node marked ``x-enum-from: module:function`` and the ``default`` of every node
    marked ``x-default-from: module:function`` from that function (a registry's members, e.g.
    :func:`thinkprobe.tasks.names`): the family's one home is its registry, never a list in the schema."""
    import importlib

    if isinstance(node, list):
        for item in node:
            _fill_generated(item)
        return
    if not isinstance(node, dict):
        return
    for mark, key in ((ENUM_FROM, "enum"), (DEFAULT_FROM, "default")):
        if mark in node:
            module, _, name = node[mark].partition(":")
            node[key] = getattr(importlib.import_module(module), name)()
    for value in node.values():
        _fill_generated(value)


DEFAULTS_FROM = "x-defaults-from"


def _fill_declared_defaults(node: Any, where: str) -> None:
    """Set the ``default`` of every property of a block marked ``x-defaults-from: module.NAME`` (or a list)
    from that dict, the default's one home; a key the dict names but the block lacks is an error."""
    import importlib

    if isinstance(node, list):
        for item in node:
            _fill_declared_defaults(item, where)
        return
    if not isinstance(node, dict):
        return
    sources = node.get(DEFAULTS_FROM)
    for source in [sources] if isinstance(sources, str) else sources or []:
        module, _, name = source.rpartition(".")
        defaults = getattr(importlib.import_module(module), name)
        props = node.get("properties") or {}
        for key, value in defaults.items():
            if key not in props:
                raise ConfigError(f"{where}: {source} has a default for {key!r}, which the schema does not declare")
            props[key]["default"] = value
    for value in node.values():
        _fill_declared_defaults(value, where)


def _fill_defaults(instance: Any, schema: dict[str, Any]) -> Any:
    if schema.get("type") == "object" and isinstance(instance, dict):
        for key, sub in schema.get("properties", {}).items():
            if key not in instance and "default" in sub:
                instance[key] = copy.deepcopy(sub["default"])
            if key not in instance and sub.get("type") == "object" and "properties" in sub:
                instance[key] = {}
            if key in instance:
                instance[key] = _fill_defaults(instance[key], sub)
    if schema.get("type") == "array" and isinstance(instance, list) and isinstance(schema.get("items"), dict):
        return [_fill_defaults(item, schema["items"]) for item in instance]
    return instance


def _describe(error) -> str:
    path = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    allowed = {
        "enum": lambda v: f"one of {v}",
        "minimum": lambda v: f">= {v}",
        "maximum": lambda v: f"<= {v}",
        "exclusiveMinimum": lambda v: f"> {v}",
        "exclusiveMaximum": lambda v: f"< {v}",
        "type": lambda v: f"of type {v}",
        "minLength": lambda v: f"at least {v} character(s)",
        "minItems": lambda v: f"at least {v} item(s)",
        "maxItems": lambda v: f"at most {v} item(s)",
        "pattern": lambda v: f"matching {v}",
    }.get(error.validator)
    if error.validator == "additionalProperties":
        return f"{path}: {error.message} (allowed keys: {sorted(error.schema.get('properties', {}))})"
    if error.validator == "required":
        return f"{path}: {error.message}"
    if allowed:
        return f"{path} = {error.instance!r} is not allowed: must be {allowed(error.validator_value)}"
    return f"{path} = {error.instance!r}: {error.message}"


CHANGES = "docs/changes.md, Renames (issue 27)"
"""Where a user reads what to edit when a key was renamed."""

RENAMED: dict[str, str] = {
    "units": "grid",  # the study grid's models and runs; "unit" alone is an analysis unit (docs/glossary.md)
    **{f"analysis.{section}.{old}": f"analysis.{section}.{new}" for (section, old), new in RENAMED_PARAMS.items()},
}
"""Old dotted key -> its new name: a config that still has the old key is refused with a message naming both."""


def renamed_keys(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The config with every renamed key (:data:`RENAMED`) under its new name, and one problem per old key found.

    The problems make validation fail (the old name is no alias); the moved copy lets the same run report
    every other problem of the config too (an old key beside its new one is dropped from the copy: the new
    one is what is checked, the old one is named once, by its problem).

    >>> moved, problems = renamed_keys({"units": {"runs": [1]}})
    >>> moved
    {'grid': {'runs': [1]}}
    >>> problems[0].split(";")[0]
    'units: this key is now grid'
    """
    moved = copy.deepcopy(config)
    problems: list[str] = []
    for old, new in RENAMED.items():
        *parents, leaf = old.split(".")
        node: Any = moved
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and leaf in node:
            problems.append(f"{old}: this key is now {new}; rename it in the config (see {CHANGES})")
            node.setdefault(new.rsplit(".", 1)[-1], node.pop(leaf))
    return moved, problems


def validate_config(config: dict[str, Any], schema: dict[str, Any], source: str = "config",
                    base: str | Path = ".") -> dict[str, Any]:
    """Return a copy of ``config`` with defaults filled, or raise :class:`ConfigError` listing every problem.

    ``base`` is the study's working directory: the declared checks (:func:`declared_checks`) find the files a
    relative path names under it (the workflow's is the current directory; ``thinkprobe plan --directory`` gives
    its own)."""
    from jsonschema import Draft202012Validator

    from .yamlread import YamlBoundError, bounded_nodes

    if not isinstance(config, dict):
        raise ConfigError(f"{source}: the configuration must be a mapping, got {type(config).__name__}")
    try:
        bounded_nodes(config, source)  # before anything walks it: a config read by Snakemake may hold aliases
    except YamlBoundError as exc:
        raise ConfigError(f"invalid configuration ({source}):\n  - {exc}") from None
    config, nfc = nfc_ids(config)
    if nfc:
        raise ConfigError(f"invalid configuration ({source}):\n  - " + "\n  - ".join(nfc))
    config, renamed = renamed_keys(config)
    filled = _fill_defaults(config, schema)
    errors = sorted(Draft202012Validator(schema).iter_errors(filled), key=lambda e: list(e.absolute_path))
    problems = renamed + [_describe(e) for e in errors] + _non_finite(filled)
    if not problems:
        try:
            Params.from_dict(filled.get("analysis"), "analysis")
        except ParamsError as exc:
            problems.append(str(exc))
    problems += run_time_problems(filled)
    problems += declared_checks(filled, schema, base)
    if problems:
        raise ConfigError(f"invalid configuration ({source}):\n  - " + "\n  - ".join(problems))
    return filled


CHECKS_FROM = "x-checks-from"


def declared_checks(config: dict[str, Any], schema: dict[str, Any], base: str | Path = ".") -> list[str]:
    """The problems found by the checks a schema block names (``x-checks-from: module.function``, or a list).

    A section whose checks need code of a higher layer (the models' folders, the statistics' second encoder)
    declares them in the schema, beside its keys, as ``x-defaults-from`` declares its defaults: each function
    takes the filled configuration and the base folder and returns a list of problems, each naming its key.
    This module imports them by the name the schema gives, so it names no module above it (docs/development.md,
    "Layers and imports").
    """
    import importlib

    problems: list[str] = []
    for key, block in (schema.get("properties") or {}).items():
        sources = block.get(CHECKS_FROM) if isinstance(block, dict) else None
        for source in [sources] if isinstance(sources, str) else sources or []:
            module, _, name = source.rpartition(".")
            try:
                check = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError) as exc:
                raise ConfigError(f"schema: {key}: {CHECKS_FROM} {source!r} cannot be imported ({exc})") from exc
            problems += check(config, base)
    return problems


# Keys whose string values (or lists of them) name an id: a model, a question set. Every mapping key is an id too.
ID_VALUE_KEYS = frozenset({"model", "models", "question_set", "question_sets"})


def nfc_ids(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``config`` with every mapping key, and every id named under :data:`ID_VALUE_KEYS`, in Unicode NFC, and the
    problems: two keys of one mapping that are equal after normalisation ("Modèle" written precomposed and
    with a combining accent print alike but were two models) are refused naming both (issue 37, item 5).

    >>> nfc_ids({"models": {"Mode\u0300le": {}}, "grid": {"models": ["Mode\u0300le"]}})[0]
    {'models': {'Modèle': {}}, 'grid': {'models': ['Modèle']}}
    >>> print(nfc_ids({"models": {"Mod\u00e8le": {}, "Mode\u0300le": {}}})[1][0])
    models: 'Mod\xe8le' and 'Mode\u0300le' are the same id once normalised (Unicode NFC): name it once
    """
    import unicodedata

    problems: list[str] = []

    def nfc(value: Any) -> Any:
        return unicodedata.normalize("NFC", value) if isinstance(value, str) else value

    def walk(node: Any, path: str, ids: bool) -> Any:
        if isinstance(node, dict):
            out: dict[Any, Any] = {}
            first: dict[Any, Any] = {}
            for key, value in node.items():
                norm = nfc(key)
                if norm in out:
                    problems.append(f"{path or '(top level)'}: {ascii(first[norm])} and {ascii(key)} are the same id "
                                    "once normalised (Unicode NFC): name it once")
                    continue
                first[norm] = key
                out[norm] = walk(value, f"{path}.{norm}" if path else str(norm), norm in ID_VALUE_KEYS)
            return out
        if isinstance(node, list):
            return [walk(v, f"{path}.{i}", ids) for i, v in enumerate(node)]
        return nfc(node) if ids else node

    return walk(config, "", False), problems


def _non_finite(value: Any, path: str = "") -> list[str]:
    """NaN and infinities, wherever they are: a schema bound compares False with NaN, so it would pass."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return [f"{path or '(top level)'} = {value!r} is not allowed: must be a finite number"]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _non_finite(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _non_finite(v, f"{path}.{i}")]
    return []


def _duplicates(values: list[Any]) -> list[str]:
    seen: set[str] = set()
    dups: list[str] = []
    for v in values:
        key = str(v)
        if key in seen and key not in dups:
            dups.append(key)
        seen.add(key)
    return dups


def run_time_problems(config: dict[str, Any], base: str | Path = ".") -> list[str]:
    """Problems the schema cannot see: missing lexicon files, an unavailable encoder, duplicate grid entries."""
    from .encoder import model_problem

    problems: list[str] = []
    analysis = config.get("analysis") if isinstance(config.get("analysis"), dict) else {}
    grid = config.get("grid") if isinstance(config.get("grid"), dict) else {}
    for key, section, name in (("analysis.segmentation.cue_lexicon", "segmentation", "cue_lexicon"),
                               ("analysis.metrics.hedge_lexicon", "metrics", "hedge_lexicon")):
        path = (analysis.get(section) or {}).get(name) if isinstance(analysis.get(section), dict) else ""
        if path and isinstance(path, str):
            full = Path(path) if Path(path).is_absolute() else Path(base) / path
            if not full.is_file():
                problems.append(f"{key} = {path!r}: no such file (empty: the packaged lexicon)")
    model = analysis["encoder"].get("model") if isinstance(analysis.get("encoder"), dict) else None
    if model and isinstance(model, str):
        problem = model_problem(str(model))
        if problem:
            problems.append(f"analysis.encoder.model = {model!r}: not available: {problem}")
    for key in ("models", "runs"):
        values = grid.get(key)
        dups = _duplicates(values) if isinstance(values, list) else []
        if dups:
            problems.append(f"grid.{key} lists {', '.join(repr(d) for d in dups)} more than once")
    return problems
