"""The resources of a generation job (``collect``, ``traj_sample``), derived from the model and the plan.

A generation job loads one model and generates the tokens the planner expects of it
(:mod:`thinkprobe.study.planner`), so what it asks SLURM for follows from those two:

``runtime`` (minutes)
    ``resources.runtime_factor`` x the job's expected hours (expected tokens / the model's throughput + the
    start-up allowance :func:`startup_s`: ``planning.job_overhead_s`` + ``planning.load_s_per_gb`` x the weights'
    GB), at least ``resources.min_runtime``; a retry asks the runtime x its attempt (:func:`attempt_runtime`). A job asking for more
    than ``resources.max_runtime`` (the partition's limit) is an error naming the batch size to lower: a job
    that cannot finish inside the limit would be killed and rerun forever.
``mem_mb`` (host memory)
    the weights (:func:`thinkprobe.generate.modelsize.weights`: as stated, else the model's own files, else its
    total parameters x 2 bytes) pass through the page cache once while the engine loads them, each GPU's worker process keeps
    a few GB, and the job holds its generated text until it writes it (an ``openai`` endpoint's job loads no
    weights):
    ``weights_gb + WORKER_GB x GPUs + BASE_GB`` (a CPU model: ``+ its KV cache``), plus ``BYTES_PER_TOKEN`` per
    expected token, rounded up to whole GB.
CPUs
    a GPU job asks ``resources.cpus_per_gpu`` per GPU (``--cpus-per-gpu``: not capped by the submitting
    machine's cores); a CPU model's job asks ``resources.analysis_threads`` threads.

Every derived value can be overridden, per model for both rules (``models.<m>.runtime``, ``mem_mb``,
``threads``, ``cpus_per_gpu``) and per model and rule (``models.<m>.resources.<rule>.<key>``); a profile's
``set-resources`` overrides them all (Snakemake's own rule). None of them is a parameter of any job: changing a
resource reruns nothing.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from .modelspec import ModelSpec

RULES = ("collect", "traj_sample")
RESOURCE_KEYS = ("runtime", "mem_mb", "threads", "cpus_per_gpu")
BASE_GB = 8  # the Python process, CUDA context, tokenizer
WORKER_GB = 4  # one engine worker per GPU (tensor parallel)
BYTES_PER_TOKEN = 16  # generated text held until the job writes it (continuation documents)
UNKNOWN_WEIGHTS_GB = 16.0  # a model whose size nothing states (no weights_gb, params_b, cache): a 7-8B model in bf16


def startup_s(config: Mapping[str, Any], weights: float | None) -> float:
    """Seconds a generation job spends before it generates: ``planning.job_overhead_s`` (process, CUDA graphs)
    plus ``planning.load_s_per_gb`` x the weights' GB (read from the shared file system), so a 256 GB model's job
    is allowed more start-up than a 1 GB one's.

    >>> cfg = {"planning": {"job_overhead_s": 300, "load_s_per_gb": 2}}
    >>> startup_s(cfg, 1.0), startup_s(cfg, 256.0), startup_s(cfg, None)
    (302.0, 812.0, 332.0)
    """
    plan = config["planning"]
    gb = weights if weights is not None else UNKNOWN_WEIGHTS_GB
    return float(plan["job_overhead_s"]) + float(plan["load_s_per_gb"]) * gb


def attempt_runtime(runtime: int, attempt: int, max_runtime: int) -> int:
    """The wall time (minutes) of a job's ``attempt``-th try: the planned runtime x the attempt, at most
    ``resources.max_runtime`` (the partition's limit). A retry after TIMEOUT thus asks for more time, and the
    resumed job (it continues from its store) gets to finish; the first try asks exactly the plan's runtime.

    >>> attempt_runtime(120, 1, 2880), attempt_runtime(120, 2, 2880), attempt_runtime(2000, 2, 2880)
    (120, 240, 2880)
    """
    return max(int(runtime), min(int(runtime) * max(1, int(attempt)), int(max_runtime)))


def job_gpus(rule: str, model: ModelSpec, config: Mapping[str, Any]) -> int:
    """GPUs of one job: the model's tensor_parallel_size on a GPU (trajectory sampling: when trajectories.gpu)."""
    if rule == "traj_sample" and not config["trajectories"]["gpu"]:
        return 0
    return model.gpus()


def overrides(rule: str, model: ModelSpec) -> dict[str, int]:
    """What the config states for this model's jobs of ``rule``: its entry's keys, then its ``resources.<rule>``."""
    stated = model.resources  # the entry's stated resource keys (validated by the schema)
    out = {k: stated[k] for k in RESOURCE_KEYS if stated.get(k) is not None}
    out.update({k: v for k, v in (stated.get("resources") or {}).get(rule, {}).items() if v is not None})
    return out


def job_resources(rule: str, model: ModelSpec | Mapping[str, Any], config: Mapping[str, Any], hours: float, tokens: float,
                  weights: float | None) -> dict[str, Any]:
    """The resources of one generation job of ``model`` expected to take ``hours`` and generate ``tokens``.

    Returns ``gpu``, ``runtime``, ``mem_mb`` and ``cpus_per_gpu`` (GPU) or ``threads`` (CPU), plus ``derived``:
    the keys computed here rather than stated in the config.

    >>> cfg = {"resources": {"runtime_factor": 2, "min_runtime": 10, "cpus_per_gpu": 8, "analysis_threads": 2},
    ...        "trajectories": {"gpu": True}}
    >>> m = {"name": "m", "backend": "vllm", "device": "gpu", "engine": {"tensor_parallel_size": 2}}
    >>> r = job_resources("collect", m, cfg, hours=1.5, tokens=1e6, weights=64)
    >>> (r["gpu"], r["runtime"], r["mem_mb"], r["cpus_per_gpu"])
    (2, 180, 82944, 8)
    >>> job_resources("collect", {**m, "runtime": 60}, cfg, 1.5, 1e6, 64)["runtime"]
    60
    """
    model = ModelSpec.of(model)  # a spec, or an entry with its name
    res = config["resources"]
    n_gpus = job_gpus(rule, model, config)
    stated = overrides(rule, model)
    out: dict[str, Any] = {"gpu": n_gpus}
    out["runtime"] = max(int(res["min_runtime"]), math.ceil(float(res["runtime_factor"]) * hours * 60))
    if not model.kind.loads_weights:  # an endpoint (or a file) holds the model; the job is its client
        weights = 0.0
    gb = (weights if weights is not None else UNKNOWN_WEIGHTS_GB) + BASE_GB + tokens * BYTES_PER_TOKEN / 1e9
    if n_gpus:
        gb += WORKER_GB * n_gpus
    elif model.kind.loads_weights:  # a CPU engine in the job: its KV cache (an endpoint's client holds none)
        gb += float(model.settings["kv_cache_space_gb"])
    out["mem_mb"] = 1024 * math.ceil(gb)
    if n_gpus:
        out["cpus_per_gpu"] = int(res["cpus_per_gpu"])
    else:
        out["threads"] = int(res["analysis_threads"])
    out["derived"] = sorted(k for k in ("runtime", "mem_mb", "cpus_per_gpu", "threads")
                            if k in out and k not in stated)
    for k, v in stated.items():
        if k == "cpus_per_gpu" and not n_gpus:
            continue
        if k == "threads" and n_gpus:
            continue
        out[k] = int(v)
    return out


def job_threads(resources: Mapping[str, Any]) -> int:
    """Snakemake ``threads`` of a generation job: its CPUs (a GPU job: cpus_per_gpu x GPUs)."""
    if resources["gpu"]:
        return int(resources["cpus_per_gpu"]) * int(resources["gpu"])
    return int(resources["threads"])


def over_cap(resources: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    return int(resources["runtime"]) > int(config["resources"]["max_runtime"])
