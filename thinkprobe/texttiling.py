"""Layer 2 of the extraction pipeline: TextTiling soft boundaries inside paragraphs.

Paper §3.4, "Layer 2", and Appendix D (Algorithm 1, lines 10-15): at each gap between sentences ``k-1``
and ``k`` of the trace, the similarity ``c_k = cos(mean(e[k-w:k]), mean(e[k:k+w]))`` compares the ``w =
3`` sentence embeddings on each side (blocks are cut at the trace's ends). A gap becomes a TU boundary when ``c_k`` is a
local minimum with prominence ``>= 0.15`` (prominence as in ``scipy.signal.find_peaks`` applied to ``-c``)
and ``c_k < tau``. Every TU that layer 2 opens gets the boundary class ``none`` (Algorithm 1, line 14:
"Insert NONE boundary"); no cue phrase is re-run on it.

Readings where the sections disagree, chosen so that layer 2 does what Appendix H.4 reports (about a
third of all boundaries are soft ``none`` boundaries from TextTiling):

* **The curve runs over the whole trace.** Algorithm 1 encodes "all sentences" and slides the window over
  them; §3.4 speaks of subdividing long ``none`` spans. We compute ``c_k`` over the trace's full sentence
  sequence (windows cross span boundaries, so a 3-sentence paragraph has the context it needs), and a
  qualifying valley becomes a new boundary only where it falls strictly inside a paragraph (a valley at
  an existing boundary adds nothing). Tiling span by span, as the §3.4 wording suggests, gave 0.3 soft
  boundaries per R1-distill trace (2% of boundaries): their paragraphs have 2-5 sentences, too few for a
  window of 3 on each side.
* **Which paragraphs may be split** is ``texttiling.scope``. ``paragraphs`` (default): Algorithm 1 inserts
  a NONE boundary at every qualifying minimum, so a paragraph that opens with a cue phrase is split too and
  keeps its class on its first part only. ``none_spans``: §3.4's "long none-class spans" only. On 100
  R1-distill traces the soft share of all boundaries is 19% with ``paragraphs`` and 12% with ``none_spans``
  (App. H.4: 32%). Headers (with the span they absorbed) and list items are never split: the paper makes
  each of them one TU.
* **tau compares like with like.** §3.4 sets ``tau`` to the 30th percentile of "within-trace
  inter-sentence cosine similarities", Algorithm 1 (line 13) to that of "within-trace similarities" right
  after computing the block similarities. ``tau`` is the 30th percentile of the block similarities
  ``c_k`` of the trace. Single consecutive-sentence cosines are on a lower, noisier scale than 3-sentence
  block means: their P30 lay below nearly every block minimum, and layer 2 made 1 boundary in 430
  sentences.
* **Width 3 is the half-window** (TextTiling's block size), not a whole window centred on a sentence
  (one sentence on each side), though that reading would match §3.4's single-sentence tau. Measured: the
  centred reading makes 30% of R1-distill boundaries soft, but single-sentence cosines are so noisy that
  it also cuts a clean six-sentence paragraph on one topic at an off-topic-sounding sentence
  (``tests/test_fidelity.py``, two topics of six sentences: two soft boundaries instead of one).

Readings where the paper is silent: a paragraph is split only when it has at least
``min_sentences`` (default 2) sentences; a paragraph with no valley that is still longer than
``max_tu_sentences`` (ours, default 24) sentences is cut into equal parts of at most that many, so that a
degenerate loop (one sentence repeated 2,000 times: a flat curve, no valley) becomes many identical TUs
and scores the redundancy it has, not one TU with RR = 0.
"""

from __future__ import annotations

import numpy as np


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


def trace_threshold(similarities: np.ndarray, percentile: float) -> float:
    """``tau``: the given percentile of a trace's block similarities ``c_k``; ``-inf`` when it has none.

    >>> trace_threshold(gap_similarities(np.eye(2)[[0, 0, 1, 1]], 1), 50)  # c = [1, 0, 1]
    1.0
    """
    c = np.asarray(similarities)
    return float(np.percentile(c, percentile)) if c.size else float("-inf")


def even_cuts(n: int, max_len: int) -> list[int]:
    """Cut points splitting ``n`` sentences into the fewest near-equal parts of at most ``max_len``.

    >>> even_cuts(10, 4), even_cuts(4, 4)
    ([3, 6], [])
    """
    parts = -(-n // max_len) if max_len > 0 else 1
    return [i * n // parts for i in range(1, parts)] if parts > 1 else []
