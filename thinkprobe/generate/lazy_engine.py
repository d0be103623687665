"""An engine that starts only when something is generated (issue 37, item 5): :class:`LazyVllmEngine`.

A sampling job whose batch is rebuilt from intact parts of the continuation store (a finished document was
refused, every part is intact) has nothing to sample, yet it needs what identifies the engine before it can
tell: the tokenizer (to read the traces' checkpoints), the context length (part of the store's key), the
backend, model and version (the documents' provenance). For vLLM all of these are known without starting
it when the model's ``engine.max_model_len`` is configured: the tokenizer is read from the model's folder
(the same ``tokenizer.json`` whose sha256 is the engine's ``tokenizer_sha256``), the version from the
installed distribution. :class:`LazyVllmEngine` gives them and starts the real engine (:class:`VllmEngine`)
at the first :meth:`~LazyVllmEngine.generate`; a job that generates nothing starts none (before: 40-47 s
here, a GPU allocation and a model load on a cluster, for nothing).

Without a configured ``max_model_len`` (vLLM then takes the model's own, derived at start) and for the HTTP
backend (opening it costs one ``GET /models``), :func:`thinkprobe.generate.engine.engine_for_work` opens the
engine as before (the ``vllm`` backend's ``lazy``, :mod:`thinkprobe.generate.backends.vllm`, decides which).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from .interface import Generation, SamplingSpec


class LazyVllmEngine:
    """The identity of a vLLM engine without the engine; :meth:`generate` starts it (once)."""

    backend = "vllm"

    def __init__(self, model: Any, log: Callable[[str], None] = print):
        """``model``: the model's :class:`~thinkprobe.generate.modelspec.ModelSpec` (not imported here: the spec
        imports the backend registry, whose vLLM file imports this module)."""
        from ..outputs import sha256_file
        from .models import resolve_model
        from .vllm_engine import engine_version

        self._spec = model
        self._log = log
        self.model = model.name
        self.folder, self.source = resolve_model(model)  # as the engine it stands for resolves it
        self.version = engine_version()
        self.max_model_len = int(model.max_model_len)
        tok_file = self.folder / "tokenizer.json"
        self.tokenizer_sha256 = sha256_file(tok_file) if tok_file.is_file() else None
        self._tok = None
        self._engine = None
        self.start_seconds: float | None = None

    @property
    def started(self) -> bool:
        return self._engine is not None

    def tokenizer(self):
        if self._engine is not None:
            return self._engine.tokenizer()
        if self._tok is None:
            from transformers import AutoTokenizer

            self._tok = AutoTokenizer.from_pretrained(str(self.folder))
        return self._tok

    def generate(self, prompts: Sequence[str | Sequence[int]], sampling: Sequence[SamplingSpec]) -> list[Generation]:
        if self._engine is None:
            from .interface import EngineError
            from .vllm_engine import VllmEngine

            t0 = time.perf_counter()
            engine = VllmEngine(self._spec)
            self.start_seconds = time.perf_counter() - t0
            if int(engine.max_model_len) != self.max_model_len or engine.tokenizer_sha256 != self.tokenizer_sha256:
                engine.close()
                raise EngineError(f"model {self.model!r}: the engine started with max_model_len "
                                  f"{engine.max_model_len} and tokenizer {engine.tokenizer_sha256}, not the "
                                  f"{self.max_model_len} and {self.tokenizer_sha256} read from its config")
            self._engine = engine
            self._log(f"engine {engine.backend} {engine.version} for {engine.model} started for the first prefixes "
                      f"to sample: {self.start_seconds:.1f} s")
        return self._engine.generate(prompts, sampling)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()

