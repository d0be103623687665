"""Layer 2 of the extraction pipeline: TextTiling of long ``none`` spans with sentence embeddings.

Paper §3.4, "Layer 2": at each gap between sentences ``k-1`` and ``k`` of a span, the similarity
``c_k = cos(mean(e[k-w:k]), mean(e[k:k+w]))`` compares the ``w = 3`` sentences on each side (blocks are
cut at the span's ends). A gap becomes a TU boundary when ``c_k`` is a local minimum with prominence
``>= 0.15`` (prominence as in ``scipy.signal.find_peaks`` applied to ``-c``) and ``c_k < tau``, where
``tau`` is the 30th percentile of the trace's inter-sentence cosines ``cos(e_i, e_{i+1})``.

Reading where the paper is silent: the inter-sentence cosines that set ``tau`` are taken over the
consecutive sentence pairs of the spans being tiled (the sentences the layer encodes), never across a span
boundary; a span is "long" from ``min_sentences`` (default 6 = two full half-windows) sentences.
"""

from __future__ import annotations

import numpy as np


def consecutive_similarities(emb: np.ndarray) -> np.ndarray:
    """``cos(e_i, e_{i+1})`` for consecutive rows of L2-normalised embeddings."""
    if len(emb) < 2:
        return np.zeros(0, dtype=np.float32)
    return np.einsum("ij,ij->i", emb[:-1], emb[1:])


def gap_similarities(emb: np.ndarray, window: int) -> np.ndarray:
    """Block similarity ``c_k`` at every gap ``k = 1..m-1`` (returned at index ``k-1``)."""
    m = len(emb)
    if m < 2:
        return np.zeros(0, dtype=np.float32)
    csum = np.vstack([np.zeros((1, emb.shape[1]), dtype=np.float64), np.cumsum(emb, axis=0, dtype=np.float64)])
    k = np.arange(1, m)
    left = csum[k] - csum[np.maximum(0, k - window)]
    right = csum[np.minimum(m, k + window)] - csum[k]
    num = np.einsum("ij,ij->i", left, right)
    den = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


def local_maxima(y: np.ndarray) -> list[int]:
    """Indices of interior local maxima; a flat top counts once, at its middle (as scipy does)."""
    peaks: list[int] = []
    n = len(y)
    i = 1
    while i < n - 1:
        if y[i - 1] < y[i]:
            ahead = i + 1
            while ahead < n - 1 and y[ahead] == y[i]:
                ahead += 1
            if y[ahead] < y[i]:
                peaks.append((i + ahead - 1) // 2)
                i = ahead
                continue
        i += 1
    return peaks


def prominences(y: np.ndarray, peaks: list[int]) -> np.ndarray:
    """Topographic prominence of each peak: its height above the higher of its two bases."""
    out = np.empty(len(peaks))
    for n, p in enumerate(peaks):
        left_min = y[p]
        i = p
        while i >= 0 and y[i] <= y[p]:
            left_min = min(left_min, y[i])
            i -= 1
        right_min = y[p]
        i = p
        while i < len(y) and y[i] <= y[p]:
            right_min = min(right_min, y[i])
            i += 1
        out[n] = y[p] - max(left_min, right_min)
    return out


def boundaries(emb: np.ndarray, window: int, min_prominence: float, tau: float) -> list[int]:
    """Sentence indices ``k`` at which a new TU starts inside one span of sentence embeddings ``emb``."""
    c = gap_similarities(emb, window)
    if len(c) < 3:
        return []
    minima = local_maxima(-c)
    if not minima:
        return []
    prom = prominences(-c, minima)
    return [k + 1 for k, p in zip(minima, prom) if p >= min_prominence and c[k] < tau]


def trace_threshold(span_embeddings: list[np.ndarray], percentile: float) -> float:
    """``tau``: the given percentile of consecutive-sentence cosines pooled over the tiled spans."""
    sims = [consecutive_similarities(e) for e in span_embeddings]
    pooled = np.concatenate(sims) if sims else np.zeros(0)
    if pooled.size == 0:
        return float("-inf")
    return float(np.percentile(pooled, percentile))
