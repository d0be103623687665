"""The package's import graph: no circles, and no module that reaches up a layer (docs/development.md,
"Layers and imports").

The graph is read from the sources with :mod:`ast` (nothing is imported). Every ``import thinkprobe...`` and
``from ... import`` of a thinkprobe module is an edge, wherever it stands: at module level, inside a function
(a lazy import) or under ``if TYPE_CHECKING:``. A lazy import that only postpones a circle to run time is
still a circle in the design, so it counts. ``from .x import name`` points at the module ``x.name`` when
that is a module, else at ``x``; importing a submodule is not counted as importing its package's
``__init__`` (every package that re-exports its modules would otherwise be a circle).

The layers (docs/development.md, "Layers and imports"), lowest first: the core modules (``thinkprobe/*.py``),
``generate``, the analyses (``trajectories``, ``stats``, ``view``), ``validity``, the rule bodies (``stages``), the study
(``study``) and the command line (``cli.py``, ``commands/``): :data:`LAYERS`. A module imports modules of its
own package, or of a package of a lower layer; two packages of one layer import nothing of each other; so the
packages' own import graph has no circle either. A module whose file cannot move to the package it belongs
to is placed there by :data:`PLACED`, with the reason; it is then judged as a module of that package (what it
imports, and who imports it).
"""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "thinkprobe"
# Lowest first. "core": the modules of the package's top folder; "cli": cli.py and commands/.
LAYERS = (
    ("core",),  # traces, units, outputs, params, config, pipeline, graph, metrics, ...: no engine, no rule
    ("tasks",),  # the answer tasks (format, extraction, token prior): used by generate and trajectories
    ("generate",),  # engines, models, question sets, the collection jobs and their store
    ("trajectories", "stats", "view"),  # analyses: trajectories sample through generate's engines
    ("validity",),  # Thought Graphs against annotated traces: runs the pipeline, scores with stats.agreement
    ("stages",),  # the rule bodies: they run the analyses and write the per-unit files
    ("study",),  # a whole study: the planner, its checks, the results snapshot (which re-runs rule bodies)
    ("cli",),
)
CLI = ("cli", "commands")  # top-level names of the command line layer
# Modules that belong to another package than the folder they lie in, and why they cannot move there.
PLACED = {
    # The identity of a continuation batch (its sampling settings, model, engine settings with the engines'
    # defaults, sampling code): the trajectories' protection. The sampling code imports it as
    # ``thinkprobe.protect``, and moving it means editing that code, whose hash keys every stored continuation.
    "thinkprobe.protect": "trajectories",
}

# A module's last name says which module it is (docs/glossary.md): it repeats in another package only as the
# rule body (``stages/<x>``) or the subcommand (``commands/<x>``) of the module or command of that name, or as one
# of the names each package may have its own of.
MIRRORS = ("stages", "commands")
OWN_OF_EACH = {
    "config_checks": "a section's checks that the schema names (``x-checks-from``), one per section's package",
    "figures": "the figures of an analysis package (its package says whose)",
}


def repeated_names(root: Path, mirrors=MIRRORS, own=OWN_OF_EACH) -> dict[str, list[str]]:
    """Last name -> its modules, for every name that more than one module outside ``mirrors`` carries and that
    ``own`` does not list (packages' ``__init__`` excluded)."""
    by_name: dict[str, list[str]] = {}
    for module, (_, is_package) in _modules(root).items():
        parts = module.split(".")
        if not is_package and not (len(parts) > 2 and parts[1] in mirrors):
            by_name.setdefault(parts[-1], []).append(module)
    return {name: sorted(ms) for name, ms in sorted(by_name.items()) if len(ms) > 1 and name not in own}


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (source file, is a package) for every ``.py`` under the package folder ``root``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _statements(body: list[ast.stmt]):
    """Every statement, at any depth: function and class bodies, branches (``if TYPE_CHECKING:``), loops,
    ``with``, ``try`` and ``match`` (an import is a statement, so expressions need no visit)."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(node, name, None) or [])
        for part in (getattr(node, "handlers", None) or []) + (getattr(node, "cases", None) or []):
            yield from _statements(part.body)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (every import statement, at any depth of the source)."""
    modules = _modules(root)

    def deepest(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in modules.items():
        here = module.split(".") if is_package else module.split(".")[:-1]
        targets: set[str | None] = set()
        for node in _statements(ast.parse(path.read_text(encoding="utf-8"), str(path)).body):
            if isinstance(node, ast.Import):
                targets |= {deepest(a.name) for a in node.names if a.name.split(".")[0] == root.name}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - node.level + 1] if node.level > 1 else here
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source.split(".")[0] != root.name:
                    continue
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    targets.add(full if full in modules else deepest(source))
        graph[module] = {t for t in targets if t and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted; none: no circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _describe(graph: dict[str, set[str]], component: list[str]) -> str:
    inside = set(component)
    return "; ".join(f"{v} -> {', '.join(sorted(graph[v] & inside))}" for v in component)


def _subpackages(graph: dict[str, set[str]]) -> set[str]:
    return {m.split(".")[1] for m in graph if m.count(".") >= 2} - set(CLI)


def package_of(module: str, subpackages: set[str], placed: dict[str, str] = PLACED) -> str:
    """The package a module belongs to: its subpackage, ``"cli"`` or ``"core"`` (or what :data:`PLACED` says)."""
    if module in placed:
        return placed[module]
    parts = module.split(".")[1:]
    if parts and parts[0] in CLI:
        return "cli"
    return parts[0] if parts and parts[0] in subpackages else "core"


def layer_problems(graph: dict[str, set[str]], layers=LAYERS, placed: dict[str, str] = PLACED) -> list[str]:
    """Every import that reaches up a layer or sideways into another package of its own layer, and every
    package that has no layer."""
    subpackages = _subpackages(graph)
    rank = {package: k for k, layer in enumerate(layers) for package in layer}
    problems = [f"package {p!r} has no layer (LAYERS)" for p in sorted(subpackages - set(rank))]
    for module, targets in sorted(graph.items()):
        mine = package_of(module, subpackages, placed)
        for target in sorted(targets):
            theirs = package_of(target, subpackages, placed)
            if theirs == mine or mine not in rank or theirs not in rank:
                continue
            if rank[theirs] > rank[mine]:
                problems.append(f"{module} ({mine}) imports {target} ({theirs}): a higher layer")
            elif rank[theirs] == rank[mine]:
                problems.append(f"{module} ({mine}) imports {target} ({theirs}): another package of its layer")
    return problems


def package_graph(graph: dict[str, set[str]], placed: dict[str, str] = PLACED) -> dict[str, set[str]]:
    """Package -> the other packages its modules import."""
    subpackages = _subpackages(graph)
    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        mine = package_of(module, subpackages, placed)
        out.setdefault(mine, set()).update(package_of(t, subpackages, placed) for t in targets)
        out[mine].discard(mine)
    return out


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE_DIR)


def test_the_walk_sees_the_imports_it_must_judge(graph):
    """Not a vacuous walk: module-level, function-level and relative imports of the real package are edges."""
    assert len(graph) > 100
    assert "thinkprobe.generate.interface" in graph["thinkprobe.generate.vllm_engine"]  # module level, relative
    assert "thinkprobe.generate.vllm_engine" in graph["thinkprobe.generate.backends.vllm"]  # inside _open
    assert "thinkprobe.params" in graph["thinkprobe.config"]


def test_the_package_has_no_import_circle(graph):
    t0 = time.perf_counter()
    found = cycles(graph)
    assert time.perf_counter() - t0 < 0.5
    assert not found, "import circles (module -> the modules of its circle it imports): " + " | ".join(
        _describe(graph, c) for c in found)


def test_config_imports_no_subpackage_even_indirectly(graph):
    """The configuration is validated before anything else runs: it needs no generation, statistics,
    trajectory, page or rule code (their checks are named by the schema, ``x-checks-from``)."""
    seen, todo = set(), ["thinkprobe.config"]
    while todo:
        for w in graph[todo.pop()] - seen:
            seen.add(w)
            todo.append(w)
    reached = sorted(m for m in seen if package_of(m, _subpackages(graph)) != "core")
    assert not reached, f"thinkprobe.config reaches up into {reached}"


def test_no_module_reaches_up_a_layer_or_sideways(graph):
    """Every import goes down a layer or stays in its package, and every package has a layer."""
    problems = layer_problems(graph)
    assert not problems, "\n".join(problems)


def test_the_packages_import_each_other_in_no_circle(graph):
    packages = package_graph(graph)
    assert {"generate", "trajectories", "stages", "study", "cli"} <= set(packages)
    assert "generate" in packages["trajectories"] and "trajectories" not in packages["generate"]
    assert not cycles(packages), " | ".join(_describe(packages, c) for c in cycles(packages))


def test_the_layers_name_exactly_the_packages_there_are(graph):
    """A new subpackage must be given a layer, and a layer names no package that is gone; a placed module exists
    and lies outside the package it is placed in (else it needs no placing)."""
    named = {p for layer in LAYERS for p in layer} - {"core", "cli"}
    assert named == _subpackages(graph)
    for module, package in PLACED.items():
        assert module in graph and not module.startswith(f"thinkprobe.{package}."), module


def test_no_module_name_repeats_with_another_meaning():
    """Three ``summary``, ``pages`` and ``figures`` modules with different meanings were renamed (issue 34,
    docs/changes.md); a new module that takes another's name fails here, naming both."""
    assert not repeated_names(PACKAGE_DIR), repeated_names(PACKAGE_DIR)


def test_a_repeated_module_name_is_found_and_the_conventions_are_not(tmp_path):
    root = _package(tmp_path, {
        "summary.py": "", "view/__init__.py": "", "view/summary.py": "",  # two meanings of one name
        "stages/__init__.py": "", "stages/summary.py": "", "commands/__init__.py": "", "commands/summary.py": "",
        "stats/__init__.py": "", "stats/figures.py": "", "view/figures.py": "",
    })
    assert repeated_names(root) == {"summary": ["pkg.summary", "pkg.view.summary"]}
    (root / "view" / "summary.py").unlink()
    assert repeated_names(root) == {}
    assert repeated_names(root, own={}) == {"figures": ["pkg.stats.figures", "pkg.view.figures"]}


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_circle_through_a_function_level_import_is_found(tmp_path):
    """Imports inside a function, a method's ``except`` and a ``with`` block are edges too."""
    root = _package(tmp_path, {
        "a.py": "from .b import f\n",
        "b.py": "def f():\n    from . import a\n    return a\n",
        "d.py": "class K:\n    def m(self):\n        try:\n            pass\n        except ImportError:\n"
                "            import pkg.e\n",
        "e.py": "with open('x') as fh:\n    from .d import K\n",
        "c.py": "import pkg.a\n",
    })
    graph = import_graph(root)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a"} and graph["pkg.c"] == {"pkg.a"}
    assert graph["pkg.d"] == {"pkg.e"} and graph["pkg.e"] == {"pkg.d"}  # in a method's except, in a with block
    assert cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.d", "pkg.e"]]


def test_a_circle_across_subpackages_and_type_checking_imports_is_found(tmp_path):
    root = _package(tmp_path, {
        "sub/__init__.py": "",
        "sub/x.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..top import T\n",
        "sub/y.py": "from .x import name\n",
        "top.py": "from pkg.sub import y\n",
    })
    graph = import_graph(root)
    assert graph["pkg.sub.x"] == {"pkg.top"} and graph["pkg.top"] == {"pkg.sub.y"}
    assert cycles(graph) == [["pkg.sub.x", "pkg.sub.y", "pkg.top"]]


def test_a_package_without_circles_has_none(tmp_path):
    root = _package(tmp_path, {
        "a.py": "import os\nfrom .b import f\n",
        "b.py": "from . import c\n",
        "c.py": "import json\n",
    })
    graph = import_graph(root)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": set()}
    assert cycles(graph) == []


def test_a_reach_up_a_sideways_import_and_a_package_circle_are_found(tmp_path):
    """The layer check on a package written for it: a core module importing a subpackage, a package importing
    another of its layer, an import of a higher layer from inside a function, an unplaced package, and a
    placed module judged as its package's."""
    root = _package(tmp_path, {
        "base.py": "def f():\n    from .high import top\n",  # core -> high, lazily
        "ok.py": "from .low import x\n",  # core -> low: reaches up too (low is above core)
        "placed.py": "from .low import x\n",  # placed in "high": may import low
        "low/__init__.py": "", "low/x.py": "from .. import base\n",  # low -> core: fine
        "mid_a/__init__.py": "", "mid_a/y.py": "from ..mid_b import z\n",  # sideways
        "mid_b/__init__.py": "", "mid_b/z.py": "import pkg.mid_a.y\n",  # sideways back: a package circle
        "high/__init__.py": "", "high/top.py": "from ..low import x\nfrom .. import placed\n",
        "loose/__init__.py": "", "loose/w.py": "",
    })
    graph = import_graph(root)
    layers = (("core",), ("low",), ("mid_a", "mid_b"), ("high",), ("cli",))
    placed = {"pkg.placed": "high"}
    assert layer_problems(graph, layers, placed) == [
        "package 'loose' has no layer (LAYERS)",
        "pkg.base (core) imports pkg.high.top (high): a higher layer",
        "pkg.mid_a.y (mid_a) imports pkg.mid_b.z (mid_b): another package of its layer",
        "pkg.mid_b.z (mid_b) imports pkg.mid_a.y (mid_a): another package of its layer",
        "pkg.ok (core) imports pkg.low.x (low): a higher layer",
    ]
    assert package_graph(graph, placed)["high"] == {"low"}  # pkg.placed's import counts as high's, not core's
    assert cycles(package_graph(graph, placed)) == [["core", "high", "low"], ["mid_a", "mid_b"]]
    # the same package without the reach-ups: only what is left is reported
    (root / "base.py").write_text("")
    (root / "ok.py").write_text("")
    (root / "mid_b" / "z.py").write_text("")
    (root / "loose" / "w.py").unlink()
    (root / "loose" / "__init__.py").unlink()
    (root / "loose").rmdir()
    graph = import_graph(root)
    assert layer_problems(graph, layers, placed) == [
        "pkg.mid_a.y (mid_a) imports pkg.mid_b.z (mid_b): another package of its layer"]
    assert cycles(package_graph(graph, placed)) == []
    assert layer_problems(graph, (("core",), ("low",), ("mid_b",), ("mid_a",), ("high",), ("cli",)), placed) == []
