"""Which thinkprobe modules a rule's code really uses, found from the source (for the rules' code hashes).

The workflow passes each rule the sha256 of the modules behind it, so that editing a module reruns exactly
the rules that use it (Snakemake's own ``code`` trigger only watches the rule script). Hand-kept module
lists go stale the day someone adds an import; this module derives them instead, by reading the sources
with :mod:`ast` (nothing is imported or executed).

The walk is by *name*, not only by module: starting from the functions a rule calls, it follows every
name their definitions use (function bodies, decorators, default values, base classes, module constants,
and imports made inside functions) to the module that defines it, transitively. A module is part of a
stage when a name defined there is used; a module that is imported only for names the stage never uses
(``pipeline`` imports ``metrics`` for its ``analyze`` function, which the segment stage never calls) is not.
Type annotations are skipped: every thinkprobe module uses ``from __future__ import annotations``, so they
are never evaluated. A name used as a module (``texttiling.boundaries``) pulls in that whole module.

A module that is used counts as a whole file: any edit reruns the stage. Facts that many stages need but
whose code they do not run live in small leaf modules of their own (the metric names in
:mod:`thinkprobe.vocabulary`), so that depending on them does not mean depending on the code beside them.

Files that are not Python are read at run time, not imported, so no import leads to them. A module that
reads files of the package itself (the pages' templates and style sheets) names them in a module-level
``CODE_DATA`` tuple of globs relative to the package (``("view/templates/*.j2",)``), read here with
:mod:`ast`; :func:`module_data` expands it, and :func:`script_modules` and :func:`code_modules` add those
files to every stage whose code reaches the module (the packaged lexicons, which a config key may replace
by a user's file, are named by :mod:`thinkprobe.lexicon`; the user's file is a param of its rule).

Each rule's ``code`` param is :func:`script_code` of its own script (``workflow/scripts/<rule>.py``): the
modules its ``thinkprobe`` imports reach, so the rule files keep no list of entry points or modules, and a
new import in a script is in its rule's hash the moment it is written. The outputs' provenance blocks name
the modules of the function that wrote them (:func:`code_modules`). Everything here is computed when first
asked for, never at import time (importing a stage module parses nothing).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

PACKAGE = "thinkprobe"
PACKAGE_DIR = Path(__file__).resolve().parent
SCRIPTS_DIR = PACKAGE_DIR.parent / "workflow" / "scripts"  # the rule scripts, in a checkout of the repository
DATA_NAME = "CODE_DATA"  # a module's tuple of globs naming the package files it reads at run time


def module_file(module: str) -> Path:
    """The source file of a dotted module name relative to the package (``"stages.graph"``, ``"__init__"``)."""
    path = PACKAGE_DIR.joinpath(*module.split("."))
    if path.is_dir():
        return path / "__init__.py"
    return path.with_suffix(".py")


def _is_module(module: str) -> bool:
    path = PACKAGE_DIR.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _package_of(module: str) -> list[str]:
    parts = module.split(".")
    if parts[-1] == "__init__" or PACKAGE_DIR.joinpath(*parts).is_dir():
        return [p for p in parts if p != "__init__"]
    return parts[:-1]


def _resolve(module: str, node: ast.ImportFrom) -> str | None:
    """The package-relative module an ``from X import ...`` names, or None when it is outside thinkprobe."""
    if node.level:
        base = _package_of(module)
        if node.level > 1:
            base = base[: len(base) - (node.level - 1)]
        parts = base + (node.module.split(".") if node.module else [])
    else:
        if not node.module or node.module.split(".")[0] != PACKAGE:
            return None
        parts = node.module.split(".")[1:]
    return ".".join(parts) if parts else "__init__"


Ref = tuple[str, str | None]  # (module, name); name None = the whole module


@dataclass
class _ModuleInfo:
    defs: dict[str, set[str]] = field(default_factory=dict)  # top-level name -> names its definition uses
    def_imports: dict[str, set[Ref]] = field(default_factory=dict)  # imports made inside a definition
    bindings: dict[str, Ref] = field(default_factory=dict)  # top-level imported name -> where it comes from
    always: set[str] = field(default_factory=set)  # names used by other top-level statements
    always_imports: set[Ref] = field(default_factory=set)
    data: tuple[str, ...] = ()  # CODE_DATA: globs of the package files the module reads at run time


class _Uses(ast.NodeVisitor):
    """Names a piece of code loads, and the thinkprobe imports it makes; annotations skipped."""

    def __init__(self, module: str):
        self.module = module
        self.names: set[str] = set()
        self.imports: set[Ref] = set()

    def visit_Name(self, node: ast.Name) -> None:
        self.names.add(node.id)

    def visit_arg(self, node: ast.arg) -> None:
        pass

    def _function(self, node) -> None:
        for d in node.decorator_list:
            self.visit(d)
        for d in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(d)
        for stmt in node.body:
            self.visit(stmt)

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.imports |= set(_import_refs(self.module, node).values())

    def visit_Import(self, node: ast.Import) -> None:
        self.imports |= set(_import_refs(self.module, node).values())


def _import_refs(module: str, node: ast.Import | ast.ImportFrom) -> dict[str, Ref]:
    """Bound name -> (module, name) for the thinkprobe names an import statement binds."""
    out: dict[str, Ref] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[0] == PACKAGE and len(parts) > 1:
                out[alias.asname or parts[0]] = (".".join(parts[1:]), None)
        return out
    target = _resolve(module, node)
    if target is None:
        return out
    for alias in node.names:
        sub = f"{target}.{alias.name}" if target != "__init__" else alias.name
        if alias.name != "*" and _is_module(sub):
            out[alias.asname or alias.name] = (sub, None)
        else:
            out[alias.asname or alias.name] = (target, None if alias.name == "*" else alias.name)
    return out


def _targets(stmt: ast.stmt) -> list[str]:
    nodes = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return [n.id for t in nodes for n in ast.walk(t) if isinstance(n, ast.Name)]


@lru_cache(maxsize=None)
def _info(module: str, mtime_ns: int) -> _ModuleInfo:
    source = module_file(module).read_text(encoding="utf-8")
    tree = ast.parse(source)
    info = _ModuleInfo()
    for stmt in tree.body:
        uses = _Uses(module)
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            refs = _import_refs(module, stmt)
            if isinstance(stmt, ast.Import) or "*" in refs:  # names not traceable: depend on the module itself
                info.always_imports |= set(refs.values())
            else:
                info.bindings.update(refs)
            continue
        if isinstance(stmt, ast.Assign) and _targets(stmt) == [DATA_NAME]:
            info.data = tuple(ast.literal_eval(stmt.value))
        uses.visit(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [stmt.name]
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            names = _targets(stmt)
        else:
            names = []
        if not names:
            info.always |= uses.names
            info.always_imports |= uses.imports
        for name in names:
            info.defs.setdefault(name, set()).update(uses.names)
            info.def_imports.setdefault(name, set()).update(uses.imports)
    return info


def _module_info(module: str) -> _ModuleInfo:
    return _info(module, module_file(module).stat().st_mtime_ns)


def used_modules(entries: Iterable[Ref]) -> list[str]:
    """The thinkprobe modules (dotted, package-relative) whose code the ``entries`` use, transitively.

    ``entries`` are ``(module, name)`` pairs, e.g. ``[("stages.graph", "graph_shard")]``; a name of None
    stands for the whole module.

    >>> "graph" in used_modules([("stages.metrics", "metrics_shard")])
    True
    >>> "metrics" in used_modules([("stages.segment", "segment_shard")])
    False
    """
    seen: set[Ref] = set()
    modules: set[str] = set()
    infos: dict[str, _ModuleInfo | None] = {}  # one stat per module and call, not one per name visited
    todo = list(entries)
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        module, name = ref
        if module not in infos:
            infos[module] = _module_info(module) if _is_module(module) else None
        info = infos[module]
        if info is None:
            continue
        if module not in modules:
            modules.add(module)
            todo += [(module, n) for n in info.always]
            todo += list(info.always_imports)
            pkg = _package_of(module)
            if pkg:  # importing a subpackage's module runs its package __init__ first
                todo.append((".".join(pkg + ["__init__"]), None))
        names = list(info.defs) + list(info.bindings) if name is None else [name]
        for n in names:
            if n in info.defs:
                todo += [(module, m) for m in info.defs[n]]
                todo += list(info.def_imports.get(n, ()))
            if n in info.bindings:
                todo.append(info.bindings[n])
            if module.endswith("__init__") and n not in info.defs and n not in info.bindings:
                sub = ".".join(_package_of(module) + [n])
                if _is_module(sub):
                    todo.append((sub, None))
    return sorted(modules)


def module_data(modules: Iterable[str]) -> list[str]:
    """The package files (paths relative to the package) that ``modules`` read at run time: the expansion of
    each one's ``CODE_DATA`` globs.

    >>> [f for f in module_data(["view.templating"]) if f.endswith("trace_page.html.j2")]
    ['view/templates/trace_page.html.j2']
    """
    files: set[str] = set()
    for module in modules:
        if _is_module(module):
            for pattern in _module_info(module).data:
                files |= {p.relative_to(PACKAGE_DIR).as_posix() for p in PACKAGE_DIR.glob(pattern) if p.is_file()}
    return sorted(files)


JOB_LOG_MODULE = "stages.joblog"  # a rule script's plumbing: its log, its timing line, its GPU check


@lru_cache(maxsize=None)
def job_log_entries() -> frozenset[Ref]:
    """What a rule script imports only to run its job (write its log and timing line, check the node's GPUs),
    part of no output: every public name :data:`JOB_LOG_MODULE` defines or imports, as
    ``(JOB_LOG_MODULE, name)``, and for an imported one also where it comes from (a script may import
    ``JobClock`` from ``thinkprobe.timing``). Read from that module's source, so a plumbing function written
    there is left out of every hash without being named anywhere else.

    >>> sorted(n for m, n in job_log_entries() if m == JOB_LOG_MODULE)
    ['JobClock', 'job_log', 'log_timing', 'require_gpus']
    >>> ("timing", "JobClock") in job_log_entries()
    True
    """
    info = _module_info(JOB_LOG_MODULE)
    names = [n for n in (*info.defs, *info.bindings) if not n.startswith("_")]
    return frozenset({(JOB_LOG_MODULE, n) for n in names} | {info.bindings[n] for n in names if n in info.bindings})


def script_entries(script: str | Path) -> list[Ref]:
    """The thinkprobe names a rule script (``workflow/scripts/*.py``) imports, anywhere in it, as
    ``(module, name)`` pairs, less :func:`job_log_entries`: the entry points of the rule's work."""
    tree = ast.parse(Path(script).read_text(encoding="utf-8"))
    refs: set[Ref] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            refs |= set(_import_refs("__main__", node).values())
    plumbing = job_log_entries()
    return sorted((r for r in refs if r not in plumbing), key=lambda r: (r[0], r[1] or ""))


def script_modules(script: str | Path, data: Iterable[str] = ()) -> list[str]:
    """The modules a rule script's work reaches (:func:`used_modules` of :func:`script_entries`), plus the
    package files they read (:func:`module_data`) and ``data``."""
    code = used_modules(script_entries(script))
    return sorted(set(code) | set(module_data(code)) | set(data))


@lru_cache(maxsize=None)
def _script_code(script: str, data: tuple[str, ...]) -> str:
    from .outputs import source_hash

    return source_hash(script_modules(script, data))


def script_code(script: str | Path, *data: str) -> str:
    """A rule's code hash: sha256 of :func:`script_modules` of its ``script`` (plus ``data``: modules or package
    files the rule itself needs besides what its script runs, e.g. ``"tracefiles"`` for a rule whose inputs are
    where the trace files lie). Computed once per process and script.

    >>> script_code(PACKAGE_DIR.parent / "workflow" / "scripts" / "graph.py") == script_code(
    ...     PACKAGE_DIR.parent / "workflow" / "scripts" / "graph.py")
    True
    """
    return _script_code(str(Path(script).resolve()), tuple(sorted(set(data))))


@lru_cache(maxsize=None)
def _code_modules(entries: tuple[Ref, ...], data: tuple[str, ...]) -> tuple[str, ...]:
    code = used_modules(entries)
    return tuple(sorted(set(code) | set(module_data(code)) | set(data)))


def code_modules(*objects: Any, data: Iterable[str] = ()) -> list[str]:
    """The modules (and package files) behind the functions or classes ``objects``: what an output's
    provenance names as the code that wrote it (``provenance(code_modules(graph_shard), ...)``). Derived when
    first asked for (once per process), from the objects themselves: no names to keep in step.

    >>> from thinkprobe.stages.graph import graph_shard
    >>> "graph" in code_modules(graph_shard) and "metrics" not in code_modules(graph_shard)
    True
    """
    entries = tuple(sorted((o.__module__.removeprefix(PACKAGE + "."), o.__name__) for o in objects))
    return list(_code_modules(entries, tuple(sorted(set(data)))))
