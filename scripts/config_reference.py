"""The configuration reference of the documentation (docs/configuration.md), generated, so it cannot drift.

    python scripts/config_reference.py --write     # rewrite docs/configuration.md below its marker line
    python scripts/config_reference.py --check     # exit 1 (naming --write) when docs/configuration.md is stale
    python scripts/config_reference.py             # the generated reference as Markdown, on stdout
    python scripts/config_reference.py --derive    # JSON: the config keys each rule's params take, the rule graph

docs/configuration.md is committed as generated text: the hand-written introduction above the line
:data:`MARKER`, the output of :func:`markdown` below it. ``tests/test_docs.py`` generates it and fails, naming
the ``--write`` command, when the committed file differs (a key added to the schema, a rule that now takes one).

Every key, its type, bounds, default and description come from ``config/schema.yaml`` as
``thinkprobe.config.load_schema`` fills it (the ``analysis`` block from ``thinkprobe/params.py``, the model
defaults from ``thinkprobe/generate/defaults.py``). Which rules a key reruns is read from the workflow itself:
the Snakefile is parsed and its DAG built in this process (a dry run of the embedded default with the
statistics, a second decoding and the plan target switched on, in a scratch folder), with the validated
config replaced by a copy whose every mapping records the keys read from it and whose numbers and strings
carry their key. A key is taken by a rule when the rule's ``params`` read it (while the params are evaluated,
at parse time or for each job) or hold its value; Snakemake reruns a job whose params changed, and then what
reads its outputs (the rule graph, also from the DAG). Booleans and nulls cannot carry their key, so they
count only when read while a rule's params are evaluated. A key in no rule's params reruns no finished job by
itself: it is read when the jobs are planned (which jobs and files exist: inputs, grids, batch sizes) or is a
resource (threads, memory, GPUs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

# The derivation's config: the embedded default with every rule family it can run here switched on
# (statistics, a second decoding) and every key of a model entry and a collection job stated, at its
# default, so that the derivation can follow it (a key the config does not state has no value to follow).
def probe_config() -> dict[str, Any]:
    import copy

    import yaml

    from thinkprobe.config import load_schema

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    schema = load_schema(REPO / "config" / "schema.yaml")
    config["stats"]["enabled"] = True
    config["trajectories"]["decodings"] = {"t02": {"temperature": 0.2}}
    entry = schema["properties"]["models"]["additionalProperties"]["properties"]
    for model in config["models"].values():
        for key, node in entry.items():
            if "default" in node:
                model.setdefault(key, copy.deepcopy(node["default"]))
        for key, node in entry["engine"]["properties"].items():
            if "default" in node:
                model["engine"].setdefault(key, node["default"])
    job = config["collection"]["jobs"][0]
    job.setdefault("seed", config["collection"]["seed"])
    job.setdefault("prompt_variant", config["models"][job["model"]].get("prompt_variant", "native"))
    return config


TARGETS = ["all", "plan"]

# ---------------------------------------------------------------------------------------------- schema keys


@dataclass
class Key:
    path: str  # dotted; "<name>" for a key of a mapping by name, "[]" for an item of a list
    type: str
    default: str
    description: str
    section: str
    ref: str = ""  # the path below a $ref'd definition: "<$ref> <key below it>"


def _type_of(node: dict[str, Any]) -> str:
    if "oneOf" in node:
        return " or ".join(_type_of(alt) for alt in node["oneOf"])
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    text = " or ".join(kinds) if kinds else ("object" if "properties" in node or "additionalProperties" in node else "any")
    bounds = []
    for word, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"),
                       ("minItems", "items >="), ("minLength", "length >=")):
        if word in node and not (word in ("minItems", "minLength") and node[word] == 0):
            bounds.append(f"{sign} {node[word]}")
    if node.get("uniqueItems"):
        bounds.append("unique items")
    if "pattern" in node:
        bounds.append(f"matching `{node['pattern']}`")
    items = node.get("items")
    if isinstance(items, dict) and "enum" in items:
        text += " of " + _type_of(items)
    elif isinstance(items, dict) and items.get("type") and "properties" not in items:
        text += f" of {_type_of(items)}"
    return text + (f" ({', '.join(bounds)})" if bounds else "")


def _resolve(node: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not ref:
        return node
    target = schema
    for part in ref.lstrip("#/").split("/"):
        target = target[part]
    merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return merged


def _walk(node: dict[str, Any], path: str, schema: dict[str, Any], section: str, out: list[Key],
          ref: str = "") -> None:
    if node.get("$ref"):
        ref = node["$ref"]
    node = _resolve(node, schema)
    if path:
        default = json.dumps(node["default"], ensure_ascii=False) if "default" in node else ""
        out.append(Key(path, _type_of(node), default, " ".join(str(node.get("description", "")).split()), section,
                       ref))
    for name, child in (node.get("properties") or {}).items():
        _walk(child, f"{path}.{name}" if path else name, schema, section or name, out, f"{ref} {name}".strip()
              if ref else "")
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and (extra.get("properties") or extra.get("$ref")):
        _walk(extra, f"{path}.<name>", schema, section, out)
    items = node.get("items")
    if isinstance(items, dict) and (items.get("properties") or items.get("$ref")):
        _walk(items, f"{path}[]", schema, section, out)


def params_notes() -> dict[str, str]:
    """What ``thinkprobe/params.py`` says of each ``analysis`` key besides its ``doc=``: the comment on the
    field's line (the paper's section, or "ours" and why), and of each section its class docstring's first
    paragraph; by dotted key (``analysis.texttiling.window``)."""
    import ast
    import dataclasses
    import io
    import tokenize

    from thinkprobe.params import Params

    source = (REPO / "thinkprobe" / "params.py").read_text()
    comments = {tok.start[0]: tok.string.lstrip("#").strip()
                for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT}
    classes = {n.name: n for n in ast.parse(source).body if isinstance(n, ast.ClassDef)}
    notes = {}
    for section in dataclasses.fields(Params):
        cls = classes[section.default_factory.__name__]
        doc = ast.get_docstring(cls)
        if doc:
            notes[f"analysis.{section.name}"] = " ".join(doc.split("\n\n")[0].split())
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and stmt.end_lineno in comments:
                notes[f"analysis.{section.name}.{stmt.target.id}"] = comments[stmt.end_lineno]
    return notes


def schema_keys(schema: dict[str, Any] | None = None) -> list[Key]:
    """Every key of the (filled) schema, in the schema's order; an ``analysis`` key's description completed
    from ``thinkprobe/params.py`` (:func:`params_notes`), the one home of those keys."""
    if schema is None:
        from thinkprobe.config import load_schema

        schema = load_schema(REPO / "config" / "schema.yaml")
    out: list[Key] = []
    _walk(schema, "", schema, "", out)
    notes = params_notes()
    for key in out:
        note = notes.get(key.path, "")
        if note and note not in key.description:
            key.description = f"{key.description}; {note}" if key.description else note
    return out


# ------------------------------------------------------------------ which rules' params take which key (derived)


class _Recorder:
    def __init__(self) -> None:
        self.rule: str | None = None
        self.in_params = False
        self.params: dict[str, set[str]] = {}
        self.planning: set[str] = set()
        self.root: Any = None

    def read(self, path: tuple, value: Any) -> None:
        if isinstance(value, (dict, list)):  # a container read on the way to its keys: not a read of its own
            return
        self.add(path)

    def add(self, path: tuple) -> None:
        key = _dotted(path)
        if self.in_params and self.rule:
            self.params.setdefault(self.rule, set()).add(key)
        else:
            self.planning.add(key)


REC = _Recorder()


def _dotted(path: tuple) -> str:
    return ".".join("[]" if isinstance(p, int) else str(p) for p in path)


def _leaves(value: Any, path: tuple) -> list[tuple]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*path, k))] or [path]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, (*path, i))] or [path]
    return [path]


class _TDict(dict):
    """A config mapping that records the keys read from it (and everything, when it is iterated or copied)."""

    def _whole(self) -> None:
        for leaf in _leaves(dict(dict.items(self)), self._path):
            REC.add(leaf)

    def __getitem__(self, key):
        value = dict.__getitem__(self, key)
        REC.read((*self._path, key), value)
        return value

    def get(self, key, default=None):
        if dict.__contains__(self, key):
            return self[key]
        REC.add((*self._path, key))
        return default

    def __contains__(self, key):
        REC.add((*self._path, key))
        return dict.__contains__(self, key)

    def __iter__(self):
        self._whole()
        return dict.__iter__(self)

    def keys(self):
        self._whole()
        return dict.keys(self)

    def items(self):
        self._whole()
        return dict.items(self)

    def values(self):
        self._whole()
        return dict.values(self)

    def copy(self):
        self._whole()
        return _tag(dict(dict.items(self)), self._path)

    def __deepcopy__(self, memo):
        self._whole()
        return self.copy()


class _TList(list):
    def __iter__(self):
        REC.add(self._path)
        return list.__iter__(self)

    def __getitem__(self, index):
        REC.add(self._path)
        return list.__getitem__(self, index)

    def __deepcopy__(self, memo):
        return self


class _TInt(int):
    def __int__(self):  # int(x) keeps the key (Python warns that this may stop working one day)
        return self

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self


class _TFloat(float):
    def __float__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self


class _TStr(str):
    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self


_TAINTED = {int: _TInt, float: _TFloat, str: _TStr}


def _tag(value: Any, path: tuple) -> Any:
    """``value`` with every mapping, list, number and string knowing its config key (booleans and None cannot)."""
    if isinstance(value, dict):
        out = _TDict({k: _tag(v, (*path, k)) for k, v in value.items()})
    elif isinstance(value, list):
        out = _TList(_tag(v, (*path, i)) for i, v in enumerate(value))
    elif type(value) in _TAINTED:
        out = _TAINTED[type(value)](value)
    else:
        return value
    out._path = path
    return out


def _lookup(path: tuple) -> Any:
    node = REC.root
    for part in path:
        try:
            node = dict.__getitem__(node, part) if isinstance(node, dict) else list.__getitem__(node, part)
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _held(value: Any, found: set[str], seen: set[int]) -> None:
    """The config keys whose values (or whole mappings) a rule's evaluated params hold."""
    if id(value) in seen:
        return
    seen.add(id(value))
    path = getattr(value, "_path", None)
    if isinstance(value, _TDict):
        found.update(_dotted(p) for p in _leaves(dict(dict.items(value)), path))
        return
    if path is not None and not isinstance(value, (dict, list)):
        found.add(_dotted(path))
    if isinstance(value, dict):
        items = list(dict.items(value))
        # booleans and None cannot carry their key: one copied beside tainted siblings of one mapping is that
        # mapping's key when the config holds the same value there
        parents = {v._path[:-1] for k, v in items if getattr(v, "_path", None) and v._path[-1] == k}
        for k, v in items:
            if v is None or isinstance(v, bool):
                for parent in parents:
                    node = _lookup(parent)
                    if isinstance(node, dict) and dict.__contains__(node, k) and dict.__getitem__(node, k) == v:
                        found.add(_dotted((*parent, k)))
            _held(v, found, seen)
    elif isinstance(value, (list, tuple, set)):
        for v in list.__iter__(value) if isinstance(value, list) else value:
            _held(v, found, seen)
    elif hasattr(value, "items") and callable(value.items):  # Snakemake's Namedlist
        try:
            for _k, v in value.items():
                _held(v, found, seen)
        except Exception:  # noqa: BLE001 - not a mapping after all
            pass


_RULE_KEYWORDS = {"input", "output", "log", "benchmark", "threads", "resources", "priority", "message",
                  "wildcard_constraints", "group", "conda", "container", "envmodules", "shadow", "cache_rule",
                  "handover", "default_target", "localrule", "retries", "script", "shellcmd", "run", "norun",
                  "notebook", "wrapper", "cwl", "template_engine", "docstring", "pathvars", "version"}


def derive() -> dict[str, Any]:
    """Parse the workflow and build its DAG here, recording which config keys each rule's params take."""
    import warnings

    import yaml

    warnings.filterwarnings("ignore", category=DeprecationWarning)  # __int__/__float__ returning a subclass
    sys.path.insert(0, str(REPO))
    import thinkprobe.config as tconfig
    from snakemake.api import SnakemakeApi  # first: snakemake.workflow imports it
    from snakemake import workflow as smk_workflow
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

    original = tconfig.validate_config

    def recording_validate(config, schema, source="config"):
        REC.root = _tag(original(config, schema, source), ())
        return REC.root

    tconfig.validate_config = recording_validate
    # A collection job's only identity param is a digest of what decides its units (unit_store.batch_digest); a
    # digest holds no config key, so here the param holds what is hashed instead: each unit's identity, and the
    # sampling mapping it resolves (SamplingParams rebuilds the numbers, which drops their keys).
    from thinkprobe.generate import unit_store

    unit_store.batch_digest = lambda params: [params["sampling"], params["seed"],
                                                 *(unit_store.unit_identity(u, params) for u in params["units"])]
    cls = smk_workflow.Workflow
    plain_getattribute = cls.__getattribute__

    def getattribute(self, name):
        value = plain_getattribute(self, name)
        if name == "rule":
            def rule(*args, **kwargs):
                REC.rule, REC.in_params = kwargs.get("name"), False
                return value(*args, **kwargs)
            return rule
        if name == "params":
            REC.in_params = True
        elif name in _RULE_KEYWORDS:
            REC.in_params = False
        return value

    cls.__getattribute__ = getattribute
    held: dict[str, set[str]] = {}
    edges: set[tuple[str, str]] = set()
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for entry in REPO.iterdir():  # what the config may name (examples, question files), never the results
            if entry.name not in {"results", ".snakemake", ".git", ".venv", "site"}:
                (work / entry.name).symlink_to(entry)
        probe = work / "probe.yaml"
        probe.write_text(yaml.safe_dump(probe_config()))
        try:
            with SnakemakeApi(OutputSettings()) as api:
                wf_api = api.workflow(
                    resource_settings=ResourceSettings(cores=1),
                    config_settings=ConfigSettings(configfiles=[probe], replace_workflow_config=True),
                    snakefile=REPO / "Snakefile",
                    workdir=work,
                )
                dag_api = wf_api.dag(DAGSettings(targets=frozenset(TARGETS), forceall=True))
                wf = dag_api.workflow_api._workflow
                REC.rule, REC.in_params = None, False
                cls.__getattribute__ = plain_getattribute
                for rule in wf.rules:  # parse-time params: the values they hold
                    found: set[str] = set()
                    if rule.params:
                        _held(list(rule.params), found, set())
                    held[rule.name] = found
                wf._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True, nolock=True)
                wf._build_dag()
                for job in wf.dag.jobs:
                    REC.rule, REC.in_params = job.rule.name, True
                    params = job.rule.expand_params(job.wildcards_dict, job.input, job.output, job)
                    REC.in_params = False
                    _held(params, held.setdefault(job.rule.name, set()), set())
                    for dep in wf.dag.dependencies[job]:
                        edges.add((dep.rule.name, job.rule.name))
                rules = sorted(r.name for r in wf.rules)
        finally:
            cls.__getattribute__ = plain_getattribute
            tconfig.validate_config = original
            os.chdir(cwd)
    takes = {r: sorted(REC.params.get(r, set()) | held.get(r, set())) for r in rules}
    return {"rules": takes, "planning": sorted(REC.planning), "edges": sorted(edges)}


def derived() -> dict[str, Any]:
    """:func:`derive` in a fresh interpreter (Snakemake keeps global state): its JSON."""
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--derive"], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=600)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("{")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"deriving the rules' config keys failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(line)



# --------------------------------------------------------------------------------------------- the reference

_SKIP_RULES = {"all", "stats", "trajectories", "fetch_models"}  # targets only: they run nothing


def schema_path(config_path: str, schema: dict[str, Any]) -> str | None:
    """The schema key a concrete config key belongs to (``models.smollm2.engine.x`` -> ``models.<name>.engine.x``):
    the deepest key the schema declares along the path, or None outside the schema."""
    node, out = schema, []
    for part in config_path.split("."):
        node = _resolve(node, schema)
        if part == "[]":
            items = node.get("items")
            if not isinstance(items, dict):
                break
            node, out = items, out[:-1] + [out[-1] + "[]"] if out else out
            continue
        props = node.get("properties") or {}
        if part in props:
            node, out = props[part], [*out, part]
        elif isinstance(node.get("additionalProperties"), dict) and (
                node["additionalProperties"].get("properties") or node["additionalProperties"].get("$ref")):
            node, out = node["additionalProperties"], [*out, "<name>"]
        else:
            break
    return ".".join(out) or None


def _downstream(edges: list[list[str]]) -> dict[str, list[str]]:
    children: dict[str, set[str]] = {}
    for a, b in edges:
        children.setdefault(a, set()).add(b)
    out = {}
    for rule in children:
        seen, todo = set(), list(children[rule])
        while todo:
            r = todo.pop()
            if r not in seen:
                seen.add(r)
                todo.extend(children.get(r, ()))
        out[rule] = sorted(seen - _SKIP_RULES)
    return out


# A $ref'd definition that overrides other keys takes their rules: the schema says a sampling override has
# "the same keys and bounds" as collection.sampling, merged over it for one model or one job.
OVERRIDES = {"#/$defs/sampling_override": "collection.sampling"}


def key_rules(keys: list[Key], derivation: dict[str, Any], schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per schema key: the rules whose params take it (directly, or a key below it), and whether the workflow
    reads it when planning the jobs."""
    taken: dict[str, set[str]] = {}
    for rule, paths in derivation["rules"].items():
        if rule in _SKIP_RULES:
            continue
        for path in paths:
            norm = schema_path(path, schema)
            if norm:
                taken.setdefault(norm, set()).add(rule)
    planned = {schema_path(p, schema) for p in derivation["planning"]} - {None}
    out = {}
    for key in keys:
        rules = set()
        for norm, by in taken.items():
            if norm == key.path or norm.startswith(key.path + ".") or norm.startswith(key.path + "[]") \
                    or key.path.startswith(norm + ".") or key.path.startswith(norm + "[]"):
                rules |= by
        if key.ref:
            base, *below = key.ref.split(" ")
            if base in OVERRIDES:
                target = ".".join([OVERRIDES[base], *below])
                rules |= {r for norm, by in taken.items() if norm == target or norm.startswith(target + ".")
                          for r in by}
        read = any(p == key.path or p.startswith(key.path + ".") or p.startswith(key.path + "[]")
                   or key.path.startswith(p + ".") for p in planned)
        out[key.path] = {"rules": sorted(rules), "planning": read}
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(derivation: dict[str, Any] | None = None) -> str:
    """The reference: one table per top-level section, then the rule graph's downstream table."""
    from thinkprobe.config import load_schema

    schema = load_schema(REPO / "config" / "schema.yaml")
    keys = schema_keys(schema)
    derivation = derivation if derivation is not None else derived()
    reruns = key_rules(keys, derivation, schema)
    downstream = _downstream(derivation["edges"])
    lines: list[str] = []
    sections = [k for k in keys if "." not in k.path and "[" not in k.path]
    for top in sections:
        lines += [f"## `{top.path}`", ""]
        if top.description:
            lines += [top.description, ""]
        lines += ["| key | type | default | reruns (rules whose params take it) | description |",
                  "|---|---|---|---|---|"]
        for key in keys:
            if key.section != top.path:
                continue
            info = reruns[key.path]
            rerun = ", ".join(f"`{r}`" for r in info["rules"])
            if info["planning"] and not set(info["rules"]) - {"plan"}:
                rerun = f"{rerun}; otherwise read when the jobs are planned" if rerun else "none: read when the jobs are planned"
            rerun = rerun or "none"
            default = f"`{_cell(key.default)}`" if key.default else ""
            lines.append(f"| `{_cell(key.path)}` | {_cell(key.type)} | {default} | {rerun} | {_cell(key.description)} |")
        lines.append("")
    lines += ["## What a rerun reaches", "",
              "Snakemake reruns a job whose params changed, and then every job that reads its outputs "
              "(this workflow's rule graph, from the same DAG):", "",
              "| rule | then reruns |", "|---|---|"]
    for rule in sorted(set(derivation["rules"]) - _SKIP_RULES):
        after = downstream.get(rule, [])
        lines.append(f"| `{rule}` | {', '.join(f'`{r}`' for r in after) if after else 'nothing'} |")
    return "\n".join(lines) + "\n"


PAGE = REPO / "docs" / "configuration.md"
MARKER = "<!-- Generated below this line by `python scripts/config_reference.py --write`; do not edit below it. -->"
WRITE_COMMAND = ".venv/bin/python scripts/config_reference.py --write"


def page_text(generated: str, page: Path = PAGE) -> str:
    """The page: its introduction as committed (everything above :data:`MARKER`), the marker, ``generated``."""
    text = page.read_text(encoding="utf-8")
    if MARKER not in text:
        raise SystemExit(f"{page}: no line {MARKER!r}; put it where the generated reference begins")
    return text.split(MARKER, 1)[0] + MARKER + "\n\n" + generated


def stale(page: Path = PAGE, derivation: dict[str, Any] | None = None) -> str | None:
    """Why the committed page is not what :func:`markdown` generates now (its first differing line), or None."""
    want = page_text(markdown(derivation), page)
    have = page.read_text(encoding="utf-8")
    shown = page.relative_to(REPO) if page.is_relative_to(REPO) else page
    if want == have:
        return None
    for number, (a, b) in enumerate(zip(have.splitlines() + [""] * 9999, want.splitlines()), 1):
        if a != b:
            return (f"{shown} is stale (line {number}: committed {a[:120]!r}, generated {b[:120]!r}); "
                    f"regenerate it with `{WRITE_COMMAND}` and commit it")
    return f"{shown} is stale (it has lines past the generated end); run `{WRITE_COMMAND}`"


if __name__ == "__main__":
    if sys.argv[1:] == ["--derive"]:
        result = derive()
        sys.stdout.flush()
        print(json.dumps(result))
    elif sys.argv[1:] == ["--write"]:
        PAGE.write_text(page_text(markdown()), encoding="utf-8")
    elif sys.argv[1:] == ["--check"]:
        why = stale()
        if why:
            print(why, file=sys.stderr)
            sys.exit(1)
    elif not sys.argv[1:]:
        print(markdown())
    else:
        sys.exit(f"usage: {sys.argv[0]} [--write | --check | --derive]")
