"""Helpers to run the real Snakemake workflow in a scratch directory (shared by the workflow tests)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def make_workdir(root: Path, config: dict | None = None, package_copy: bool = False) -> Path:
    """A working directory with config/config.yaml and the bundled examples; optionally a private checkout.

    With ``package_copy`` the workflow (Snakefile, rules, scripts, schema) and the thinkprobe sources are
    copied into ``root``, which then runs as its own checkout: a test can edit a module there without
    touching the real one (Snakemake imports the package from the Snakefile's folder first).
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "config").mkdir(exist_ok=True)
    cfg = config if config is not None else analysis_config()
    (root / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    if not (root / "examples").exists():
        shutil.copytree(REPO / "examples", root / "examples")
    if package_copy:
        ignore = shutil.ignore_patterns("__pycache__")
        for folder in ("thinkprobe", "rules", "workflow", "envs"):
            shutil.copytree(REPO / folder, root / folder, ignore=ignore, dirs_exist_ok=True)
        shutil.copy(REPO / "Snakefile", root / "Snakefile")
        shutil.copy(REPO / "config" / "schema.yaml", root / "config" / "schema.yaml")
    return root


def default_config() -> dict:
    """The embedded default, as shipped (collection with vLLM, trajectories and the analysis)."""
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def analysis_config() -> dict:
    """The embedded default without its LLM stages: the bundled traces through the Thought Graph analysis.

    The analysis tests (job tables, incremental reruns, faults, SLURM) run on this so that they measure the
    analysis alone; the LLM stages have their own workflow tests, and ``tests/test_default_run.py`` runs the
    whole default.
    """
    cfg = default_config()
    if "collection" in cfg:
        cfg["collection"]["jobs"] = []
    if "trajectories" in cfg:
        cfg["trajectories"]["enabled"] = False
    return cfg


def env_for(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    if (workdir / "Snakefile").exists():
        env["PYTHONPATH"] = str(workdir) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("THINKPROBE_CACHE", str(Path.home() / ".cache" / "thinkprobe"))
    return env


def snakemake(workdir: Path, *args: str, check: bool = True, timeout: int = 900) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(snakefile(workdir)), "--directory", str(workdir),
           "--cores", "2", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env_for(workdir), timeout=timeout, cwd=workdir)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def snakefile(workdir: Path) -> Path:
    own = workdir / "Snakefile"
    return own if own.exists() else REPO / "Snakefile"


def job_counts(output: str) -> dict[str, int]:
    """The 'Job stats' table of a (dry) run, as {rule: count} (empty when nothing is to be done)."""
    m = re.search(r"Job stats:\njob\s+count\n[-\s]+\n(.*?)\ntotal\s+\d+", output, re.S)
    if not m:
        return {}
    return {name: int(n) for name, n in re.findall(r"^(\S+)\s+(\d+)\s*$", m.group(1), re.M)}


def with_analysis(cfg: dict) -> dict:
    """``cfg`` with every analysis section written out (defaults: thinkprobe.params), ready to be edited."""
    from thinkprobe.params import Params

    given = cfg.get("analysis") or {}
    cfg["analysis"] = {s: {**v, **(given.get(s) or {})} for s, v in Params().to_dict().items()}
    return cfg


def write_config(workdir: Path, edit) -> Path:
    """Write a modified copy of the working directory's config and return its path."""
    cfg = with_analysis(yaml.safe_load((workdir / "config" / "config.yaml").read_text()))
    edit(cfg)
    path = workdir / "config" / "edited.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path
