"""Every rule's code hash comes from its own script (thinkprobe.codedeps.script_code), checked without Snakemake.

The rules come from the rule book (thinkprobe/rulebook.py, which tests/test_rulebook.py checks against the parsed
rule files): each rule with a script has a ``code`` param computed from that same script, or is one of the rules
that deliberately have none. A script's hash contains every
thinkprobe module the script imports, and the modules the functions it calls take their names from; and it
contains nothing the script could not load. Editing a module (in a copy of the package) changes the hash of
exactly the scripts whose code reaches it.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from thinkprobe.rulebook import RULES

pytestmark = pytest.mark.fast

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"

# Rules without a `code` param, on purpose (thinkprobe.rulebook.Rule.no_code says why): their outputs are protected
# GPU data that a code edit must never regenerate implicitly (their provenance records the code hash instead),
# downloads, or rules without output that run whenever asked for (the lock file, the git clones).
NO_CODE_PARAM = {name: r.no_code for name, r in RULES.items() if r.no_code}


@lru_cache(maxsize=None)
def _direct_imports(path: Path, module: str = "__main__") -> frozenset[str]:
    """thinkprobe modules (package-relative) named by the import statements anywhere in ``path``: the module
    of each imported name, or the name itself when it is a module. Independent of codedeps' walk."""
    package = REPO / "thinkprobe"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".", 1)[1] for a in node.names if a.name.startswith("thinkprobe.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: -node.level]  # "a.b" and "a.__init__" both: package "a"
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "thinkprobe":
                target = node.module.partition(".")[2] or "__init__"
            else:
                continue
            for a in node.names:
                sub = f"{target}.{a.name}".lstrip(".")
                rel = package.joinpath(*sub.split("."))
                out.add(sub if rel.with_suffix(".py").is_file() or (rel / "__init__.py").is_file() else target)
    return frozenset(out)


def _closure(modules: set[str]) -> set[str]:
    """Every thinkprobe module reachable from ``modules`` by any import statement anywhere (a superset of what
    a script's code can load)."""
    package = REPO / "thinkprobe"
    seen, todo = set(), list(modules)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        rel = package.joinpath(*m.split("."))
        path = rel / "__init__.py" if rel.is_dir() else rel.with_suffix(".py")
        if not path.is_file():
            continue
        name = f"{m}.__init__" if rel.is_dir() else m
        todo += list(_direct_imports(path, name))
        parts = m.split(".")
        if len(parts) > 1:
            todo.append(".".join(parts[:-1]))  # a package's __init__ runs first
    packages = {f"{m}.__init__" for m in seen if (package.joinpath(*m.split(".")) / "__init__.py").is_file()}
    return seen | packages | {"__init__"}  # importing any thinkprobe module runs thinkprobe/__init__.py


def test_every_rules_script_gets_its_own_code_hash():
    from thinkprobe.codedeps import script_code
    from thinkprobe.rulebook import code

    assert len(RULES) >= 30
    assert {r.script for r in RULES.values()} == {p.name for p in SCRIPTS.glob("*.py")}  # every script is a rule's
    assert set(NO_CODE_PARAM) == {"traj_sample", "fetch_model", "fetch_dataset", "fetch_models", "fetch_datasets",
                                  "fetch_corpus"}
    for name, rule in RULES.items():
        if name in NO_CODE_PARAM:
            continue
        digest = code(name)
        assert digest == script_code(SCRIPTS / rule.script, *rule.data)
        assert len(digest) == 64 and int(digest, 16) >= 0


def test_every_module_a_script_imports_is_in_its_hash():
    """Direct imports, and one step further: the modules each imported function's own body takes names from.
    And nothing in the hash that the script's imports could not load."""
    from thinkprobe.codedeps import job_log_entries, module_data, script_modules

    job_log = {m for m, _ in job_log_entries()}
    package = REPO / "thinkprobe"
    for rule in RULES.values():
        if rule.no_code:
            continue
        hashed = set(script_modules(SCRIPTS / rule.script))
        direct = _direct_imports(SCRIPTS / rule.script) - job_log
        assert direct, rule.script
        assert direct <= hashed, f"{rule.script}: {sorted(direct - hashed)} imported but not in its code hash"
        # one step further, found here without codedeps: a function the script imports, the thinkprobe
        # modules its definition names (imports made in its body, or names bound by its module's imports)
        tree = ast.parse((SCRIPTS / rule.script).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("thinkprobe.")):
                continue
            module = node.module.partition(".")[2]
            path = package.joinpath(*module.split(".")).with_suffix(".py")
            if not path.is_file() or module in job_log:
                continue
            src = ast.parse(path.read_text(encoding="utf-8"))
            bound = {}
            for stmt in src.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.level:
                    for target in _direct_imports_of(stmt, module):
                        bound.update(target)
            defs = {s.name: s for s in src.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))}
            for alias in node.names:
                if alias.name not in defs:
                    continue
                body = defs[alias.name]
                names = {n.id for n in ast.walk(body) if isinstance(n, ast.Name)}
                needed = {bound[n] for n in names if n in bound}
                needed |= {m for s in ast.walk(body) if isinstance(s, ast.ImportFrom)
                           for t in _direct_imports_of(s, module) for m in t.values()}
                assert needed <= hashed, (f"{rule.script}: {module}.{alias.name} uses {sorted(needed - hashed)}, "
                                          "not in the script's code hash")
        loadable = _closure(direct)
        files = set(module_data(loadable))
        assert hashed - files <= loadable, f"{rule.script}: {sorted(hashed - files - loadable)} cannot be loaded"


def test_the_job_plumbing_is_what_the_joblog_module_holds():
    """The names left out of every hash are derived from ``stages/joblog.py``: each public name it defines or
    imports (found here by reading it, without codedeps), by both of its import paths, and nothing else."""
    from thinkprobe.codedeps import JOB_LOG_MODULE, job_log_entries, script_modules

    tree = ast.parse((REPO / "thinkprobe" / "stages" / "joblog.py").read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    # relative imports of stages/joblog.py: level 1 is stages, level 2 the package
    imported = {(".".join(["stages"][: 2 - n.level] + [n.module]), a.asname or a.name)
                for n in tree.body if isinstance(n, ast.ImportFrom) and n.level for a in n.names}
    public = {n for n in defined | {b for _, b in imported} if not n.startswith("_")}
    assert {"job_log", "log_timing", "JobClock", "require_gpus"} <= public
    assert job_log_entries() == {(JOB_LOG_MODULE, n) for n in public} | {(m, n) for m, n in imported
                                                                           if not n.startswith("_")}
    assert ("timing", "JobClock") in job_log_entries() and ("generate.gpu_guard", "require_gpus") in job_log_entries()
    # so no script's hash holds the plumbing modules, although scripts import them (traj_sample: require_gpus)
    scripts = {r.script for r in RULES.values()}  # traj_sample has an identity, no code
    assert "traj_sample.py" in scripts and "import_traces.py" in scripts
    for script in scripts:
        hashed = script_modules(SCRIPTS / script)
        assert JOB_LOG_MODULE not in hashed and "generate.gpu_guard" not in hashed, script


def test_a_plumbing_function_added_to_joblog_is_left_out_without_being_named(tmp_path):
    """In a copy of the package: a new public function in stages/joblog.py, imported by a script, adds nothing to
    that script's hash; the same function in a module of its own does."""
    root = tmp_path / "copy"
    shutil.copytree(REPO / "thinkprobe", root / "thinkprobe", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SCRIPTS, root / "workflow" / "scripts")
    with open(root / "thinkprobe" / "stages" / "joblog.py", "a") as fh:
        fh.write("\n\ndef log_memory(log):\n    print('rss', file=log)\n")
    (root / "thinkprobe" / "memlog.py").write_text("def log_memory(log):\n    print('rss', file=log)\n")
    probe = r'''
import json, sys
from thinkprobe import codedeps
base = codedeps.SCRIPTS_DIR / "graph.py"
text = base.read_text()
out = {}
for module in ("stages.joblog", "memlog"):
    path = codedeps.SCRIPTS_DIR / f"probe_{module.replace('.', '_')}.py"
    path.write_text(f"from thinkprobe.{module} import log_memory\n" + text)
    out[module] = sorted(set(codedeps.script_modules(path)) - set(codedeps.script_modules(base)))
print("PROBE " + json.dumps(out))
'''
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)})
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE ")), None)
    assert line, proc.stderr[-3000:]
    added = json.loads(line[len("PROBE "):])
    assert added["stages.joblog"] == []
    assert added["memlog"] == ["memlog"]


def _direct_imports_of(stmt: ast.ImportFrom, module: str) -> list[dict[str, str]]:
    """[{bound name: thinkprobe module}] for one relative ``from`` import in ``module``."""
    if not stmt.level:
        return []
    base = module.split(".")[: -stmt.level]
    target = ".".join(base + ([stmt.module] if stmt.module else [])) or "__init__"
    package = REPO / "thinkprobe"
    out = {}
    for a in stmt.names:
        sub = f"{target}.{a.name}" if target != "__init__" else a.name
        rel = package.joinpath(*sub.split("."))
        out[a.asname or a.name] = sub if rel.with_suffix(".py").is_file() or (rel / "__init__.py").is_file() else target
    return [out]


# Run in a copy of the package: every rule script's hash, then one edit at a time, each script's hash again.
_EDITS = r'''
import json, sys
from pathlib import Path
from thinkprobe import codedeps, rulebook
scripts = sorted({(r.script, r.data) for r in rulebook.RULES.values() if not r.no_code})

def hashes():
    codedeps._script_code.cache_clear()
    return {s: codedeps.script_code(codedeps.SCRIPTS_DIR / s, *d) for s, d in scripts}

reaches = {s: set(codedeps.script_modules(codedeps.SCRIPTS_DIR / s, d)) for s, d in scripts}  # an appended comment changes no import

out = {}
before = hashes()
for target in json.loads(sys.argv[1]):
    path = codedeps.PACKAGE_DIR / (target if "/" in target else target.replace(".", "/") + ".py")
    expected = sorted(s for s in reaches if target in reaches[s])
    with open(path, "a") as fh:
        fh.write("\n# an edit\n")
    after = hashes()
    out[target] = {"changed": sorted(s for s in before if before[s] != after[s]), "users": expected}
    before = after
print("EDITS " + json.dumps(out))
'''

EDITED = ["metrics", "traces", "stats.cycles", "trajectories.labelling", "view.trace_page", "lexicons/cues.tsv",
          "generate.engine", "stages.unitfiles", "profile"]


@pytest.fixture(scope="module")
def edits(tmp_path_factory):
    root = tmp_path_factory.mktemp("copy")
    shutil.copytree(REPO / "thinkprobe", root / "thinkprobe", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SCRIPTS, root / "workflow" / "scripts")  # the rule files are not needed (thinkprobe.rulebook)
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-c", _EDITS, json.dumps(EDITED)], capture_output=True, text=True,
                          env=env, cwd=root, timeout=300)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("EDITS ")), None)
    assert line, proc.stderr[-3000:]
    return json.loads(line[len("EDITS "):])


@pytest.mark.parametrize("module", EDITED)
def test_editing_a_module_changes_the_hash_of_exactly_the_scripts_that_use_it(edits, module):
    got = edits[module]
    assert got["changed"] == got["users"]


@pytest.mark.parametrize("module, some, none", [
    ("metrics", {"metrics.py", "stats_sensitivity.py"}, {"segment.py", "graph.py", "import_traces.py", "collect.py"}),
    ("traces", {"segment.py", "graph.py", "import_traces.py"}, {"stats_kruskal.py", "traj_tables.py"}),
    ("stats.cycles", {"stats_cycles.py"}, {"stats_kruskal.py", "graph.py", "segment.py"}),
    ("trajectories.labelling", {"traj_label.py"}, {"graph.py", "stats_kruskal.py"}),
    ("view.trace_page", {"trace_pages.py"}, {"graph.py", "stats_kruskal.py", "traj_label.py"}),
    # the learned typer's cue features read the packaged lexicons (thinkprobe.learned_typer)
    ("lexicons/cues.tsv", {"segment.py", "graph.py"}, {"stats_kruskal.py"}),
    ("generate.engine", {"collect.py"}, {"graph.py", "segment.py"}),
])
def test_known_users_of_a_module(edits, module, some, none):
    changed = set(edits[module]["changed"])
    assert some <= changed, sorted(some - changed)
    assert not none & changed, sorted(none & changed)


def test_importing_the_stage_modules_parses_no_source():
    """Code hashes are derived when first asked for: importing a module with rule bodies (or the sampling code,
    which `thinkprobe --help` reaches) reads no source with ast."""
    modules = ["thinkprobe.trajectories.sampling", "thinkprobe.cli", *(
        f"thinkprobe.{p.relative_to(REPO / 'thinkprobe').with_suffix('').as_posix().replace('/', '.')}"
        for p in sorted((REPO / "thinkprobe" / "stages").glob("*.py")) if p.stem != "__init__")]
    code = ("import importlib, sys; from thinkprobe import codedeps\n"
            "for m in sys.argv[1:]: importlib.import_module(m)\n"
            "print('PARSED', codedeps._info.cache_info().currsize)")
    proc = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "PARSED 0" in proc.stdout, proc.stdout + proc.stderr[-2000:]
