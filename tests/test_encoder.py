"""The sentence encoder: packaged MiniLM weights, ONNX against sentence-transformers, the cache, errors.

Everything runs the real model: the default ONNX encoder built from the packaged ``model.safetensors``,
and the real sentence-transformers library (torch, CPU) on the same folder as the reference.
"""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from thinkprobe.encoder import (Encoder, EncoderError, OnnxBackend, cache_dir, load_encoder, resolve_model,
                                weights_sha256)
from thinkprobe.params import EncoderParams

REPO = Path(__file__).resolve().parents[1]

QUICKSTART = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]

LONG = " ".join(
    f"Step {i}: the antidisestablishmentarian committee reconsidered proposal number {i * 37} in detail."
    for i in range(60))  # far more than 256 wordpieces

SENTENCES = [
    "", " ", "a", "?", "OK.",
    "The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium.",
    "Wait, that can't be right: 17 * 23 = 391, not 401.",
    "Let me step back and reconsider the whole approach.",
    "Therefore, the answer is (C).",
    "Hmm... maybe I should check the edge cases first?",
    "If x^2 + 3x - 4 = 0, then x = 1 or x = -4.",
    "The integral of sin(x) from 0 to pi equals 2.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Mitochondria are often called the powerhouse of the cell.",
    "A congestion charge reduces traffic but hits poorer commuters hardest.",
    "Light rail has higher capital costs than bus rapid transit.",
    "The defendant's prior conviction is inadmissible as character evidence.",
    "In his definition of terrorism, Valls defines violence broadly.",
    "ROYGBIV, ROYGBI_, _____",
    "PEACH, PLUM, PEAR, ...",
    "Antidote is to poison as umbrella is to rain.",
    "What's the probability of getting no pairs when dealt 5 cards?",
    "C(52,5) = 2,598,960 possible hands.",
    "def f(n):\n    return n * f(n - 1) if n else 1",
    "SELECT name FROM users WHERE age > 30 ORDER BY name;",
    "https://example.org/path?query=1&x=2",
    "e.g. i.e. etc. vs. cf. al.",
    "ALL CAPS SENTENCE ABOUT NOTHING IN PARTICULAR",
    "tab\tseparated\tvalues and\nnew\nlines",
    "    leading and trailing spaces    ",
    "Emoji test 😀🚀🎉 with text.",
    "Ünïcödé àccents: café, naïve, coöperate, façade.",
    "Straße und Fußgänger überqueren die Brücke.",
    "La bibliothèque de quartier devrait rester ouverte le samedi.",
    "¿Dónde está la estación de tren más cercana?",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "Η γρήγορη καφέ αλεπού πηδά πάνω από το τεμπέλικο σκυλί.",
    "这个问题是问一个小城市是否应该关闭公共图书馆分馆。",
    "综合来看，我认为不应该完全关闭分馆。",
    "東京は日本の首都です。",
    "ひらがなとカタカナの文章です。",
    "서울은 한국의 수도입니다.",
    "مرحبا بالعالم، هذا اختبار.",
    "שלום עולם, זה מבחן.",
    "नमस्ते दुनिया, यह एक परीक्षण है।",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "∑_{i=1}^{n} i = n(n+1)/2 ∀ n ∈ ℕ",
    "→ ← ↑ ↓ ⇒ ⇔ ≤ ≥ ≠ ≈",
    "\u200bzero\u200bwidth\u200bspaces",
    "repeated repeated repeated repeated repeated repeated repeated",
    "word " * 200,  # about 200 wordpieces, under the limit
    "x" * 1000,  # one very long unknown word
    "1234567890 " * 40,
    LONG,
    LONG + " And an extra tail that only a model without truncation would see.",
    "The last sentence of the varied set.",
    "Putting this together, I recommend congestion pricing with discounts for low incomes.",
    "Perhaps cleaner air matters more to them than revenue.",
]


@pytest.fixture(scope="module")
def st_encoder():
    """The real sentence-transformers library on the packaged folder (imports torch: several seconds)."""
    return load_encoder(EncoderParams(backend="sentence-transformers"))


@pytest.mark.fast
def test_packaged_weights_give_the_quickstart_similarities(encoder):
    assert encoder.encoder_id.split("|")[:2] == ["all-MiniLM-L6-v2", "onnx"]
    v = encoder.encode(QUICKSTART)
    assert v.shape == (3, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sim = v @ v.T
    # the sentence-transformers quickstart's printed similarities for all-MiniLM-L6-v2
    assert sim[0, 1] == pytest.approx(0.6660, abs=1e-3)
    assert sim[0, 2] == pytest.approx(0.1046, abs=1e-3)
    assert sim[1, 2] == pytest.approx(0.1411, abs=1e-3)


@pytest.mark.slow
def test_onnx_matches_sentence_transformers(encoder, st_encoder):
    assert len(SENTENCES) >= 60
    name, folder = resolve_model("all-MiniLM-L6-v2")
    assert folder is not None and (folder / "model.safetensors").exists()
    assert st_encoder.encoder_id.split("|")[1] == "sentence-transformers"
    # both backends run the same weights (the id carries the weights hash)
    assert st_encoder.encoder_id.split("|")[2] == encoder.encoder_id.split("|")[2]
    onnx_vecs = encoder.backend.encode(SENTENCES)
    st_vecs = st_encoder.backend.encode(SENTENCES)
    assert onnx_vecs.shape == st_vecs.shape == (len(SENTENCES), 384)
    diff = np.abs(onnx_vecs - st_vecs).max(axis=1)
    worst = int(np.argmax(diff))
    assert diff.max() < 1e-5, f"max abs difference {diff.max():.2e} on {SENTENCES[worst][:60]!r}"


@pytest.mark.slow
def test_long_text_is_truncated_like_sentence_transformers(encoder, st_encoder):
    tok = encoder.backend.tokenizer
    tok.no_truncation()
    try:
        n_pieces = len(tok.encode(LONG).ids)
    finally:
        tok.enable_truncation(256)
    assert n_pieces > 256
    a, b = encoder.backend.encode([LONG, LONG + " And an extra tail that only a model without truncation would see."])
    # past 256 wordpieces nothing is seen: the extra tail changes nothing
    np.testing.assert_allclose(a, b, atol=1e-6)
    # ... and the reference truncates at the same point
    ref = st_encoder.backend.encode([LONG])[0]
    assert np.abs(a - ref).max() < 1e-5


@pytest.mark.fast
def test_batch_composition_does_not_change_vectors(encoder):
    """Padding within a batch (texts are sorted by length and padded) must not leak into the vectors."""
    backend = encoder.backend
    together = backend.encode(SENTENCES)
    alone = np.stack([backend.encode([s])[0] for s in SENTENCES[:12]])
    np.testing.assert_allclose(together[:12], alone, atol=1e-5)
    assert backend.encode([]).shape == (0, 384)


@pytest.mark.fast
def test_each_distinct_text_is_encoded_once(encoder):
    fresh = Encoder(encoder.backend, "fresh-cache-test", record=True)
    texts = ["alpha beta", "gamma delta", "alpha beta", "epsilon", "gamma delta", "alpha beta", "zeta eta"]
    distinct = list(dict.fromkeys(texts))
    first = fresh.encode(texts)
    assert fresh.stats.encoded == len(distinct)
    assert fresh.recorded == distinct
    second = fresh.encode(texts + distinct)
    assert fresh.stats.encoded == len(distinct), "the second call must come entirely from the cache"
    assert fresh.stats.requested == 2 * len(texts) + len(distinct)
    np.testing.assert_array_equal(second[:len(texts)], first)
    # duplicates get identical rows, and the rows are the backend's own vectors
    for i, t in enumerate(texts):
        np.testing.assert_array_equal(first[i], first[texts.index(t)])
    np.testing.assert_allclose(first[[texts.index(t) for t in distinct]], encoder.backend.encode(distinct), atol=1e-6)
    assert fresh.encode([]).shape == (0, 384)


@pytest.mark.fast
def test_cache_overflow_keeps_every_requested_text(encoder):
    """When the cache is full, a call mixing cached and new texts must still return every row.

    (Found while reading Encoder.encode: on overflow the cache is cleared before the rows of the texts that
    were already cached have been read back.)
    """
    small = Encoder(encoder.backend, "small-cache-test", max_cache=3)
    first = small.encode(["one", "two", "three"])
    out = small.encode(["one", "four"])  # "one" is cached, "four" overflows the cache
    np.testing.assert_array_equal(out[0], first[0])
    np.testing.assert_allclose(out[1], encoder.backend.encode(["four"])[0], atol=1e-6)

@pytest.mark.fast
def test_cache_overflow_with_more_new_texts_than_the_cache_holds(encoder):
    small = Encoder(encoder.backend, "small-cache-test-2", max_cache=3)
    small.encode(["two"])
    many = [f"text number {i}" for i in range(5)]  # more new texts than the cache can hold at all
    out = small.encode(["two", *many])
    np.testing.assert_allclose(out, encoder.backend.encode(["two", *many]), atol=1e-6)


@pytest.mark.fast
def test_load_encoder_returns_one_object_per_process():
    assert load_encoder() is load_encoder()
    assert load_encoder(EncoderParams()) is load_encoder()


@pytest.mark.slow  # about 12 s (pytest --durations): out of the fast loop
def test_missing_local_model_names_it():
    with pytest.raises(EncoderError, match="/nonexistent/model"):
        load_encoder(EncoderParams(model="/nonexistent/model"))


@pytest.mark.slow
def test_unknown_hub_id_names_it(monkeypatch):
    # No network here: without offline mode the hub client retries for about a minute before failing
    # (see test_sentence_transformers_backend_never_contacts_the_hub), so force offline mode.
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(EncoderError, match="no-such-org/no-such-model"):
        load_encoder(EncoderParams(model="no-such-org/no-such-model", backend="sentence-transformers"))


@pytest.mark.fast
def test_onnx_backend_rejects_missing_and_non_bert_folders(tmp_path):
    with pytest.raises(EncoderError, match="/nonexistent/model"):
        load_encoder(EncoderParams(model="/nonexistent/model", backend="onnx"))
    not_a_model = tmp_path / "not-a-model"
    not_a_model.mkdir()
    (not_a_model / "README.md").write_text("nothing here")
    with pytest.raises(EncoderError, match="not-a-model"):
        load_encoder(EncoderParams(model=str(not_a_model), backend="onnx"))
    # a real sentence-transformers layout, but not BERT: the config says another architecture
    _, folder = resolve_model("all-MiniLM-L6-v2")
    other = tmp_path / "roberta-like"
    other.mkdir()
    for f in folder.iterdir():
        (other / f.name).symlink_to(f)
    (other / "config.json").unlink()
    (other / "config.json").write_text((folder / "config.json").read_text().replace('"bert"', '"roberta"'))
    with pytest.raises(EncoderError, match="roberta-like"):
        load_encoder(EncoderParams(model=str(other), backend="onnx"))
    # a file is not a model folder
    with pytest.raises(EncoderError, match="README.md"):
        load_encoder(EncoderParams(model=str(not_a_model / "README.md")))


@pytest.mark.fast
def test_onnx_graph_is_cached_and_reused(tmp_path, monkeypatch, encoder):
    monkeypatch.setenv("THINKPROBE_CACHE", str(tmp_path / "cache"))
    assert cache_dir() == tmp_path / "cache"
    _, folder = resolve_model("all-MiniLM-L6-v2")
    sha = weights_sha256(folder)
    assert sha == weights_sha256(folder)  # memoised under the cache dir
    assert list((tmp_path / "cache" / "sha256").iterdir())
    first = OnnxBackend(folder, sha, batch_size=16, max_seq_length=256)
    graphs = list((tmp_path / "cache" / "onnx").glob("*.onnx"))
    assert len(graphs) == 1 and graphs[0].stat().st_size > 10_000_000
    stamp = graphs[0].stat().st_mtime_ns
    second = OnnxBackend(folder, sha, batch_size=16, max_seq_length=256)
    assert list((tmp_path / "cache" / "onnx").glob("*.onnx")) == graphs
    assert graphs[0].stat().st_mtime_ns == stamp
    a, b = first.encode(QUICKSTART), second.encode(QUICKSTART)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, encoder.encode(QUICKSTART), atol=1e-6)


@pytest.mark.slow
def test_sentence_transformers_backend_never_contacts_the_hub(tmp_path):
    """The encoder's promise: "models are never downloaded at run time". A stand-in hub on localhost
    records every request; loading a hub id that is not cached must fail without asking it anything."""
    requests: list[str] = []

    class Hub(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            requests.append(f"{self.command} {self.path}")
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_HEAD = _answer

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
               "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0"}
        proc = subprocess.run(
            [sys.executable, "-m", "thinkprobe.cli", "analyze", str(REPO / "examples" / "trace.txt"),
             "--encoder", "no-such-org/no-such-model", "--encoder-backend", "sentence-transformers"],
            env=env, capture_output=True, text=True, timeout=300)
    finally:
        server.shutdown()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "no-such-org/no-such-model" in proc.stderr
    asked = [r for r in requests if "no-such-org" in r]
    assert not asked, f"the hub was asked {len(asked)} time(s), e.g. {asked[:3]}"
