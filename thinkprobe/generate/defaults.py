"""The defaults of a `models:` entry, of the HTTP backend, of the vLLM engine and of sampling (trace collection
and trajectory continuations): their one home.

The backends, the planner, the start-up checks and the samplers read them here, and
:func:`thinkprobe.config.load_schema` writes them into the workflow schema (blocks marked ``x-defaults-from``),
so the schema, the code and the documentation of a default cannot disagree. A leaf module: importing it costs
nothing and imports no backend.
"""

from __future__ import annotations

from typing import Any, Mapping

# A `models:` entry (ModelSpec.from_config fills them: defaults inside a name-keyed map are not filled by the
# config loader). No mem_mb, threads, runtime or cpus_per_gpu: a generation job's resources are derived from the
# model and the plan (thinkprobe.generate.jobres) unless the entry states them.
MODEL_DEFAULTS: dict[str, Any] = {"reasoning": "native", "prompt_variant": "native", "think_prefill": False,
                                  "system_prompt": "", "device": "gpu", "gpu_model": ""}

# Keys of a `models:` entry that size or place a job, or feed the planner, but decide no output: they never
# reach a rule's params (changing them reruns nothing) nor any identity of stored results.
MODEL_RESOURCE_KEYS = frozenset({"mem_mb", "threads", "runtime", "cpus_per_gpu", "gpu_model", "resources",
                                 "params_b", "total_params_b", "weights_gb", "trace_tokens"})

# `collection.sampling`: the decoding of the realized traces (paper section 4.3: a non-zero temperature).
COLLECTION_SAMPLING_DEFAULTS: dict[str, Any] = {"temperature": 0.6, "top_p": 0.95, "max_tokens": 8192, "stop": []}

# `trajectories.sampling`: the decoding of the continuations. max_tokens None: a continuation runs to its end or
# to the end of the context (the room its prefix leaves in max_model_len), everywhere: planner, start-up check,
# sampler. Real reasoning models need thousands of tokens to reach their answer; a budget cut labels it null.
TRAJECTORY_SAMPLING_DEFAULTS: dict[str, Any] = {"temperature": 0.6, "top_p": 0.95, "max_tokens": None, "seed": 0}

# `trajectories`: N continuations per checkpoint, stride s (App. A.1, A.5), the estimator, the checkpoint cap,
# questions per sampling job and prefixes per engine call (a resource of the job, never part of its identity).
TRAJECTORY_DEFAULTS: dict[str, Any] = {"n": 16, "stride": 16, "estimator": "full", "max_reasoning_tokens": 0,
                                       "batch_questions": 20, "prefixes_per_call": 64}

# The estimators of a trajectory (`trajectories.estimator`): full continuations (the paper) or forced answers.
ESTIMATORS = ("full", "forced")

# `trajectories.forced`: the forced-answer estimator's budget per answer.
FORCED_DEFAULTS: dict[str, Any] = {"max_tokens": 16}

# The OpenAI-compatible HTTP backend (generate/http_engine.py): keys of the model's entry. The reply limits
# bound what one request in flight can hold: a reply of n = 16 continuations of 128k tokens each, token ids
# included, is about 22 MB of JSON; a vLLM reply nests 5 levels and holds a few objects per continuation.
HTTP_DEFAULTS: dict[str, Any] = {"concurrency": 8, "timeout_s": 600.0, "max_retries": 5, "backoff_s": 1.0,
                                 "return_token_ids": "auto", "max_reply_bytes": 64 * 2**20, "max_json_depth": 64,
                                 "max_json_containers": 100_000}

# vLLM's engine, known to work on CPU and GPU alike; every key can be overridden in the model's `engine:`.
# No `max_model_len`: vLLM then uses the model's own context length (its config.json); a demo on a small
# machine sets a small one explicitly (config/config.yaml).
VLLM_ENGINE_DEFAULTS: dict[str, Any] = {
    "tensor_parallel_size": 1,
    "dtype": "auto",
    "gpu_memory_utilization": 0.9,
    "enforce_eager": True,
    "enable_prefix_caching": True,
    "block_size": 32,  # the CPU attention backend accepts only multiples of 32 (16 fails at start)
    "max_num_batched_tokens": 32768,
    "max_num_seqs": 256,
    "kv_cache_space_gb": 1,
    "seed": 0,
}

KV_CACHE_VAR = "VLLM_CPU_KVCACHE_SPACE"


def kv_cache_space(engine_cfg: Mapping[str, Any] | None, environ: Mapping[str, str]) -> tuple[str, str | None]:
    """The CPU KV-cache size (GiB) to export as ``VLLM_CPU_KVCACHE_SPACE``, and a note for the job's log.

    The config wins: a ``kv_cache_space_gb`` the model's ``engine:`` section states replaces a preset
    variable (the note says so when they differ). Without one, a preset variable is kept, and the note says
    that it, not the default, sizes the cache; with neither, the default applies silently.

    >>> kv_cache_space({"kv_cache_space_gb": 4}, {"VLLM_CPU_KVCACHE_SPACE": "2"})
    ('4', 'VLLM_CPU_KVCACHE_SPACE=2 from the environment replaced by the config: kv_cache_space_gb = 4')
    >>> kv_cache_space({}, {"VLLM_CPU_KVCACHE_SPACE": "2"})[0]
    '2'
    >>> kv_cache_space(None, {})
    ('1', None)
    """
    stated = (engine_cfg or {}).get("kv_cache_space_gb")
    preset = environ.get(KV_CACHE_VAR)
    if stated is not None:
        value = f"{stated:g}" if isinstance(stated, float) else str(stated)
        note = (f"{KV_CACHE_VAR}={preset} from the environment replaced by the config: kv_cache_space_gb = {value}"
                if preset is not None and preset != value else None)
        return value, note
    if preset is not None:
        return preset, (f"{KV_CACHE_VAR}={preset} from the environment sizes the KV cache (the config states no "
                        f"kv_cache_space_gb; its default would be {VLLM_ENGINE_DEFAULTS['kv_cache_space_gb']})")
    return str(VLLM_ENGINE_DEFAULTS["kv_cache_space_gb"]), None
