"""Tokens and words, counted the same way everywhere (merging thresholds, AT, TPI, the input word minimum).

A token is a run of letters/digits, one CJK character, or one punctuation mark. This is model-agnostic
(traces come from models with different tokenizers) and language-agnostic enough that a Chinese trace is
not mistaken for an empty one. Words are tokens without punctuation.
"""

from __future__ import annotations

import re

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
TOKEN_RE = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")
WORD_RE = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")


def count_tokens(text: str) -> int:
    """Number of tokens in ``text`` (words, CJK characters and punctuation marks)."""
    return sum(1 for _ in TOKEN_RE.finditer(text))


def count_words(text: str) -> int:
    """Number of words in ``text`` (letter/digit runs and CJK characters)."""
    return sum(1 for _ in WORD_RE.finditer(text))
