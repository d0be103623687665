"""The ONNX graph of a BERT sentence encoder, built from its safetensors weights, and its on-disk cache.

:func:`build_onnx_bert` writes mean-pooled, L2-normalised BERT (absolute positions, erf GELU) as an ONNX
graph directly from a sentence-transformers folder: no torch, no export step, no download.
:func:`onnx_problem` says why a folder is another variant (the ``onnx`` backend then refuses it rather than
encode it wrongly). Built graphs are cached under :func:`cache_dir`, keyed on the weights' sha256
(:func:`weights_sha256`) and on the sha256 of this module's source (:func:`builder_sha256`): editing the
builder can never reuse a stale graph, and editing the encoder around it (batching, devices) does not
rebuild one. :mod:`thinkprobe.encoder` runs the graph with onnxruntime.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from .outputs import atomic_write_bytes


def cache_dir() -> Path:
    """Where built ONNX graphs are kept (``$THINKPROBE_CACHE`` or ``~/.cache/thinkprobe``)."""
    root = os.environ.get("THINKPROBE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "thinkprobe")
    return Path(root)


def onnx_problem(folder: Path) -> str | None:
    """Why the ONNX builder cannot reproduce the model in ``folder`` exactly, or None when it can."""
    try:
        cfg = json.loads((folder / "config.json").read_text())
        modules = json.loads((folder / "modules.json").read_text())
        types = [m["type"].rsplit(".", 1)[-1] for m in modules]
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return f"not a sentence-transformers folder with config.json, modules.json and 1_Pooling ({exc})"
    if cfg.get("model_type") != "bert":
        return f"model_type is {cfg.get('model_type')!r}, not 'bert'"
    if types[:2] != ["Transformer", "Pooling"]:
        return f"modules are {types}, not Transformer + Pooling"
    if pooling.get("pooling_mode_mean_tokens") is not True or any(
            pooling.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens")):
        return "pooling is not mean pooling alone"
    if cfg.get("hidden_act", "gelu") != "gelu":
        return f"hidden_act is {cfg.get('hidden_act')!r}; the ONNX graph implements only the erf GELU ('gelu')"
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        return (f"position_embedding_type is {cfg.get('position_embedding_type')!r}; the ONNX graph implements "
                "only absolute position embeddings")
    for name in ("model.safetensors", "tokenizer.json"):
        if not (folder / name).exists():
            return f"{name} is missing"
    return None


def _onnx_compatible(folder: Path) -> bool:
    return onnx_problem(folder) is None


def builder_sha256() -> str:
    """sha256 of this module's own source: part of the cache key of every built graph, so that any edit
    of the builder (or of what it relies on here) can never reuse a stale graph."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def cached_graph(folder: Path, sha256: str) -> str | bytes:
    """The ONNX graph of ``folder`` (weights hash ``sha256``): the cached file's path, built and cached on
    first use; the serialized graph itself when the cache cannot be written."""
    path = cache_dir() / "onnx" / f"{sha256[:24]}-b{builder_sha256()[:16]}.onnx"
    if path.exists():
        return str(path)
    data = build_onnx_bert(folder).SerializeToString()  # built once, whether or not the cache takes it
    _cache_write(path, data)
    return str(path) if path.exists() else data


def weights_sha256(folder: Path) -> str:
    """Content hash of a model folder's weights and config (memoised on disk by path, size and mtime)."""
    weights = folder / "model.safetensors"
    if not weights.exists():
        weights = next(iter(sorted(folder.glob("*.bin"))), folder / "config.json")
    st = weights.stat()
    memo_key = hashlib.sha1(f"{weights.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
    memo = cache_dir() / "sha256" / memo_key
    try:
        return memo.read_text().strip()
    except OSError:
        pass
    h = hashlib.sha256()
    with open(weights, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    cfg = folder / "config.json"
    if cfg.exists():
        h.update(cfg.read_bytes())
    digest = h.hexdigest()
    _cache_write(memo, digest.encode())
    return digest


def _cache_write(path: Path, data: bytes) -> None:
    try:
        atomic_write_bytes(path, data)
    except OSError:
        pass  # a read-only cache only costs speed


def build_onnx_bert(folder: Path):
    """An ONNX graph computing mean-pooled, L2-normalised BERT sentence embeddings from ``folder``'s weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    cfg = json.loads((folder / "config.json").read_text())
    w = load_file(str(folder / "model.safetensors"))
    w = {k.removeprefix("bert."): v for k, v in w.items()}
    hidden, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    head_dim = hidden // heads
    inits, nodes = [], []
    counter = [0]

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.array(arr, order="C"), name))
        return name

    def node(op, inputs, **attrs):
        counter[0] += 1
        out = f"t{counter[0]}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def layer_norm(x, prefix):
        const(prefix + "w", w[prefix + "weight"])
        const(prefix + "b", w[prefix + "bias"])
        return node("LayerNormalization", [x, prefix + "w", prefix + "b"], axis=-1, epsilon=eps)

    const("word_emb", w["embeddings.word_embeddings.weight"])
    const("pos_emb", w["embeddings.position_embeddings.weight"])
    const("type_emb0", w["embeddings.token_type_embeddings.weight"][0])
    const("i0", np.array([0], np.int64))
    const("i1", np.array([1], np.int64))
    const("i2", np.array([2], np.int64))
    const("qkv_shape", np.array([0, 0, 3, heads, head_dim], np.int64))
    const("ctx_shape", np.array([0, 0, hidden], np.int64))
    const("scale", np.array(1.0 / np.sqrt(head_dim), np.float32))
    const("half", np.array(0.5, np.float32))
    const("one", np.array(1.0, np.float32))
    const("inv_sqrt2", np.array(1.0 / np.sqrt(2.0), np.float32))
    const("neg_inf", np.array(np.finfo(np.float32).min, np.float32))
    const("eps_norm", np.array(1e-12, np.float32))
    const("eps_count", np.array(1e-9, np.float32))
    const("axes_1_2", np.array([1, 2], np.int64))
    const("axis_last", np.array([-1], np.int64))
    const("q_index", np.array(0, np.int64))
    const("k_index", np.array(1, np.int64))
    const("v_index", np.array(2, np.int64))

    seq_len = node("Slice", [node("Shape", ["input_ids"]), "i1", "i2"])
    positions = node("Slice", ["pos_emb", "i0", seq_len, "i0"])
    x = node("Add", [node("Add", [node("Gather", ["word_emb", "input_ids"]), positions]), "type_emb0"])
    x = layer_norm(x, "embeddings.LayerNorm.")
    mask = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    bias = node("Mul", [node("Sub", ["one", node("Unsqueeze", [mask, "axes_1_2"])]), "neg_inf"])
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        g = lambda k: w[p + k]  # noqa: E731
        const(p + "qkv_w", np.concatenate([g("attention.self.query.weight"), g("attention.self.key.weight"),
                                           g("attention.self.value.weight")], 0).T)
        const(p + "qkv_b", np.concatenate([g("attention.self.query.bias"), g("attention.self.key.bias"),
                                           g("attention.self.value.bias")]))
        qkv = node("Transpose", [node("Reshape", [node("Add", [node("MatMul", [x, p + "qkv_w"]), p + "qkv_b"]),
                                                  "qkv_shape"])], perm=[2, 0, 3, 1, 4])
        q = node("Gather", [qkv, "q_index"], axis=0)
        k = node("Gather", [qkv, "k_index"], axis=0)
        v = node("Gather", [qkv, "v_index"], axis=0)
        scores = node("Add", [node("Mul", [node("MatMul", [q, node("Transpose", [k], perm=[0, 1, 3, 2])]), "scale"]), bias])
        ctx = node("Reshape", [node("Transpose", [node("MatMul", [node("Softmax", [scores], axis=-1), v])],
                                    perm=[0, 2, 1, 3]), "ctx_shape"])
        const(p + "o_w", g("attention.output.dense.weight").T)
        const(p + "o_b", g("attention.output.dense.bias"))
        x = layer_norm(node("Add", [node("Add", [node("MatMul", [ctx, p + "o_w"]), p + "o_b"]), x]),
                       p + "attention.output.LayerNorm.")
        const(p + "i_w", g("intermediate.dense.weight").T)
        const(p + "i_b", g("intermediate.dense.bias"))
        h = node("Add", [node("MatMul", [x, p + "i_w"]), p + "i_b"])
        h = node("Mul", [node("Mul", [h, "half"]), node("Add", ["one", node("Erf", [node("Mul", [h, "inv_sqrt2"])])])])
        const(p + "out_w", g("output.dense.weight").T)
        const(p + "out_b", g("output.dense.bias"))
        x = layer_norm(node("Add", [node("Add", [node("MatMul", [h, p + "out_w"]), p + "out_b"]), x]),
                       p + "output.LayerNorm.")
    summed = node("ReduceSum", [node("Mul", [x, node("Unsqueeze", [mask, "axis_last"])]), "i1"], keepdims=0)
    mean = node("Div", [summed, node("Max", [node("ReduceSum", [mask, "i1"], keepdims=1), "eps_count"])])
    norm = node("Max", [node("ReduceL2", [mean], axes=[-1], keepdims=1), "eps_norm"])
    nodes.append(helper.make_node("Div", [mean, norm], ["embedding"]))
    graph = helper.make_graph(
        nodes, "sentence_embedding",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])], inits)
    return onnx.helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
