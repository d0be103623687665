"""The learned function layer (``classification.typer: learned``; docs/validity.md, "Two typers").

The paper types a Thought Unit by a priority hierarchy of rules (§3.4, :func:`thinkprobe.graph.classify_nodes`).
Measured against LLM step labels (docs/validity.md) its rules 2-3 decide the metacognitive family worst: rule 2
makes any unit with an outgoing BACK arc a CRT, and BACK arcs come from similarity alone, so CRT covers a third
of the sentences; rule 3 needs a sentence-initial meta cue, so MET almost never fires. This layer replaces
rules 2-3 only: a multinomial logistic regression decides, for every unit, ``CRT``, ``MET`` or neither
(``""``: rules 4-9 then type it as the paper does); rule 1 (SYN), ``v0 -> HYP`` and the priority order stay
the paper's, and so do the edges and every metric definition (the 5D profile is computed from the node
types either typer gives).

A discriminative model on features the pipeline already has, no generative model at any stage (paper §1):

* the unit's sentence embedding (the encoder's, written by the segment jobs; 384 values for all-MiniLM-L6-v2);
* cue features from the packaged lexicons (:mod:`thinkprobe.lexicon`): the unit's final boundary class
  (one-hot), the share of its lines that open with a cue of each class, whether it holds a hedge;
* structure: an outgoing BACK or CRIT arc, an outgoing SYNT arc, an incoming BRCH edge, the unit's relative
  position in the trace and the log of its length in characters.

The artifact (``typers/metacognition.json`` in the package: standardisation, coefficients, intercepts, the
sha256 of the lexicons it was trained with, its training data's provenance and its held-out scores) is
written by ``scripts/train_typer.py`` (:mod:`thinkprobe.validity.typer_training`); it is package data read at
run time, so it is in the code hash of every rule that reaches this module (:data:`CODE_DATA`) and a
retrained artifact reruns the graph jobs. Prediction is numpy only (no scikit-learn at run time).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from .lexicon import CUE_CLASSES, load_cues, load_hedges
from .segmentation import BOUNDARY_CLASSES as BOUNDARIES  # the final boundary classes, one-hot features

CODE_DATA = ("typers/*.json",)  # the packaged artifact, read at run time (thinkprobe.codedeps)
ARTIFACT = Path(__file__).parent / "typers" / "metacognition.json"
FORMAT = "thinkprobe-learned-typer/1"
CLASSES = ("", "CRT", "MET")  # "" = neither: rules 4-9 decide
STRUCTURE = ("back_out", "synt_out", "brch_in", "position", "log_chars")


class TyperError(ValueError):
    """The learned typer's artifact is missing, malformed or does not fit the analysis (the message says why)."""


def feature_names(dim: int) -> list[str]:
    """The names of the feature columns for embeddings of ``dim`` values, in order."""
    return ([f"emb{k}" for k in range(dim)] + [f"boundary={b}" for b in BOUNDARIES]
            + [f"cue_share={c}" for c in CUE_CLASSES] + ["hedge"] + list(STRUCTURE))


def features(texts: list[str], boundaries: list[str], edges: list[tuple[int, int, str]], emb: np.ndarray) -> np.ndarray:
    """One row of features per Thought Unit (module docstring), ``[n, dim + 18]``."""
    n = len(texts)
    cues, hedges = load_cues(), load_hedges()
    cat = np.zeros((n, len(BOUNDARIES) + len(CUE_CLASSES) + 1 + len(STRUCTURE)))
    back_out, synt_out, brch_in = np.zeros(n), np.zeros(n), np.zeros(n)
    for u, v, t in edges:
        if t in ("BACK", "CRIT"):
            back_out[u] = 1
        elif t == "SYNT":
            synt_out[u] = 1
        elif t == "BRCH":
            brch_in[v] = 1
    nb, nc = len(BOUNDARIES), len(CUE_CLASSES)
    for i, (text, b) in enumerate(zip(texts, boundaries)):
        cat[i, BOUNDARIES.index(b)] = 1
        lines = [x for x in text.splitlines() if x.strip()] or [text]
        for line in lines:
            c = cues.classify(line)
            if c != "none":
                cat[i, nb + CUE_CLASSES.index(c)] += 1 / len(lines)
        cat[i, nb + nc] = float(hedges.contains_hedge(text))
        cat[i, nb + nc + 1:] = (back_out[i], synt_out[i], brch_in[i], i / max(n - 1, 1), np.log1p(len(text)))
    return np.hstack([np.asarray(emb, dtype=np.float64).reshape(n, -1), cat])


@dataclass(frozen=True)
class Artifact:
    classes: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # [classes, features]
    intercept: np.ndarray
    embedding_dim: int
    lexicons: dict
    source: str

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        z = ((x - self.mean) / self.scale) @ self.coef.T + self.intercept
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, x: np.ndarray) -> list[str]:
        if x.shape[0] == 0:
            return []
        return [self.classes[k] for k in np.argmax(self.probabilities(x), axis=1)]


def lexicon_hashes() -> dict[str, str]:
    """The sha256 of the packaged cue and hedge lexicons (the features depend on them)."""
    return {"cues": load_cues().sha256, "hedges": load_hedges().sha256}


@lru_cache(maxsize=4)
def load_artifact(path: str | None = None) -> Artifact:
    """The classifier in ``path`` (default: the packaged :data:`ARTIFACT`), checked against this module's features."""
    where = Path(path) if path else ARTIFACT
    try:
        raw = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TyperError(f"{where}: cannot read the learned typer: {exc}") from exc
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise TyperError(f"{where}: not a learned typer of format {FORMAT!r}")
    m = raw["model"]
    dim = int(m["embedding_dim"])
    names = feature_names(dim)
    if m["features"] != names or tuple(m["classes"]) != CLASSES:
        raise TyperError(f"{where}: its features or classes are not this version's ({len(names)} features, classes "
                         f"{CLASSES}); retrain it with scripts/train_typer.py")
    art = Artifact(CLASSES, np.asarray(m["mean"], float), np.asarray(m["scale"], float), np.asarray(m["coef"], float),
                   np.asarray(m["intercept"], float), dim, dict(m["lexicons"]), str(where))
    if art.coef.shape != (len(CLASSES), len(names)) or art.mean.shape != (len(names),):
        raise TyperError(f"{where}: coefficient shapes {art.coef.shape}, {art.mean.shape} do not fit {len(names)} features")
    return art


def artifact_sha256(path: str | None = None) -> str:
    return hashlib.sha256((Path(path) if path else ARTIFACT).read_bytes()).hexdigest()


def decide(texts: list[str], boundaries: list[str], edges: list[tuple[int, int, str]], emb: np.ndarray,
           artifact: Artifact | None = None) -> list[str]:
    """Per Thought Unit: ``"CRT"``, ``"MET"`` or ``""`` (rules 4-9 decide), in place of the paper's rules 2-3.

    Raises :class:`TyperError` when the embeddings are not the artifact's size (another encoder) or the
    packaged lexicons changed since it was trained (the cue features would not be the ones it learned).
    """
    art = artifact or load_artifact()
    emb = np.asarray(emb).reshape(len(texts), -1)
    if len(texts) and emb.shape[1] != art.embedding_dim:
        raise TyperError(f"the learned typer was trained on {art.embedding_dim}-value embeddings; these have "
                         f"{emb.shape[1]} (another encoder): use classification.typer: paper or retrain it")
    if art.lexicons != lexicon_hashes():
        raise TyperError(f"{art.source}: the packaged lexicons changed since the learned typer was trained; "
                         "retrain it with scripts/train_typer.py")
    return art.predict(features(texts, boundaries, edges, emb))
