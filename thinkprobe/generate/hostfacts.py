"""What a GPU node offers a generation job, and which GPU environment variant runs there.

A GPU job's environment (``envs/gpu*.yaml``, chosen by ``environments.gpu_variant``) brings its own CUDA runtime
(the ``nvidia-*`` wheels of its torch), so the node must bring two things: an NVIDIA kernel driver new enough
for that runtime, and a C library (glibc) new enough for every binary wheel of the environment. A node short of
either costs a GPU allocation and ends in an error that blames the wrong thing (0 CUDA devices looks like a
partition without GPUs). This module is the one home of those requirements (:data:`VARIANTS`), of reading the
facts of the node it runs on (:func:`read_host`: ``nvidia-smi``, ``/proc/driver/nvidia/version``, glibc) and of
the decision (:func:`variant_problems`, :func:`suitable_variants`, :func:`zero_devices_reason`); the
preflight (``thinkprobe preflight``) and the GPU guard (:mod:`thinkprobe.generate.gpu_guard`) both use it.

Where the numbers come from (each checked by ``tests/test_envs.py`` where pip can tell):

* glibc 2.31: vLLM 0.32.0 requires ``llguidance>=1.7.0,<1.8.0``, whose x86_64 wheels are all
  ``manylinux_2_31`` (pip: ``No matching distribution found for llguidance`` at ``manylinux_2_28``), so neither
  GPU variant installs on glibc 2.28 (RHEL/Rocky/Alma 8) from wheels; RHEL 9 (2.34), Ubuntu 20.04 (2.31) and
  Debian 11 (2.31) or newer work. The CPU environment has no such wheel and installs on glibc 2.28.
* driver 580.65.06: the oldest Linux driver of CUDA 13.0 (NVIDIA's CUDA 13.0 release notes, table 3), the
  runtime of torch 2.13.0's PyPI wheels (``nvidia-cuda-runtime 13.0``). CUDA 13 also dropped GPUs below compute
  capability 7.5 (Maxwell, Pascal, Volta: P100, V100).
* driver 525.60.13: the oldest driver of CUDA 12 through minor-version compatibility (NVIDIA's CUDA
  compatibility guide); the CUDA 12.9 build's own driver is 575.51.03, and a kernel shipped only as PTX newer
  than the driver cannot be compiled by an older one, so below 575.51.03 the preflight warns.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

TIMEOUT_S = 20


@dataclass(frozen=True)
class Variant:
    """A GPU environment variant: its file and what it needs of a node."""

    file: str
    cuda: str  # the CUDA runtime its torch brings
    min_driver: str  # below: the runtime cannot start (cudaErrorInsufficientDriver, 0 devices)
    safe_driver: str  # below (and >= min_driver): works unless a kernel needs PTX JIT of a newer CUDA
    min_glibc: str
    min_compute_capability: str


VARIANTS: dict[str, Variant] = {
    "cuda13": Variant("envs/gpu.yaml", "13.0", "580.65.06", "580.65.06", "2.31", "7.5"),
    "cuda12": Variant("envs/gpu-cuda12.yaml", "12.9", "525.60.13", "575.51.03", "2.31", "7.0"),
}
CPU_MIN_GLIBC = "2.28"  # envs/cpu.yaml: torch's CPU wheel and every other wheel are manylinux_2_28 or older


def names() -> list[str]:
    """The variants ``environments.gpu_variant`` accepts (config/schema.yaml's enum; a test keeps them equal)."""
    return list(VARIANTS)


def get(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        raise KeyError(f"environments.gpu_variant = {name!r}: not a GPU environment variant "
                       f"(known: {', '.join(VARIANTS)})") from None


def version_tuple(text: str | None) -> tuple[int, ...]:
    """``"580.65.06"`` -> ``(580, 65, 6)``; ``"2.31"`` -> ``(2, 31)``; None or no digits -> ``()``."""
    return tuple(int(x) for x in re.findall(r"\d+", text or ""))


@dataclass
class Gpu:
    name: str
    memory_mb: int
    compute_capability: str | None = None


@dataclass
class HostFacts:
    """What one node offers: its name, glibc, the NVIDIA driver (None: no driver loaded) and its GPUs."""

    node: str
    glibc: str | None
    driver: str | None
    gpus: list[Gpu] = field(default_factory=list)
    driver_error: str | None = None  # what nvidia-smi said when it exists but fails (a broken driver install)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "HostFacts":
        return cls(node=d["node"], glibc=d.get("glibc"), driver=d.get("driver"),
                   gpus=[Gpu(**g) for g in d.get("gpus") or []], driver_error=d.get("driver_error"))

    def describe(self) -> str:
        gpus = ", ".join(f"{g.name} ({g.memory_mb / 1024:.0f} GiB"
                         + (f", compute capability {g.compute_capability})" if g.compute_capability else ")")
                         for g in self.gpus) or "none"
        driver = self.driver or f"none ({self.driver_error or 'no NVIDIA driver loaded: no nvidia-smi, no /proc/driver/nvidia'})"
        return f"node {self.node}: glibc {self.glibc or 'unknown'}, NVIDIA driver {driver}, GPUs: {gpus}"


def _glibc() -> str | None:
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    except (AttributeError, ValueError, OSError):
        text = None
    if text and text.startswith("glibc"):
        return text.split()[-1]
    lib, ver = platform.libc_ver()
    return ver if lib == "glibc" and ver else None


def _driver_from_proc() -> str | None:
    try:
        text = open("/proc/driver/nvidia/version").read()
    except OSError:
        return None
    m = re.search(r"Kernel Module(?: for [\w-]+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    return m.group(1) if m else None


def read_host() -> HostFacts:
    """The facts of the node this runs on (no CUDA library is loaded: ``nvidia-smi`` and /proc answer)."""
    facts = HostFacts(node=socket.gethostname(), glibc=_glibc(), driver=None)
    smi = shutil.which("nvidia-smi")
    if smi:
        query = [smi, "--query-gpu=driver_version,name,memory.total,compute_cap", "--format=csv,noheader,nounits"]
        try:
            proc = subprocess.run(query, capture_output=True, text=True, timeout=TIMEOUT_S)
            if proc.returncode != 0 and "compute_cap" in proc.stderr:  # drivers before 510 lack the field
                proc = subprocess.run([query[0], query[1].replace(",compute_cap", ""), query[2]],
                                      capture_output=True, text=True, timeout=TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            facts.driver_error = f"nvidia-smi failed: {exc}"
        else:
            if proc.returncode == 0:
                for line in proc.stdout.strip().splitlines():
                    cols = [c.strip() for c in line.split(",")]
                    facts.driver = cols[0]
                    mem = int(float(cols[2])) if len(cols) > 2 and re.fullmatch(r"[\d.]+", cols[2]) else 0
                    cc = cols[3] if len(cols) > 3 and re.fullmatch(r"\d+\.\d+", cols[3]) else None
                    facts.gpus.append(Gpu(cols[1], mem, cc))
            else:
                facts.driver_error = f"nvidia-smi failed: {(proc.stderr or proc.stdout).strip()[:300]}"
    if facts.driver is None:
        facts.driver = _driver_from_proc()
    return facts


def variant_problems(facts: HostFacts, name: str, gpu_mem_gb: float | None = None) -> tuple[list[str], list[str]]:
    """``(errors, warnings)``: what stops variant ``name`` on this node, and what may.

    >>> f = HostFacts("g1", "2.34", "550.54.15", [Gpu("NVIDIA A100-SXM4-80GB", 81920, "8.0")])
    >>> variant_problems(f, "cuda12")[0]
    []
    >>> variant_problems(f, "cuda13")[0][0].startswith("node g1: NVIDIA driver 550.54.15 is older than 580.65.06")
    True
    """
    v = get(name)
    errors: list[str] = []
    warnings: list[str] = []
    where = f"node {facts.node}"
    if facts.driver is None:
        errors.append(f"{where}: no NVIDIA driver ({facts.driver_error or 'no nvidia-smi, no /proc/driver/nvidia'}):"
                      " not a GPU node, or its driver is not loaded; send GPU jobs to a GPU partition "
                      "(resources.slurm.gpu.partition / .constraint)")
    elif version_tuple(facts.driver) < version_tuple(v.min_driver):
        older = [n for n, o in VARIANTS.items() if version_tuple(facts.driver) >= version_tuple(o.min_driver)]
        errors.append(f"{where}: NVIDIA driver {facts.driver} is older than {v.min_driver}, the oldest that runs "
                      f"CUDA {v.cuda} ({v.file}, environments.gpu_variant = {name}): "
                      + (f"set environments.gpu_variant: {older[0]}" if older else
                         "ask the cluster's admins for a newer driver; no variant runs on it"))
    elif version_tuple(facts.driver) < version_tuple(v.safe_driver):
        warnings.append(f"{where}: NVIDIA driver {facts.driver} runs CUDA {v.cuda} through minor-version "
                        f"compatibility only (the CUDA {v.cuda} driver is {v.safe_driver}): a kernel that needs "
                        "PTX compilation fails with cudaErrorUnsupportedPtxVersion")
    if facts.glibc is None:
        warnings.append(f"{where}: glibc version unknown (not a glibc system?): {v.file} needs glibc >= {v.min_glibc}")
    elif version_tuple(facts.glibc) < version_tuple(v.min_glibc):
        errors.append(f"{where}: glibc {facts.glibc} is older than {v.min_glibc}, which {v.file} needs (vLLM 0.32.0 "
                      "requires llguidance 1.7, whose wheels are manylinux_2_31): no GPU variant installs here; "
                      "run the GPU jobs on nodes with RHEL/Rocky 9, Ubuntu 20.04+ or Debian 11+ (a container "
                      "of one works too)")
    for g in facts.gpus:
        if g.compute_capability and version_tuple(g.compute_capability) < version_tuple(v.min_compute_capability):
            errors.append(f"{where}: {g.name} has compute capability {g.compute_capability}; CUDA {v.cuda} needs "
                          f"{v.min_compute_capability} or newer" + (": set environments.gpu_variant: cuda12"
                                                                    if name == "cuda13" else ""))
    if gpu_mem_gb and facts.gpus:
        small = min(facts.gpus, key=lambda g: g.memory_mb)
        if small.memory_mb / 1024 < 0.9 * float(gpu_mem_gb):
            errors.append(f"{where}: {small.name} has {small.memory_mb / 1024:.0f} GiB, below resources.gpu_mem_gb = "
                          f"{gpu_mem_gb}: the plan places weights for GPUs this node does not have; set "
                          "resources.gpu_mem_gb to the node's GPU memory or choose nodes with larger GPUs "
                          "(resources.slurm.gpu.constraint)")
    return errors, warnings


def variant_for_cuda(torch_cuda: str | None) -> str | None:
    """The variant whose CUDA major version is ``torch_cuda``'s (``torch.version.cuda``), or None (a CPU build).

    >>> variant_for_cuda("12.9"), variant_for_cuda("13.0"), variant_for_cuda(None)
    ('cuda12', 'cuda13', None)
    """
    major = version_tuple(torch_cuda)[:1]
    return next((n for n, v in VARIANTS.items() if major and version_tuple(v.cuda)[:1] == major), None)


def suitable_variants(facts: HostFacts) -> list[str]:
    """The variants that run on this node without an error, newest CUDA first."""
    return [n for n in VARIANTS if not variant_problems(facts, n)[0]]


def zero_devices_reason(facts: HostFacts, name: str) -> str:
    """Why a job finds no CUDA device: a driver problem (too old, broken) or a partition problem (no GPU).

    >>> zero_devices_reason(HostFacts("c1", "2.34", None), "cuda13").startswith("partition problem")
    True
    >>> zero_devices_reason(HostFacts("g1", "2.34", "535.104.05", [Gpu("A100", 81920)]), "cuda13")[:14]
    'driver problem'
    """
    v = get(name)
    if facts.driver is None:
        why = facts.driver_error or "no nvidia-smi, no /proc/driver/nvidia"
        return (f"partition problem: node {facts.node} has no NVIDIA driver ({why}), so it is not a GPU node: "
                "send GPU jobs to GPU nodes "
                "(resources.slurm.gpu.partition / .constraint, resources.gpu_model)")
    if version_tuple(facts.driver) < version_tuple(v.min_driver):
        fit = [n for n, o in VARIANTS.items() if version_tuple(facts.driver) >= version_tuple(o.min_driver)]
        return (f"driver problem: node {facts.node} has NVIDIA driver {facts.driver}, older than {v.min_driver}, "
                f"the oldest for CUDA {v.cuda} (environments.gpu_variant = {name}, {v.file}): "
                + (f"set environments.gpu_variant: {fit[0]}" if fit else "no variant runs on this driver"))
    if not facts.gpus:
        return (f"node {facts.node} has NVIDIA driver {facts.driver} but nvidia-smi lists no GPU: the job's "
                "allocation holds none (ask SLURM for GPUs: resources.slurm.gpu, --gpus) or the GPUs are in an "
                "error state (nvidia-smi -q on the node)")
    return (f"node {facts.node} has NVIDIA driver {facts.driver} and {len(facts.gpus)} GPU(s), yet torch sees none: "
            "CUDA_VISIBLE_DEVICES hides them, or the environment's torch is a CPU build (environments.gpu)")


def main() -> int:
    """``python -m thinkprobe.generate.hostfacts``: this node's facts as one line of JSON (the preflight job)."""
    print(json.dumps(read_host().as_dict()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
