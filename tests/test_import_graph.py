"""The package's import graph: no circles, and no module that reaches up a layer (docs/development.md,
"Layers and imports").

The graph is read from the sources with :mod:`ast` (nothing is imported). Every ``import thinkprobe...`` and
``from ... import`` of a thinkprobe module is an edge, wherever it stands: at module level, inside a function
(a lazy import) or under ``if TYPE_CHECKING:``. A lazy import that only postpones a circle to run time is
still a circle in the design, so it counts. ``from .x import name`` points at the module ``x.name`` when
that is a module, else at ``x``; importing a submodule is not counted as importing its package's
``__init__`` (every package that re-exports its modules would otherwise be a circle).

The layers, lowest first: the core modules (``thinkprobe/*.py``), the subpackages (:data:`SUBPACKAGES`) and
the command line (``thinkprobe/cli.py`` and ``thinkprobe/commands/``). A lower layer never imports a higher
one; :data:`KNOWN_REACH_UP` lists the core modules that still do, each with what it needs, so that the list
can only shrink.
"""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "thinkprobe"
SUBPACKAGES = ("generate", "stats", "trajectories", "view", "stages")
COMMAND_LINE = ("thinkprobe.cli", "thinkprobe.commands")
# Core modules that still import a subpackage (planning checks that need the planner and the samplers, and a
# protection check that needs the engines' defaults): what they import, so that a new reach-up fails.
KNOWN_REACH_UP = {
    "thinkprobe.planchecks": {"thinkprobe.generate.planner", "thinkprobe.generate.questions",
                              "thinkprobe.trajectories.sampling"},
    "thinkprobe.protect": {"thinkprobe.generate.defaults"},
}


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


def _layer(module: str) -> str:
    if module == "thinkprobe.cli" or module.startswith("thinkprobe.commands"):
        return "cli"
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in SUBPACKAGES) else "core"


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE_DIR)


def test_the_walk_sees_the_imports_it_must_judge(graph):
    """Not a vacuous walk: module-level, function-level and relative imports of the real package are edges."""
    assert len(graph) > 100
    assert "thinkprobe.generate.interface" in graph["thinkprobe.generate.vllm_engine"]  # module level, relative
    assert "thinkprobe.generate.vllm_engine" in graph["thinkprobe.generate.engine"]  # inside open_engine
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
    reached = sorted(m for m in seen if _layer(m) != "core")
    assert not reached, f"thinkprobe.config reaches up into {reached}"


def test_no_module_reaches_up_a_layer(graph):
    """Core modules import no subpackage (but :data:`KNOWN_REACH_UP`), and nothing imports the command line."""
    problems = []
    for module, targets in sorted(graph.items()):
        mine = _layer(module)
        for target in sorted(targets):
            theirs = _layer(target)
            if theirs == "cli" and mine != "cli":
                problems.append(f"{module} imports the command line ({target})")
            elif mine == "core" and theirs not in ("core", "cli") \
                    and target not in KNOWN_REACH_UP.get(module, ()):
                problems.append(f"{module} (core) imports {target} ({theirs})")
    assert not problems, "\n".join(problems)
    gone = {m: sorted(set(t) - graph.get(m, set())) for m, t in KNOWN_REACH_UP.items() if set(t) - graph.get(m, set())}
    assert not gone, f"no longer imported, take them out of KNOWN_REACH_UP: {gone}"


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
