"""Cue-phrase and hedge lexicons: plain data files a user can read and extend.

``lexicons/cues.tsv`` holds one ``<class> TAB <regex>`` per line for the layer-1 boundary classes
(meta, convergence, backtrack, contrast, support); ``lexicons/hedges.txt`` one regex per line for Hedging
Density. A user's own file is passed by path; its content hash goes into every output's provenance.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CUE_CLASSES = ("backtrack", "meta", "convergence", "contrast", "support")
# the packaged lexicons, read at run time: in the code hash of every rule whose code reaches this module
# (thinkprobe.codedeps); a user's own file is a param of its rule instead
CODE_DATA = ("lexicons/*.tsv", "lexicons/*.txt")

# Interjections and connectives that may precede a cue without changing it ("Hmm, wait", "Okay, so overall").
FILLER = re.compile(
    r"^[\W_]*(?:(?:hmm+|hm+|mm+|ok(?:ay)?|so|well|oh|ah+|um+|uh+|alright|all right|right|now|and|but|yeah|yes|then)"
    r"\b[\s,.;:!\-\u2013\u2014\u2026]*)+",
    re.IGNORECASE,
)


class LexiconError(ValueError):
    """A lexicon file is malformed; the message names the file and the line."""


@dataclass(frozen=True)
class CueLexicon:
    patterns: tuple[tuple[str, re.Pattern], ...]
    source: str
    sha256: str

    def classify(self, sentence: str) -> str:
        """The boundary class a first sentence announces, or ``"none"``.

        >>> load_cues().classify("Hmm, wait, that is wrong.")
        'backtrack'
        >>> load_cues().classify("The answer is 4.")
        'convergence'
        >>> load_cues().classify("Let us compute the sum.")
        'none'
        """
        head = sentence.lstrip()
        m = FILLER.match(head)
        candidates = (head, head[m.end():]) if m else (head,)
        best: tuple[int, int, str] | None = None
        for offset_rank, candidate in enumerate(candidates):
            for cls, pattern in self.patterns:
                if pattern.match(candidate):
                    key = (offset_rank, CUE_CLASSES.index(cls), cls)
                    if best is None or key < best:
                        best = key
            if best is not None:
                return best[2]
        return "none"

    def counts(self) -> dict[str, int]:
        out = {c: 0 for c in CUE_CLASSES}
        for cls, _ in self.patterns:
            out[cls] += 1
        return out


@dataclass(frozen=True)
class HedgeLexicon:
    pattern: re.Pattern
    source: str
    sha256: str

    def contains_hedge(self, text: str) -> bool:
        return self.pattern.search(text) is not None


def _read(source: str | Path | None, default_name: str) -> tuple[str, str]:
    if source is None:
        text = (Path(__file__).parent / "lexicons" / default_name).read_text("utf-8")
        return text, f"thinkprobe/lexicons/{default_name}"
    path = Path(source)
    try:
        return path.read_text("utf-8"), str(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise LexiconError(f"{path}: cannot read lexicon: {exc}") from exc


def _lines(text: str):
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            yield lineno, line.rstrip("\r\n")


def _word_bounded(pattern: str) -> str:
    return pattern + r"\b" if re.search(r"[A-Za-z0-9)?]$", pattern) else pattern


@lru_cache(maxsize=8)
def load_cues(source: str | None = None) -> CueLexicon:
    """Load and compile a cue lexicon (the packaged one when ``source`` is None)."""
    text, where = _read(source, "cues.tsv")
    patterns = []
    for lineno, line in _lines(text):
        parts = line.split("\t")
        if len(parts) != 2 or not parts[1].strip():
            raise LexiconError(f"{where}:{lineno}: expected '<class><TAB><pattern>', got {line!r}")
        cls, pat = parts[0].strip(), parts[1].strip()
        if cls not in CUE_CLASSES:
            raise LexiconError(f"{where}:{lineno}: unknown class {cls!r}; allowed: {', '.join(CUE_CLASSES)}")
        try:
            patterns.append((cls, re.compile(_word_bounded(pat), re.IGNORECASE)))
        except re.error as exc:
            raise LexiconError(f"{where}:{lineno}: invalid pattern {pat!r}: {exc}") from exc
    return CueLexicon(tuple(patterns), where, hashlib.sha256(text.encode()).hexdigest())


@lru_cache(maxsize=8)
def load_hedges(source: str | None = None) -> HedgeLexicon:
    """Load a hedge lexicon and compile it into one word-bounded alternation."""
    text, where = _read(source, "hedges.txt")
    pats = []
    for lineno, line in _lines(text):
        try:
            re.compile(line.strip())
        except re.error as exc:
            raise LexiconError(f"{where}:{lineno}: invalid pattern {line.strip()!r}: {exc}") from exc
        pats.append(line.strip())
    if not pats:
        raise LexiconError(f"{where}: the hedge lexicon has no patterns")
    pattern = re.compile(r"\b(?:" + "|".join(pats) + r")\b", re.IGNORECASE)
    return HedgeLexicon(pattern, where, hashlib.sha256(text.encode()).hexdigest())
