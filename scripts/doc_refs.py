"""Every code reference on the documentation pages, resolved against the code, so a page cannot go stale.

    python scripts/doc_refs.py          # one line per reference that does not resolve (exit 1), or nothing

The pages are ``docs/*.md`` (the generated ``docs/results/`` and the history of ``docs/changes.md``, which
names removed things on purpose, are left out), ``README.md`` and ``bench/README.md``. A reference is read
only where its shape says it is code, so prose is never taken for one:

- **a path** in a code span or a link: a span that names a folder of the repository (``thinkprobe/x.py``,
  ``rules/*.smk``, ``tests/test_docs.py``), a file of the package relative to it (``stages/collect.py``), or a
  bare file name with a source extension (``encoder.py``); globs must match a file. Outputs (``results/``),
  placeholders (``{model}``, ``<name>``) and paths outside the checkout are not references.
- **a line or a name in a file**: ``file.py:123`` (the file has that line), ``file.py: name`` or
  ``file.py::name`` (the file defines ``name``: a function, class, assignment or method).
- **a dotted Python name**: ``thinkprobe.a.b.name`` (the module exists and defines ``name``, or the last
  module does), ``module.name`` where ``module`` is a module of the package (``templating.asset``) or
  ``Class.member`` for a class of the package; a call's arguments are dropped.
- **a config key**: a dotted span whose first part is a section of ``config/schema.yaml`` (``stats.cycle_cap``,
  also written as ``stats.cycle_cap: 10`` or ``... = 200``), or a key of the ``analysis`` section written
  without it (``texttiling.window``); ``<name>``/``<m>`` stand for any name. A dotted span that starts with a
  package module or a schema section must resolve as one of the two.
- **a name**: a CamelCase span (``TrajectoryJobs``; not ``OpenAI``) or a call (``parse_answer()``) must be defined, imported or
  used as an attribute somewhere in the package, the rule scripts or the scripts, be defined at the top of a
  test or benchmark module (``require()``), or be a builtin or one of Snakemake's functions (``protected()``).
- **a rule**: a span right after the word *rule*/*rules* (and the spans listed after it, ``rules `a`, `b`
  and `c```), a lower-case name right before *rule(s)*/*job(s)* or *(a local job)*, and a target of
  ``snakemake <target>``; globs (``stats_*``) must match a rule.
- **the Layout** of ``docs/development.md``: every module name it lists exists in the folder its entry is for
  (:func:`layout_problems`).
- **a command line**: ``thinkprobe <subcommand> --option`` (in a span or a shell block) names a subcommand of
  :func:`thinkprobe.cli.build_parser` and options it takes; ``bench/<script>.py --option`` and
  ``scripts/<script>.py --option`` name options the script's source spells.

A span right after *write*, *create*, *add* or *new file* is a file the reader is told to make, not a
reference. A path that a command writes and git does not ignore, or a name a page mentions on purpose as
removed, is named once on its page in a comment (``<!-- refs: written config/config.lock.yaml -->``,
``<!-- refs: removed collected_trace -->``), and so is a name of another system that looks like code
(``<!-- refs: external MaxSubmitJobs -->``, SLURM's); a proposed name that does not exist yet is written in italics.

Everything is read statically (``ast``, the schema file, the argparse parser), nothing of the package's heavy
imports runs: it is a test of the fast loop (``tests/test_doc_refs.py``). Documented in docs/development.md,
"The documentation".
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import re
import shlex
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterable, Iterator

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "thinkprobe"
TOP_DIRS = ("thinkprobe", "rules", "workflow", "scripts", "tests", "bench", "config", "profiles", "envs",
            "examples", "docs", ".ci")
SOURCE_EXT = (".py", ".smk", ".yaml", ".yml", ".md", ".j2", ".sh", ".toml", ".json", ".jsonl", ".css", ".js")
OUTPUT_PREFIXES = ("results/", "site/", ".snakemake/", ".venv/", "logs/")
SKIPPED_PAGES = ("docs/changes.md",)
# what a rule file calls without importing it (Snakemake's own functions)
SNAKEMAKE_FUNCTIONS = {"protected", "temp", "directory", "ancient", "expand", "touch", "pipe", "service",
                       "multiext", "unpack", "glob_wildcards", "report", "ensure", "flag", "update", "before_update",
                       "storage", "local", "checkpoints", "rules", "lookup", "evaluate", "branch", "collect", "exists"}
RULE_KEYWORDS = {"input", "output", "params", "log", "threads", "resources", "code", "script", "shell", "run",
                 "group", "conda", "benchmark", "message", "priority", "retries", "localrule", "wildcard_constraints",
                 "container", "envmodules", "handover", "default_target"}
DATA_EXT = {"parquet", "json", "jsonl", "md", "png", "pdf", "html", "csv", "yaml", "yml", "txt", "svg", "py",
            "smk", "gz", "log", "lock", "safetensors", "graphml", "j2", "css", "js", "sh", "toml", "tsv"}  # a history: it names what was removed or renamed, on purpose


@dataclass(frozen=True)
class Problem:
    page: str
    line: int
    reference: str
    why: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: `{self.reference}`: {self.why}"


def pages(repo: Path = REPO) -> list[Path]:
    found = [repo / "README.md", repo / "bench" / "README.md", *sorted((repo / "docs").glob("*.md"))]
    return [p for p in found if p.exists() and p.relative_to(repo).as_posix() not in SKIPPED_PAGES]


# ------------------------------------------------------------------------------------------- the code, read once


_PARSED: dict[str, ast.Module | None] = {}


class Code:
    """What the references resolve against, read from the checkout at ``repo``."""

    def __init__(self, repo: Path = REPO) -> None:
        self.repo = repo

    @cached_property
    def files(self) -> set[str]:
        import os

        top = {".git", ".venv", "site", "results", ".snakemake"}
        out = set()
        for folder, dirs, names in os.walk(self.repo):
            rel = Path(folder).relative_to(self.repo)
            dirs[:] = [d for d in dirs if d not in {"__pycache__", ".pytest_cache"} and not (rel == Path(".") and d in top)]
            prefix = "" if rel == Path(".") else rel.as_posix() + "/"
            out |= {f"{prefix}{d}/" for d in dirs} | {prefix + n for n in names}
        return out

    def ignored(self, rel: str) -> bool:
        """Whether git ignores ``rel``: a file that a command writes (``bench/data/``, the lock file)."""
        import subprocess

        try:
            return subprocess.run(["git", "check-ignore", "-q", "--no-index", rel], cwd=self.repo,
                                  capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False

    @cached_property
    def basenames(self) -> set[str]:
        return {f.rstrip("/").rsplit("/", 1)[-1] for f in self.files}

    @cached_property
    def modules(self) -> dict[str, Path]:
        """Dotted module name -> file, for every module of the package (a package by its ``__init__``)."""
        out = {}
        for path in (self.repo / PACKAGE).rglob("*.py"):
            parts = list(path.relative_to(self.repo).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
        return out

    def _tree(self, path: Path) -> ast.Module | None:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            return None
        if text not in _PARSED:  # by content: a second checkout (the tests' copy) parses only what differs
            try:
                _PARSED[text] = ast.parse(text)
            except SyntaxError:
                _PARSED[text] = None
        return _PARSED[text]

    @cached_property
    def _definitions(self) -> dict[Path, tuple[set[str], dict[str, set[str]]]]:
        return {}

    def defined(self, path: Path) -> tuple[set[str], dict[str, set[str]]]:
        """Top-level names a Python file defines or imports, and each class's members (methods, attributes)."""
        if path in self._definitions:
            return self._definitions[path]
        names: set[str] = set()
        classes: dict[str, set[str]] = {}
        tree = self._tree(path) if path.suffix == ".py" else None
        for node in tree.body if tree else []:
            names |= _bound(node)
            if isinstance(node, ast.ClassDef):
                members = set()
                for item in node.body:
                    members |= _bound(item)
                    if isinstance(item, ast.FunctionDef):  # self.x = ... in a method
                        for sub in ast.walk(item):
                            if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store):
                                members.add(sub.attr)
                classes[node.name] = members
        if path.suffix == ".smk" or path.name == "Snakefile":
            text = path.read_text(encoding="utf-8")
            names |= set(re.findall(r"^\s*(?:def|class)\s+(\w+)", text, re.M))
            names |= set(re.findall(r"^([A-Za-z_]\w*)\s*=", text, re.M))
        self._definitions[path] = (names, classes)
        return names, classes

    @cached_property
    def known_names(self) -> set[str]:
        """Every name defined, imported or used as an attribute in the package, rule scripts and scripts."""
        out = set(dir(builtins))
        for folder in (PACKAGE, "workflow", "scripts"):
            for path in (self.repo / folder).rglob("*.py"):
                tree = self._tree(path)
                if tree is None:
                    continue
                for node in ast.walk(tree):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        out.add(node.name)
                    elif isinstance(node, (ast.Import, ast.ImportFrom)):
                        out |= {(a.asname or a.name).split(".")[0] for a in node.names}
                        out |= {a.name for a in node.names}
                    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        out.add(node.id)
                    elif isinstance(node, ast.Attribute):  # jinja2.PackageLoader, np.sqrt
                        out.add(node.attr)
        for folder in ("tests", "bench"):  # their helpers (`require("vllm")`), at module level
            for path in (self.repo / folder).rglob("*.py"):
                for node in (self._tree(path) or ast.Module(body=[])).body:
                    out |= _bound(node)
        return out | SNAKEMAKE_FUNCTIONS

    @cached_property
    def classes(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for path in self.modules.values():
            for name, members in self.defined(path)[1].items():
                out.setdefault(name, set()).update(members)
        return out

    @cached_property
    def rules(self) -> set[str]:
        out = set()
        for path in [self.repo / "Snakefile", *(self.repo / "rules").glob("*.smk")]:
            text = path.read_text(encoding="utf-8")
            out |= set(re.findall(r"^\s*(?:rule|checkpoint)\s+(\w+)\s*:", text, re.M))
            out |= set(re.findall(r"^\s*use\s+rule\s+\S+\s+(?:from\s+\S+\s+)?as\s+(\w+)", text, re.M))
        return out

    @cached_property
    def schema(self) -> dict:
        import yaml

        return yaml.safe_load((self.repo / "config" / "schema.yaml").read_text(encoding="utf-8"))

    @cached_property
    def declared(self) -> list[str]:
        """Every key the schema declares, dotted; ``<name>`` for a name the user chooses, ``[]`` for a list's item."""
        out: list[str] = []

        def walk(node: dict, path: str, depth: int = 0) -> None:
            node = _resolve(node, self.schema)
            if depth > 12:
                return
            for key, child in (node.get("properties") or {}).items():
                sub = f"{path}.{key}" if path else key
                out.append(sub)
                walk(child, sub, depth + 1)
            extra = node.get("additionalProperties")
            if isinstance(extra, dict) and path:
                out.append(f"{path}.<name>")
                walk(extra, f"{path}.<name>", depth + 1)
            items = node.get("items")
            if isinstance(items, dict) and path:
                walk(items, f"{path}[]", depth + 1)

        walk(self.schema, "")
        out += [f"analysis.{section}.{key}" for section, keys in self.analysis_keys.items() for key in keys]
        return out

    @cached_property
    def analysis_keys(self) -> dict:
        """The ``analysis`` section's keys, from the dataclasses the schema's block is generated from."""
        sys.path.insert(0, str(self.repo))
        try:
            from thinkprobe.params import parameter_specs
        finally:
            sys.path.remove(str(self.repo))
        return parameter_specs()

    @cached_property
    def cli(self) -> dict[str, set[str]]:
        """Subcommand -> its option strings (``""`` -> the top-level parser's)."""
        import argparse

        sys.path.insert(0, str(self.repo))
        try:
            from thinkprobe.cli import build_parser
        finally:
            sys.path.remove(str(self.repo))
        parser = build_parser()
        out = {"": set(parser._option_string_actions)}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    out[name] = set(sub._option_string_actions)
        return out


def _bound(node: ast.AST) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(node, (ast.If, ast.Try)):
        out = set()
        for child in ast.iter_child_nodes(node):
            out |= _bound(child)
        for handler in getattr(node, "handlers", []):
            for child in handler.body:
                out |= _bound(child)
        return out
    return set()


# ----------------------------------------------------------------------------------------- reading the pages

_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SHELL_LANGS = {"bash", "sh", "shell", "console", ""}


def read_page(path: Path) -> Iterator[tuple[int, str, str]]:
    """``(line number, kind, text)`` of every code span (``span``), link target (``link``) and line of a shell
    block (``shell``) on the page. Math (``$...$``, ``\\[...\\]``) holds no references."""
    fence = None
    lang = ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _FENCE.match(line)
        if m:
            if fence is None:
                fence, lang = m.group(2), m.group(3).lower()
            elif m.group(2).startswith(fence[0]) and len(m.group(2)) >= len(fence):
                fence = None
            continue
        if fence is not None:
            if lang in SHELL_LANGS:
                yield number, "shell", line
            continue
        for span in _SPAN.finditer(line):
            if _NEW_FILE.search(line[:span.start()]):
                yield number, "new", span.group(2).strip()  # a file the reader is told to write
            else:
                yield number, "span", span.group(2).strip()
        for link in _LINK.finditer(line):
            yield number, "link", link.group(1)
        for rules in _rule_lists(line):
            yield number, "rule", rules


_NEW_FILE = re.compile(r"\b(?:[Ww]rite|[Cc]reate|[Aa]dd|new file|[Nn]ew module)\s+(?:a\s+|the\s+)?$")
_RULE_LIST = re.compile(r"\brules?\s+((?:`[^`]+`)(?:\s*(?:,|and|or|,\s*and|,\s*or)\s*`[^`]+`)*)")


_RULE_AFTER = re.compile(r"`([a-z][a-z0-9]*_[a-z0-9_]+)`\s+(?:rules?|jobs?|\(a [\w\s-]*\bjob)\b")


def _rule_lists(line: str) -> Iterator[str]:
    for m in _RULE_LIST.finditer(line):
        yield from re.findall(r"`([^`]+)`", m.group(1))
    yield from _RULE_AFTER.findall(line)  # "`traj_sample` jobs", "`collect` (a local job)"


# ------------------------------------------------------------------------------------------------- resolving


class Resolver:
    def __init__(self, code: Code) -> None:
        self.code = code

    # paths -------------------------------------------------------------------------------------------------
    def _looks_like_path(self, text: str) -> bool:
        m = re.fullmatch(r"(\S+\.\w+):\s+[\w./]+", text)  # `stages/joblog.py: job_log`
        if m:
            return self._looks_like_path(m.group(1))
        if " " in text or not re.fullmatch(r"[\w./*\-:{}<>\[\]]+", text) or "://" in text:
            return False
        first = text.split("/", 1)[0]
        if "/" in text and (first in TOP_DIRS or first + "/" in {f for f in self.code.files if f.count("/") == 1}
                            or f"{PACKAGE}/{first}/" in self.code.files):
            return True
        return "/" not in text and text.split(":", 1)[0].endswith(SOURCE_EXT) and re.match(r"[\w.*-]+\.\w+", text)

    def path(self, text: str, page: Path) -> str | None:
        """None when ``text`` (a path, maybe with ``:line`` or ``: name``) resolves; else why not."""
        text = text.rstrip(".,;")
        name = None
        m = re.fullmatch(r"(.+?\.\w+)(?::(\d+)(?:-\d+)?|::?\s*([\w./]+))", text)
        if m:
            text, line, name = m.group(1), m.group(2), m.group(3)
        else:
            line = None
        if any(c in text for c in "{}<>") or "NNNN" in text or text.startswith(OUTPUT_PREFIXES):
            return None
        if text.startswith(("/", "~", "..")):
            return None
        if "/" not in text and line is None and name is None:
            return None  # a bare file name: maybe an output or another repository's file; not a reference
        found = self._find(text, page)
        if found is None:
            if self.code.ignored(text.rstrip("/")):
                return None  # written by a command (git ignores it)
            return "no such file or folder in the repository"
        if line is not None:
            count = len(found.read_text(encoding="utf-8").splitlines())
            if int(line) > count:
                return f"{found.relative_to(self.code.repo)} has {count} lines, not {line}"
        if name:
            for part in name.split("/"):  # `tests/conftest.py: require/missing`
                if not self._file_defines(found, part):
                    return f"{found.relative_to(self.code.repo)} defines no `{part}`"
        return None

    def _find(self, text: str, page: Path) -> Path | None:
        text = text.rstrip("/")
        candidates = [text, f"{PACKAGE}/{text}"]
        if page.parent != self.code.repo:
            candidates.append((page.parent.relative_to(self.code.repo) / text).as_posix())
        for cand in candidates:
            if any(ch in cand for ch in "*?["):
                matches = [f for f in self.code.files if fnmatch.fnmatch(f.rstrip("/"), cand)]
                if matches:
                    return self.code.repo / sorted(matches)[0].rstrip("/")
            elif cand in self.code.files or cand + "/" in self.code.files:
                return self.code.repo / cand
        if "/" not in text:
            matches = sorted(f for f in self.code.files if f.rsplit("/", 1)[-1] == text)
            if matches:
                return self.code.repo / matches[0]
        return None

    def _file_defines(self, path: Path, name: str) -> bool:
        if path.is_dir():
            return (path / name).exists() or (path / f"{name}.py").exists()
        names, classes = self.code.defined(path)
        if name in names:
            return True
        head, _, member = name.partition(".")
        return bool(member) and member in classes.get(head, set())

    # dotted names and config keys -----------------------------------------------------------------------------
    def dotted(self, text: str) -> str | None:
        """None when the dotted span resolves (or is not ours to check); else why not."""
        m = re.fullmatch(r"([A-Za-z_<][\w<>]*(?:\.[A-Za-z_<][\w<>\[\]]*)+)(\(.*\))?(?:\s*(?::|=)\s*.*)?", text)
        if not m:
            return None
        name, call = m.group(1), m.group(2)
        parts = name.split(".")
        if parts[-1] in DATA_EXT and call is None:
            return None  # a file name (`ablation.parquet`), not a dotted name
        if parts[0] == PACKAGE:
            return self._python(parts)
        sections = set(self.code.schema.get("properties", {}))
        modules = {mod.rsplit(".", 1)[-1] for mod in self.code.modules}
        is_config = parts[0] in sections or parts[0] in self.code.analysis_keys
        is_module = parts[0] in modules or parts[0] in self.code.classes
        if not (is_config or is_module):
            return None
        if call is None and (is_config and self.config_key(parts) is None or self.key_below(parts)):
            return None
        if is_module and self._member(parts) is None:
            return None
        if is_config and is_module:
            return f"neither a key of config/schema.yaml nor a name in the package ({self.config_key(parts)})"
        if is_config:
            return self.config_key(parts)
        return self._member(parts)

    def _python(self, parts: list[str]) -> str | None:
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            if module in self.code.modules:
                rest = parts[cut:]
                if not rest:
                    return None
                path = self.code.modules[module]
                if len(rest) == 1 and (self._file_defines(path, rest[0])
                                       or f"{module}.{rest[0]}" in self.code.modules):
                    return None
                if len(rest) == 2 and rest[1] in self.code.defined(path)[1].get(rest[0], set()):
                    return None
                return f"{path.relative_to(self.code.repo)} defines no `{'.'.join(rest)}`"
        return f"no module `{'.'.join(parts[:2])}` in the package"

    def _member(self, parts: list[str]) -> str | None:
        head, rest = parts[0], parts[1:]
        paths = [p for mod, p in self.code.modules.items() if mod.rsplit(".", 1)[-1] == head]
        for path in paths:
            if self._file_defines(path, ".".join(rest[:2])) or self._file_defines(path, rest[0]):
                return None
            if any(mod.endswith(f".{head}.{rest[0]}") for mod in self.code.modules):
                return None
        if head in self.code.classes and rest[0] in self.code.classes[head]:
            return None
        if any(cls.lower() == head and rest[0] in members for cls, members in self.code.classes.items()):
            return None  # `engine.generate`: an instance of the package's class Engine
        where = ", ".join(str(p.relative_to(self.code.repo)) for p in paths) or f"class {head}"
        return f"{where}: no `{rest[0]}`"

    def key_below(self, parts: list[str]) -> bool:
        """Whether ``parts`` is the tail of a key the schema declares, written below its section (``engine.dtype``
        of a model entry, ``sampling.seed`` of collection); ``<x>`` stands for any name."""
        want = [("<name>" if re.fullmatch(r"<\w+>", p) else p.removesuffix("[]")) for p in parts]
        for key in self.code.declared:
            have = [p.removesuffix("[]") for p in key.split(".")]
            if len(have) > len(want) and have[-len(want):] == want:
                return True
        return False

    def config_key(self, parts: list[str]) -> str | None:
        """None when ``parts`` is a key the schema declares (or a key of ``analysis`` written without it)."""
        schema = self.code.schema
        if parts[0] in self.code.analysis_keys and parts[0] not in schema.get("properties", {}):
            keys = self.code.analysis_keys[parts[0]]
            if len(parts) == 2 and parts[1] in keys or len(parts) == 1:
                return None
            return f"analysis.{parts[0]} has no key `{'.'.join(parts[1:])}` (thinkprobe/params.py)"
        if parts[0] == "analysis":
            if len(parts) == 1:
                return None
            return self.config_key(parts[1:]) if parts[1] in self.code.analysis_keys else \
                f"the analysis section has no `{parts[1]}` (thinkprobe/params.py)"
        node = schema
        for i, part in enumerate(parts):
            node = _resolve(node, schema)
            part = part.removesuffix("[]")
            props = node.get("properties") or {}
            extra = node.get("additionalProperties")
            if part in props:
                node = props[part]
            elif re.fullmatch(r"<\w+>", part) and isinstance(extra, dict):
                node = extra
            elif isinstance(extra, dict) and not part.startswith("<"):
                node = extra  # a name the user chooses (a model, a question set)
            elif extra is True or (not props and node.get("type") == "object" and extra is None):
                return None  # a free-form mapping
            else:
                return f"config/schema.yaml declares no `{'.'.join(parts[:i + 1])}`"
            node = _resolve(node, schema)
            if node.get("type") == "array" and isinstance(node.get("items"), dict):
                node = node["items"]
        return None

    # names, rules, command lines -----------------------------------------------------------------------------
    def name(self, text: str) -> str | None:
        m = re.fullmatch(r"([A-Za-z_]\w*)(\(.*\))?", text)
        if not m:
            return None
        name, call = m.group(1), m.group(2)
        camel = re.fullmatch(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+", name) is not None  # not OpenAI, HTTP
        if not (camel or call is not None):
            return None
        if name in self.code.known_names:
            return None
        return "no such name in the package, its scripts, tests or benchmarks"

    def rule(self, text: str) -> str | None:
        if not re.fullmatch(r"[\w*?]+", text) or text in RULE_KEYWORDS:
            return None  # "a rule's `params`": a keyword of a rule, not its name
        if any(fnmatch.fnmatch(r, text) for r in self.code.rules):
            return None
        return "no such rule in Snakefile or rules/*.smk"

    def command(self, text: str) -> list[tuple[str, str]]:
        """``(reference, why)`` for each part of a command line that does not resolve."""
        text = text.split("#", 1)[0].strip().rstrip("\\").strip()
        text = re.sub(r"^(?:\$\s+)?(?:[A-Z_]+=\S+\s+)*", "", text)
        try:
            words = shlex.split(text)
        except ValueError:
            return []
        out = []
        for i, word in enumerate(words):
            base = word.rsplit("/", 1)[-1]
            if base == "thinkprobe" and (i == 0 or words[i - 1] in {"-m", "exec"} or word.endswith("bin/thinkprobe")):
                out += self._thinkprobe(words[i + 1:])
                break
            if base == "snakemake" and (i == 0 or word.endswith("bin/snakemake")):
                out += self._snakemake(words[i + 1:])
                break
            if re.fullmatch(r"(bench|scripts)/[\w-]+\.py", word) and (i == 0 or words[i - 1].endswith(("python", "python3"))):
                out += self._script(word, words[i + 1:])
                break
        return out

    def _thinkprobe(self, args: list[str]) -> list[tuple[str, str]]:
        cli = self.code.cli
        if not args:
            return []
        sub = args[0]
        if "/" in sub and not sub.startswith("-"):  # `thinkprobe analyze/ablate`: either subcommand
            return [r for s in sub.split("/") for r in self._thinkprobe([s, *args[1:]])]
        if sub.startswith("-"):
            return [(sub, "`thinkprobe` takes no such option")] if sub.split("=")[0] not in cli[""] else []
        if sub not in cli:
            return [(f"thinkprobe {sub}", f"no such subcommand (thinkprobe.cli knows {', '.join(sorted(set(cli) - {''}))})")]
        return [(f"thinkprobe {sub} {opt}", "no such option of the subcommand")
                for opt in (a.split("=")[0] for a in args[1:] if a.startswith("--"))
                if opt not in cli[sub] and opt not in cli[""]]

    def _snakemake(self, args: list[str]) -> list[tuple[str, str]]:
        out, skip = [], False
        for arg in args:
            if skip:
                skip = arg.startswith("-") is False and False
                continue
            if arg.startswith("-"):
                skip = arg in {"--profile", "--configfile", "--cores", "-c", "-j", "--jobs", "--config", "--directory",
                               "-d", "--snakefile", "-s", "--until", "--forcerun", "-R", "--allowed-rules"}
                if arg in {"--config", "--configfile", "--forcerun", "-R", "--until", "--allowed-rules"}:
                    break  # these take several values: what follows is not a target
                continue
            if "/" in arg or "=" in arg or "." in arg or any(c in arg for c in "{}<>$"):
                continue
            why = self.rule(arg)
            if why:
                out.append((f"snakemake {arg}", why))
        return out

    def _script(self, script: str, args: list[str]) -> list[tuple[str, str]]:
        path = self.code.repo / script
        if not path.exists():
            return [(script, "no such file in the repository")]
        source = path.read_text(encoding="utf-8")
        return [(f"{script} {opt}", "the script's source spells no such option")
                for opt in (a.split("=")[0] for a in args if a.startswith("--"))
                if f'"{opt}"' not in source and f"'{opt}'" not in source]


def _resolve(node: dict, schema: dict) -> dict:
    while isinstance(node, dict) and "$ref" in node:
        target = schema
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    if isinstance(node, dict) and "oneOf" in node:  # e.g. an object or null: the object's keys
        for alt in node["oneOf"]:
            alt = _resolve(alt, schema)
            if alt.get("properties") or isinstance(alt.get("additionalProperties"), dict):
                return alt
    return node


# ------------------------------------------------------------------------------------------------- checking


_WRITTEN = re.compile(r"<!--\s*refs:\s*(?:written|removed|external)\s+(.+?)\s*-->")


def check_page(path: Path, resolver: Resolver) -> list[Problem]:
    """The page's references that do not resolve. A path that a command writes, and that git does not ignore,
    is named once in a comment on the page, ``<!-- refs: written config/config.lock.yaml -->``; so is a name
    that a page mentions as removed, on purpose (``<!-- refs: removed collected_trace -->``)."""
    rel = path.relative_to(resolver.code.repo).as_posix()
    written = {w for m in _WRITTEN.finditer(path.read_text(encoding="utf-8")) for w in m.group(1).split()}
    out = []
    for number, kind, text in read_page(path):
        if text in written:
            continue
        found: list[tuple[str, str]] = []
        if kind == "new":
            continue
        if kind == "rule":
            why = resolver.rule(text)
            found = [(text, why)] if why else []
        elif kind == "link":
            target = text.split("#", 1)[0]
            if target and not re.match(r"[a-z]+:", target) and not target.startswith("/"):
                if not (path.parent / target).exists():
                    found = [(text, "the link's target does not exist")]
        elif kind == "shell":
            found = resolver.command(text)
        else:
            if re.match(r"(\.venv/bin/|python3? |\$ )?(thinkprobe|snakemake|bench/|scripts/)", text) and " " in text:
                found = resolver.command(text)
            elif resolver._looks_like_path(text):
                why = resolver.path(text, path)
                found = [(text, why)] if why else []
            elif "." in text:
                why = resolver.dotted(text)
                found = [(text, why)] if why else []
            else:
                why = resolver.name(text)
                found = [(text, why)] if why else []
        out += [Problem(rel, number, ref, why) for ref, why in found]
    return out


LAYOUT_PAGE = "docs/development.md"


def layout_problems(path: Path, code: Code) -> list[Problem]:
    """The module names of the page's Layout block (the fenced block under ``## Layout``) that are no module of
    the package folder their entry is for. An entry is a line starting at column 0 (``thinkprobe/``: the core
    modules) or indented (``  generate/``: that subpackage) with its continuation lines; of its description, the
    text outside parentheses is split at commas, semicolons and colons, and each part that is a single name
    (``ingest``, ``lexicon(s)``) is a module name, the rest is prose. Completeness is not checked: a module the
    list does not name is not an error."""
    text = path.read_text(encoding="utf-8")
    m = re.search(r"^## Layout\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not m:
        return []
    start = text[:m.start(1)].count("\n") + 1
    block = re.search(r"^```[^\n]*\n(.*?)^```", m.group(1), re.S | re.M)
    if not block:
        return []
    first = start + m.group(1)[:block.start(1)].count("\n")
    entries: list[tuple[str, str, list[tuple[int, str]]]] = []  # (folder, description, its lines)
    for number, line in enumerate(block.group(1).splitlines(), first):
        head = re.match(r"^( {0,2})(\S+/)\s+(.*)$", line)
        if head and len(head.group(1)) in (0, 2) and not line.startswith(" " * 4):
            folder = f"{PACKAGE}/{head.group(2)}" if head.group(1) else head.group(2)
            entries.append((folder, head.group(3), [(number, line)]))
        elif entries and line.startswith(" " * 4):
            folder, desc, lines = entries[-1]
            entries[-1] = (folder, f"{desc} {line.strip()}", [*lines, (number, line)])
        else:
            entries.append(("", line, [(number, line)]))
    out = []
    rel = path.relative_to(code.repo).as_posix()
    for folder, desc, lines in entries:
        if not folder.startswith(f"{PACKAGE}/"):
            continue
        while re.search(r"\([^()]*\)", desc):
            desc = re.sub(r"\s*\([^()]*\)", "", desc)
        where = code.repo / folder
        for part in re.split(r"[,;:]", desc):
            name = re.sub(r"^\s*(?:and\s+)?", "", part).strip().rstrip(".")
            if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
                continue
            if not ((where / f"{name}.py").exists() or (where / name).is_dir() or (where / f"{name}s").is_dir()):
                number = next((n for n, line in lines if re.search(rf"\b{name}\b", line)), lines[0][0])
                out.append(Problem(rel, number, name, f"the Layout names no module of {folder}"))
    return out


def check(repo: Path = REPO, only: Iterable[Path] | None = None) -> list[Problem]:
    code = Code(repo)
    resolver = Resolver(code)
    out = []
    for page in ([Path(p).resolve() for p in only] if only is not None else pages(repo)):
        out += check_page(page, resolver)
        if page.relative_to(repo).as_posix() == LAYOUT_PAGE:
            out += layout_problems(page, code)
    return out


if __name__ == "__main__":
    problems = check()
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
