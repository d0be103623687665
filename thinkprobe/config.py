"""Validation of the workflow configuration against its JSON schema, with defaults filled in.

Errors name the key (as a dotted path), the value and what is allowed, and all of them are reported at
once, before any job runs. Defaults come from the schema's ``default`` entries, so ``config/config.yaml``
only needs the keys a study changes; the ``analysis`` section's defaults are the paper's constants and are
kept identical to :class:`thinkprobe.params.Params` by a test.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from .params import Params, ParamsError


class ConfigError(ValueError):
    """The configuration is invalid; the message lists every problem with its key and value."""


def load_schema(path: str | Path) -> dict[str, Any]:
    import yaml

    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


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
        "pattern": lambda v: f"matching {v}",
    }.get(error.validator)
    if error.validator == "additionalProperties":
        return f"{path}: {error.message} (allowed keys: {sorted(error.schema.get('properties', {}))})"
    if error.validator == "required":
        return f"{path}: {error.message}"
    if allowed:
        return f"{path} = {error.instance!r} is not allowed: must be {allowed(error.validator_value)}"
    return f"{path} = {error.instance!r}: {error.message}"


def validate_config(config: dict[str, Any], schema: dict[str, Any], source: str = "config") -> dict[str, Any]:
    """Return a copy of ``config`` with defaults filled, or raise :class:`ConfigError` listing every problem."""
    from jsonschema import Draft202012Validator

    if not isinstance(config, dict):
        raise ConfigError(f"{source}: the configuration must be a mapping, got {type(config).__name__}")
    filled = _fill_defaults(copy.deepcopy(config), schema)
    errors = sorted(Draft202012Validator(schema).iter_errors(filled), key=lambda e: list(e.absolute_path))
    problems = [_describe(e) for e in errors]
    if not problems:
        try:
            Params.from_dict(filled.get("analysis"), "analysis")
        except ParamsError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError(f"invalid configuration ({source}):\n  - " + "\n  - ".join(problems))
    return filled
