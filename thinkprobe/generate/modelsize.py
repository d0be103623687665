"""How large a model is, read from its own files: its total parameters (what its weights hold in memory), its
active parameters (what one token computes with: the planner's throughput class) and its weights' bytes, each
with where the figure came from (``thinkprobe plan`` prints it under the table).

A model's folder (a hub snapshot once ``fetch_models`` has cached it, or a local ``path``) has three witnesses of
its total parameters, used in this order (:func:`read_size`):

1. the weight index (``model.safetensors.index.json``): ``metadata.total_parameters`` when transformers wrote it
   (an exact count), else ``metadata.total_size`` (the weights' bytes, which every writer records) divided by the
   bytes of the model's dtype (``config.json``'s ``dtype`` / ``torch_dtype``; bf16 when it names none). The index
   is one of a snapshot's small files, there before every shard is;
2. the safetensors headers: each file begins with a JSON header listing every tensor's shape, so their sum is
   the exact count of what is on disk (read without loading any tensor);
3. ``config.json`` alone: :func:`config_estimate`, an estimate from its sizes (within a few per cent for the
   decoder-only families it knows; exact for SmolLM2-135M).

A quantized model (``config.json`` has a ``quantization_config``) packs several parameters into one stored
element, so neither its bytes over its dtype nor its header shapes count them: its total comes from
``total_parameters`` or the estimate, while its bytes stay what its memory needs.

Active parameters: a dense model computes with all of them (its total); a mixture-of-experts model (config.json
names its experts) with its shared part and ``k`` of its ``E`` experts per token: the estimate's active count.

The weights' size in memory (:func:`weights`) is, first to last: ``models.<m>.weights_gb`` as stated; the bytes of
the model's files (the index's ``total_size``, else its safetensors on disk); a built-in model's size; the total
parameters read here x the dtype's bytes; ``models.<m>.total_params_b`` x 2 bytes (a figure given by hand for a
model not yet fetched); ``models.<m>.params_b`` x 2 bytes. A mixture-of-experts model holds all its experts in
memory though it computes with a few, so its active ``params_b`` would undersize it: the model's own files, once
there, replace the figures given by hand.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from .modelspec import ModelSpec

BF16_BYTES = 2
BUILTIN_WEIGHTS_GB = {"smollm2": 0.27}  # SmolLM2-135M-Instruct, safetensors (bf16)
BUILTIN_PARAMS_B = {"smollm2": 0.135}  # SmolLM2-135M-Instruct
DTYPE_BYTES = {"float64": 8, "double": 8, "float32": 4, "float": 4, "fp32": 4, "float16": 2, "half": 2, "fp16": 2,
               "bfloat16": 2, "bf16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1, "fp8": 1, "int8": 1, "uint8": 1}
MAX_HEADER_BYTES = 100_000_000  # a safetensors header larger than this is not read (a corrupt or hostile file)
# families whose feed-forward block is two matrices (up, down) rather than the gated three (gate, up, down)
UNGATED_MLP = frozenset({"gpt2", "gpt_neox", "gptj", "gpt_bigcode", "opt", "bloom", "falcon", "phi", "starcoder2",
                         "mpt", "codegen"})


@dataclass(frozen=True)
class ModelSize:
    """What a model's files say of its size (None: they do not say), each figure with its witness."""

    total: float | None = None  # parameters
    total_source: str = ""
    active: float | None = None  # parameters one token computes with
    active_source: str = ""
    weight_bytes: int | None = None  # the weights' bytes as stored
    bytes_source: str = ""
    dtype_bytes: int = BF16_BYTES
    dtype: str = "bfloat16"


def _text_config(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's section of a config (a multimodal model nests it)."""
    for key in ("text_config", "llm_config", "language_config"):
        if isinstance(cfg.get(key), Mapping) and cfg[key].get("hidden_size"):
            return cfg[key]
    return cfg


def _first(cfg: Mapping[str, Any], *keys: str) -> Any:
    for k in keys:
        v = cfg.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return v
    return None


def config_dtype(cfg: Mapping[str, Any]) -> tuple[str, int]:
    """The stored dtype's name and bytes (``dtype``, else ``torch_dtype``; bf16 when it names none or an unknown one).

    >>> config_dtype({"dtype": "float32"}), config_dtype({"torch_dtype": "bfloat16"}), config_dtype({})
    (('float32', 4), ('bfloat16', 2), ('bfloat16 (config.json names none)', 2))
    """
    for section in (cfg, _text_config(cfg)):
        for key in ("dtype", "torch_dtype"):
            name = section.get(key)
            if isinstance(name, str) and name.removeprefix("torch.") in DTYPE_BYTES:
                name = name.removeprefix("torch.")
                return name, DTYPE_BYTES[name]
    return "bfloat16 (config.json names none)", BF16_BYTES


def config_estimate(cfg: Mapping[str, Any]) -> tuple[int, int, str] | None:
    """``(total, active, how)``: parameters of a decoder-only transformer estimated from its ``config.json``, or
    None when it lacks the hidden size, the layer count or the vocabulary.

    Per layer (h hidden size, d head dim, n_q / n_kv query / key-value heads, I feed-forward size): attention
    h·n_q·d + 2·h·n_kv·d (query, key, value) + n_q·d·h (output); a gated feed-forward block 3·h·I (gate, up,
    down; 2·h·I for the families of :data:`UNGATED_MLP`); two norms of h. A mixture-of-experts layer (``E`` =
    ``num_local_experts`` / ``num_experts`` / ``n_routed_experts``, ``k`` = ``num_experts_per_tok``) holds E
    expert blocks of its ``moe_intermediate_size`` (else ``intermediate_size``), a router h·E and its shared
    experts (``n_shared_experts`` x the expert size, or ``shared_expert_intermediate_size``), of which a token
    computes with k experts, the shared ones and the router; DeepSeek's first ``first_k_dense_replace`` layers are
    dense. Plus the token embedding V·h, the output head V·h unless ``tie_word_embeddings`` (transformers' default:
    tied), and the final norm. Biases, a vision tower and layer-specific patterns (Qwen-MoE's ``mlp_only_layers``)
    are not counted.

    >>> smol = {"hidden_size": 576, "num_hidden_layers": 30, "vocab_size": 49152, "intermediate_size": 1536,
    ...         "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64, "tie_word_embeddings": True}
    >>> config_estimate(smol)[:2]  # SmolLM2-135M: its safetensors hold 134,515,008
    (134515008, 134515008)
    >>> moe = {**smol, "num_local_experts": 8, "num_experts_per_tok": 2}
    >>> total, active, how = config_estimate(moe); total > 3 * active, how.startswith("config.json estimate (")
    (True, True)
    """
    c = _text_config(cfg)
    h = _first(c, "hidden_size", "n_embd", "d_model")
    layers = _first(c, "num_hidden_layers", "n_layer", "num_layers")
    vocab = _first(c, "vocab_size", "padded_vocab_size")
    if not (h and layers and vocab):
        return None
    h, layers, vocab = int(h), int(layers), int(vocab)
    heads = int(_first(c, "num_attention_heads", "n_head") or max(1, h // 64))
    kv = int(1 if c.get("multi_query") else _first(c, "num_key_value_heads", "num_kv_heads") or heads)
    d = int(_first(c, "head_dim") or h // heads)
    inter = int(_first(c, "intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size") or 4 * h)
    mats = 2 if str(c.get("model_type") or cfg.get("model_type") or "") in UNGATED_MLP else 3
    attn = h * heads * d + 2 * h * kv * d + heads * d * h
    norms = 2 * h
    experts = _first(c, "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
    k = _first(c, "num_experts_per_tok", "moe_topk", "experts_per_token", "top_k")
    tied = c.get("tie_word_embeddings", cfg.get("tie_word_embeddings", True)) is not False
    emb = vocab * h * (1 if tied else 2) + h
    if experts and int(experts) > 1:
        experts, k = int(experts), int(k or 1)
        e_size = int(_first(c, "moe_intermediate_size", "expert_intermediate_size") or inter)
        shared = int(_first(c, "shared_expert_intermediate_size") or
                     (_first(c, "n_shared_experts", "num_shared_experts") or 0) * e_size)
        dense_layers = min(layers, int(_first(c, "first_k_dense_replace") or 0))
        moe_layers = layers - dense_layers
        dense = dense_layers * (attn + mats * h * inter + norms)
        common = moe_layers * (attn + norms + h * experts + mats * h * shared)
        total = emb + dense + common + moe_layers * experts * mats * h * e_size
        active = emb + dense + common + moe_layers * k * mats * h * e_size
        how = (f"config.json estimate ({layers} layers of hidden size {h}, {experts} experts of which {k} per token, "
               f"vocabulary {vocab:,})")
        return total, active, how
    total = emb + layers * (attn + mats * h * inter + norms)
    return total, total, f"config.json estimate ({layers} layers of hidden size {h}, vocabulary {vocab:,})"


def safetensors_header_params(path: Path) -> int:
    """Parameters in one safetensors file: the product of every tensor's shape in its header (8 bytes of length,
    then JSON), no tensor read. Raises ValueError for a file that is not safetensors."""
    with open(path, "rb") as fh:
        raw = fh.read(8)
        if len(raw) != 8:
            raise ValueError("shorter than a safetensors header")
        (n,) = struct.unpack("<Q", raw)
        if n > MAX_HEADER_BYTES:
            raise ValueError(f"a safetensors header of {n:,} bytes (more than {MAX_HEADER_BYTES:,})")
        header = json.loads(fh.read(n))
    return sum(math.prod(int(x) for x in t["shape"]) for k, t in header.items() if k != "__metadata__")


def _read_json(path: Path) -> Mapping[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, Mapping) else None


def read_size(folder: str | Path | None) -> ModelSize:
    """What the model folder's files say of its size (an empty :class:`ModelSize` for None or a folder that says
    nothing). A file that cannot be read (an index that is not JSON, a cut-short header) is passed over for the
    next witness, and the source names it."""
    if folder is None:
        return ModelSize()
    folder = Path(folder)
    cfg = _read_json(folder / "config.json") or {}
    dtype, nbytes = config_dtype(cfg)
    quant = cfg.get("quantization_config") or _text_config(cfg).get("quantization_config")
    quantized = bool(quant)
    estimate = config_estimate(cfg)
    total = weight_bytes = None
    total_source = bytes_source = ""
    passed: list[str] = []
    indexes = sorted(folder.glob("*.safetensors.index.json"))
    for index in indexes:
        meta = (_read_json(index) or {}).get("metadata")
        if not isinstance(meta, Mapping):
            passed.append(f"{index.name} unreadable or without metadata")
            continue
        if isinstance(meta.get("total_size"), (int, float)) and meta["total_size"] > 0:
            weight_bytes, bytes_source = int(meta["total_size"]), f"{index.name} metadata.total_size"
        if isinstance(meta.get("total_parameters"), (int, float)) and meta["total_parameters"] > 0:
            total, total_source = int(meta["total_parameters"]), f"{index.name} metadata.total_parameters"
        elif weight_bytes and not quantized:
            total = weight_bytes // nbytes
            total_source = f"{index.name} metadata.total_size {weight_bytes:,} bytes / {nbytes} ({dtype})"
        break
    shards = sorted(p for p in folder.glob("*.safetensors") if p.is_file())
    if weight_bytes is None and shards:
        weight_bytes = sum(p.stat().st_size for p in shards)
        bytes_source = f"{len(shards)} safetensors file(s) on disk"
    if total is None and shards and not quantized:
        counted = 0
        for p in shards:
            try:
                counted += safetensors_header_params(p)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                passed.append(f"the safetensors header of {p.name} unreadable ({str(exc)[:120]})")
                break
        else:
            total, total_source = counted, f"the safetensors headers of {len(shards)} file(s)"
    if total is None and estimate is not None:
        total, total_source = estimate[0], estimate[2]
    if total is not None and passed:
        total_source += f"; passed over: {', '.join(passed)}"
    active, active_source = total, "dense: its total" if total is not None else ""
    if estimate is not None and estimate[1] < estimate[0]:  # a mixture of experts: the share a token computes with
        active, active_source = estimate[1], estimate[2]
    if quantized and total is not None:
        method = quant.get("quant_method") if isinstance(quant, Mapping) else None
        total_source += f" (quantized: {method or 'quantization_config'})"
    return ModelSize(total, total_source, active, active_source, weight_bytes, bytes_source, nbytes, dtype)


def weights(model: ModelSpec, size: ModelSize | None = None) -> tuple[float | None, str]:
    """The model's weights in GB and where the figure came from (the order of the module's docstring); ``size``:
    what its files say (:func:`read_size`; None or empty before they are on this machine).

    >>> from thinkprobe.generate.modelspec import ModelSpec
    >>> moe = ModelSpec.from_config("m", {"backend": "vllm", "params_b": 5.1, "total_params_b": 117})
    >>> weights(moe)
    (234.0, 'models.m.total_params_b x 2 bytes')
    >>> weights(ModelSpec.from_config("m", {"backend": "vllm", "params_b": 14}))
    (28.0, 'models.m.params_b x 2 bytes')
    >>> weights(moe, ModelSize(weight_bytes=65_000_000_000,
    ...         bytes_source="model.safetensors.index.json metadata.total_size"))
    (65.0, 'model.safetensors.index.json metadata.total_size')
    """
    name = model.name
    size = size or ModelSize()
    if model.weights_gb:
        return float(model.weights_gb), f"models.{name}.weights_gb"
    if size.weight_bytes:
        return size.weight_bytes / 1e9, size.bytes_source
    if str(model.path or "") in BUILTIN_WEIGHTS_GB:
        return BUILTIN_WEIGHTS_GB[str(model.path)], "the built-in model's safetensors"
    if size.total:
        return size.total * size.dtype_bytes / 1e9, f"total parameters ({size.total_source}) x {size.dtype_bytes} bytes"
    for key, value in (("total_params_b", model.total_params_b), ("params_b", model.params_b)):
        if value:
            return float(value) * BF16_BYTES, f"models.{name}.{key} x {BF16_BYTES} bytes"
    return None, "unknown"


def active_params_b(model: ModelSpec, size: ModelSize | None = None) -> tuple[float | None, str]:
    """Active parameters in billions (the planner's throughput class) and their witness: ``models.<m>.params_b``
    as stated, a built-in's size, else the model's files (:func:`read_size`)."""
    name = model.name
    if model.params_b:
        return float(model.params_b), f"models.{name}.params_b"
    if str(model.path or "") in BUILTIN_PARAMS_B:
        return BUILTIN_PARAMS_B[str(model.path)], "the built-in model"
    if size is not None and size.active:
        return size.active / 1e9, size.active_source
    return None, "unknown: the medium size class"
