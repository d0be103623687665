"""Shared fixtures: the real encoder, the corpus beside the checkout, and small helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("THINKPROBE_CORPUS", REPO.parent / "shared" / "corpus"))


def corpus_path(*parts: str) -> Path:
    """A path inside ../shared/corpus, or skip the test saying what is missing."""
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real-trace corpus not available: {path} is absent "
                    "(set THINKPROBE_CORPUS to a checkout of the shared corpus to run this test)")
    return path


@pytest.fixture(scope="session")
def encoder():
    """The real all-MiniLM-L6-v2 encoder from the packaged weights (ONNX backend), loaded once."""
    from thinkprobe.encoder import load_encoder

    return load_encoder()


@pytest.fixture(scope="session")
def params():
    from thinkprobe.params import Params

    return Params()
