"""Segmentation agreement between two segmentations of the same trace (ThinkProbe paper, Appendix H).

Two segmentations are compared as boundary decisions over one common sequence of sentences. A
:class:`Segmentation` holds ``n`` sentences and the set of sentence indices ``b`` (``1 <= b <= n - 1``) at
which a new segment starts; equivalently a 0/1 vector over the ``n - 1`` gaps between consecutive
sentences (gap ``j`` lies between sentences ``j`` and ``j + 1``; a boundary ``b`` sets gap ``b - 1``).

Scores (``ref`` is the reference segmentation, ``hyp`` the one evaluated; all but Pk/WindowDiff's default
window are symmetric in the two):

Boundary precision / recall / F1 at a +-t sentence tolerance
    Boundaries are matched one to one, a hypothesis boundary ``h`` matching a reference boundary ``r`` when
    ``|h - r| <= t``; the matching is a maximum one (greedy in sentence order, which is optimal for points
    on a line with a fixed window). ``P = TP / |hyp|``, ``R = TP / |ref|``, ``F1 = 2PR / (P + R)``. The
    paper's primary metric is F1 at ``t = 2`` (App. H.2); its "boundary recovery" (Fig. 9) is ``R``.
    Readings where the paper is silent: with no boundaries on either side P = R = F1 = 1; with none on one
    side only, the undefined ratio is 0 (nothing proposed, or nothing to recover, is not agreement).
Pk (Beeferman, Berger and Lafferty 1999)
    Slide a probe of width ``k`` over the sentences: for each ``i`` in ``0 .. n-k-1``, do sentences ``i``
    and ``i + k`` lie in the same segment in ``ref`` and in ``hyp``? ``Pk`` is the share of the ``n - k``
    probes on which the two disagree: ``Pk = 1/(n-k) sum_i [any(r[i:i+k]) != any(h[i:i+k])]``, with ``r``,
    ``h`` the gap vectors. Lower is better; 0 is identical segmentation.
WindowDiff (Pevzner and Hearst 2002)
    ``WD = 1/(n-k) sum_i [ sum(r[i:i+k]) != sum(h[i:i+k]) ]``: also counts windows where both have a
    boundary but not the same number. Lower is better.
    Both use ``k`` = half the mean reference segment length in sentences, ``round(n / (2 (|ref| + 1)))``
    rounded half up, at least 1 (Beeferman's and Pevzner-Hearst's convention), clipped to ``n - 1``; a
    trace of fewer than 2 sentences has no probe and scores NaN. These are the formulas of
    ``nltk.metrics.segmentation.pk``/``windowdiff`` applied to the gap strings (tested against NLTK).
Cohen's kappa over the gap decisions
    Each of the ``n - 1`` gaps is a binary decision (boundary or not) by both sides:
    ``kappa = (p_o - p_e) / (1 - p_e)``, ``p_o`` the share of gaps on which they agree,
    ``p_e = p_a p_b + (1 - p_a)(1 - p_b)`` with ``p_a``, ``p_b`` the two boundary rates. NaN when
    ``p_e = 1`` (both sides constant and equal: agreement by construction, kappa undefined; as
    scikit-learn's ``cohen_kappa_score``).

The common sentence sequence of a text (:func:`sentence_atoms`) is every line of the text cut into
sentences by :func:`thinkprobe.segmentation.split_sentences`: a line break always separates two sentences,
so a header or list item without final punctuation is its own sentence, and every thinkprobe Thought Unit
(which starts at a line or sentence start) begins exactly at a sentence. Segments given as texts are
located in the trace by their characters (:func:`align_segments`: whitespace-insensitive, in order); a
segment starting inside a sentence is snapped to the nearer sentence start, and a segment that cannot be
found is counted in ``unaligned`` and contributes no boundary.

The LLM step labels of the steering-thinking-llms corpus (``annotated_response``) mark each step as
``["label"] text ["end-section"]`` (label spellings vary: ``[label]``, ``["1. label"]``); steps are the
pieces between ``["end-section"]`` markers (:func:`parse_step_labels`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..segmentation import split_sentences

__all__ = [
    "Segmentation", "boundary_prf", "pk", "window_diff", "default_window", "boundary_kappa", "agreement",
    "sentence_atoms", "align_segments", "segmentation_from_starts", "segmentation_from_texts",
    "compare_segment_texts", "read_segment_file", "parse_step_labels", "agreement_table", "agreement_summary",
]

SCORES = ("precision", "recall", "f1", "pk", "windowdiff", "kappa")


@dataclass(frozen=True)
class Segmentation:
    """``n`` sentences cut into segments; ``boundaries`` are the sentence indices where a segment starts.

    >>> s = Segmentation.from_masses([2, 3, 1])
    >>> s.n, sorted(s.boundaries), s.masses(), s.gaps().tolist()
    (6, [2, 5], [2, 3, 1], [0, 1, 0, 0, 1])
    """

    n: int
    boundaries: frozenset[int]

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError(f"number of sentences must be >= 0, got {self.n}")
        bad = [b for b in self.boundaries if not 1 <= b <= self.n - 1]
        if bad:
            raise ValueError(f"boundaries must lie in 1..{self.n - 1} for {self.n} sentences, got {sorted(bad)}")
        object.__setattr__(self, "boundaries", frozenset(int(b) for b in self.boundaries))

    @classmethod
    def from_boundaries(cls, n: int, boundaries: Iterable[int]) -> "Segmentation":
        return cls(n, frozenset(boundaries))

    @classmethod
    def from_masses(cls, masses: Sequence[int]) -> "Segmentation":
        """From segment lengths in sentences (every mass >= 1)."""
        if any(m < 1 for m in masses):
            raise ValueError(f"segment masses must be >= 1, got {list(masses)}")
        pos = np.cumsum(masses)
        return cls(int(pos[-1]) if len(pos) else 0, frozenset(int(p) for p in pos[:-1]))

    def masses(self) -> list[int]:
        if self.n == 0:
            return []
        cuts = [0, *sorted(self.boundaries), self.n]
        return [b - a for a, b in zip(cuts, cuts[1:])]

    def gaps(self) -> np.ndarray:
        g = np.zeros(max(self.n - 1, 0), dtype=np.int8)
        for b in self.boundaries:
            g[b - 1] = 1
        return g


def _check_same_length(ref: Segmentation, hyp: Segmentation) -> None:
    if ref.n != hyp.n:
        raise ValueError(f"segmentations cover different numbers of sentences: {ref.n} and {hyp.n}")


def boundary_prf(ref: Segmentation, hyp: Segmentation, tolerance: int = 2) -> tuple[float, float, float]:
    """Boundary precision, recall and F1 with one-to-one matching within ``tolerance`` sentences.

    >>> ref = Segmentation.from_boundaries(10, [3, 7])
    >>> boundary_prf(ref, Segmentation.from_boundaries(10, [4, 9]), tolerance=1)
    (0.5, 0.5, 0.5)
    """
    _check_same_length(ref, hyp)
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    r, h = sorted(ref.boundaries), sorted(hyp.boundaries)
    if not r and not h:
        return 1.0, 1.0, 1.0
    tp, j = 0, 0
    for b in r:
        while j < len(h) and h[j] < b - tolerance:
            j += 1
        if j < len(h) and h[j] <= b + tolerance:
            tp += 1
            j += 1
    p = tp / len(h) if h else 0.0
    rec = tp / len(r) if r else 0.0
    f1 = 2 * p * rec / (p + rec) if p + rec > 0 else 0.0
    return p, rec, f1


def default_window(ref: Segmentation) -> int:
    """Half the mean reference segment length in sentences, rounded half up, at least 1."""
    mean = ref.n / (len(ref.boundaries) + 1) if ref.n else 0.0
    return max(1, math.floor(mean / 2 + 0.5))


def _window(ref: Segmentation, k: int | None) -> int | None:
    if ref.n < 2:
        return None
    k = default_window(ref) if k is None else int(k)
    if k < 1:
        raise ValueError(f"window k must be >= 1, got {k}")
    return min(k, ref.n - 1)


def _window_sums(g: np.ndarray, k: int) -> np.ndarray:
    c = np.concatenate([[0], np.cumsum(g, dtype=np.int64)])
    return c[k:] - c[:-k]


def pk(ref: Segmentation, hyp: Segmentation, k: int | None = None) -> float:
    """Beeferman's Pk (lower is better); ``k`` defaults to :func:`default_window` of ``ref``.

    >>> pk(Segmentation.from_masses([3, 3]), Segmentation.from_masses([2, 4]), k=2)
    0.5
    """
    _check_same_length(ref, hyp)
    k = _window(ref, k)
    if k is None:
        return float("nan")
    r, h = _window_sums(ref.gaps(), k) > 0, _window_sums(hyp.gaps(), k) > 0
    return float(np.mean(r != h))


def window_diff(ref: Segmentation, hyp: Segmentation, k: int | None = None) -> float:
    """Pevzner and Hearst's WindowDiff (lower is better); ``k`` as in :func:`pk`.

    >>> ref, hyp = Segmentation.from_masses([3, 3]), Segmentation.from_masses([2, 1, 3])
    >>> window_diff(ref, hyp, k=2), pk(ref, hyp, k=2)
    (0.5, 0.25)
    """
    _check_same_length(ref, hyp)
    k = _window(ref, k)
    if k is None:
        return float("nan")
    return float(np.mean(_window_sums(ref.gaps(), k) != _window_sums(hyp.gaps(), k)))


def boundary_kappa(a: Segmentation, b: Segmentation) -> float:
    """Cohen's kappa of the two sides' boundary / no-boundary decisions over the ``n - 1`` gaps.

    >>> round(boundary_kappa(Segmentation.from_boundaries(5, [1, 3]), Segmentation.from_boundaries(5, [1])), 4)
    0.5
    """
    _check_same_length(a, b)
    x, y = a.gaps(), b.gaps()
    if len(x) == 0:
        return float("nan")
    po = float(np.mean(x == y))
    pa, pb = float(np.mean(x)), float(np.mean(y))
    pe = pa * pb + (1 - pa) * (1 - pb)
    if pe >= 1.0:
        return float("nan")
    return (po - pe) / (1 - pe)


def agreement(ref: Segmentation, hyp: Segmentation, tolerance: int = 2, k: int | None = None) -> dict[str, Any]:
    """Every score of ``hyp`` against ``ref``, with the sizes they were computed on."""
    p, r, f1 = boundary_prf(ref, hyp, tolerance)
    window = _window(ref, k)
    return {
        "n_sentences": ref.n, "n_ref_segments": len(ref.boundaries) + 1 if ref.n else 0,
        "n_hyp_segments": len(hyp.boundaries) + 1 if hyp.n else 0, "tolerance": tolerance,
        "k": window if window is not None else 0,
        "precision": p, "recall": r, "f1": f1,
        "pk": pk(ref, hyp, k), "windowdiff": window_diff(ref, hyp, k), "kappa": boundary_kappa(ref, hyp),
    }


# ------------------------------------------------------------------------------ texts -> sentences


def sentence_atoms(text: str) -> list[tuple[int, int]]:
    """The common sentence sequence of ``text``: each line cut by ``split_sentences`` (character offsets).

    >>> t = "## Plan\\nFirst idea. Second idea.\\n\\n- item"
    >>> [t[a:b] for a, b in sentence_atoms(t)]
    ['## Plan', 'First idea.', 'Second idea.', '- item']
    """
    out: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        end = pos + len(line)
        if line.strip():
            out.extend(split_sentences(text, pos, end))
        pos = end + 1
    return out


def _normalised(text: str) -> tuple[str, list[int]]:
    """``text`` with every whitespace run replaced by one space, and each kept character's original offset."""
    chars: list[str] = []
    where: list[int] = []
    space = True
    for i, c in enumerate(text):
        if c.isspace():
            if not space:
                chars.append(" ")
                where.append(i)
            space = True
        else:
            chars.append(c)
            where.append(i)
            space = False
    return "".join(chars), where


def align_segments(text: str, segments: Sequence[str], prefix_chars: int = 40) -> tuple[list[int], int]:
    """Start offsets in ``text`` of the segments found there, in order, and how many were not found.

    Matching ignores whitespace differences. Each segment is searched from the end of the previous match;
    when the whole segment is not found (an annotator's copy may differ slightly), its first
    ``prefix_chars`` characters are tried.

    >>> align_segments("A b.  C d.\\nE f.", ["A b.", "C  d.", "zzz", "E f."])
    ([0, 6, 11], 1)
    """
    norm, where = _normalised(text)
    starts: list[int] = []
    missing = 0
    cursor = 0
    for seg in segments:
        s = " ".join(seg.split())
        if not s:
            continue
        pos = norm.find(s, cursor)
        length = len(s)
        if pos < 0 and len(s) > prefix_chars:
            pos = norm.find(s[:prefix_chars], cursor)
            length = prefix_chars
        if pos < 0:
            missing += 1
            continue
        starts.append(where[pos])
        cursor = pos + length
    return starts, missing


def segmentation_from_starts(starts: Iterable[int], atoms: Sequence[tuple[int, int]]) -> Segmentation:
    """The sentence-level segmentation whose segments begin at the character offsets ``starts``.

    An offset inside a sentence snaps to the nearer of that sentence's start and the next one's (ties to
    the earlier); offsets before the first sentence or at it make no boundary.
    """
    n = len(atoms)
    firsts = [a for a, _ in atoms]
    bounds: set[int] = set()
    for s in starts:
        j = int(np.searchsorted(firsts, s, side="right")) - 1
        if j < 0:
            continue
        if firsts[j] != s and j + 1 < n and (firsts[j + 1] - s) < (s - firsts[j]):
            j += 1
        if 1 <= j <= n - 1:
            bounds.add(j)
    return Segmentation(n, frozenset(bounds))


def segmentation_from_texts(text: str, segments: Sequence[str],
                            atoms: Sequence[tuple[int, int]] | None = None) -> tuple[Segmentation, int]:
    """Align segment texts to ``text`` and return the sentence-level segmentation and the unaligned count."""
    atoms = sentence_atoms(text) if atoms is None else atoms
    starts, missing = align_segments(text, segments)
    return segmentation_from_starts(starts, atoms), missing


def compare_segment_texts(ref_segments: Sequence[str], hyp_segments: Sequence[str], tolerance: int = 2,
                          k: int | None = None, text: str | None = None) -> dict[str, Any]:
    """Scores of two segmentations given as lists of segment texts of the same trace.

    Without ``text``, the trace is the reference segments joined by blank lines (so every reference
    boundary is a sentence boundary), and the hypothesis segments are aligned to it.
    """
    ref_segments = [s for s in ref_segments if s.strip()]
    if text is None:
        text = "\n\n".join(s.strip() for s in ref_segments)
    atoms = sentence_atoms(text)
    ref, ref_missing = segmentation_from_texts(text, ref_segments, atoms)
    hyp, hyp_missing = segmentation_from_texts(text, hyp_segments, atoms)
    return {**agreement(ref, hyp, tolerance, k), "ref_unaligned": ref_missing, "hyp_unaligned": hyp_missing}


def read_segment_file(path: str | Path) -> list[str]:
    """Segments from a file: a JSON list of strings, or text with one segment per blank-line-separated block.

    Raises ``ValueError`` naming the file for a JSON file that is not a list of strings.
    """
    path = Path(path)
    raw = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json" or raw.lstrip().startswith("["):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc})") from exc
        if not isinstance(data, list) or not all(isinstance(s, str) for s in data):
            raise ValueError(f"{path}: expected a JSON list of segment strings")
        return [s for s in data if s.strip()]
    return [b.strip() for b in re.split(r"\n\s*\n", raw) if b.strip()]


# -------------------------------------------------------------------------- LLM step labels (corpus)

_END_SECTION = re.compile(r'\[\s*"?end-section"?\s*\]')
_LABEL = re.compile(r'^\s*\[\s*"?(?:\d+\.\s*)?([A-Za-z][A-Za-z_-]*)"?\s*\]\s*')


def parse_step_labels(annotated: str) -> list[tuple[str | None, str]]:
    """``(label, text)`` steps of an ``annotated_response``: the pieces between ``["end-section"]`` markers.

    >>> parse_step_labels('["initializing"] Okay. ["end-section"]\\n\\n[1. deduction]So x. ["end-section"]')
    [('initializing', 'Okay.'), ('deduction', 'So x.')]
    """
    steps = []
    for piece in _END_SECTION.split(annotated):
        m = _LABEL.match(piece)
        label = m.group(1) if m else None
        body = (piece[m.end():] if m else piece).strip()
        if body:
            steps.append((label, body))
    return steps


def _model_of(path: Path) -> str:
    stem = path.stem
    return stem.split("reasoning_comparison_", 1)[1] if stem.startswith("reasoning_comparison_") else stem


def _layer1(trace: Any, params: Any, lexicon: Any) -> Any:
    """Layer-1 spans of one trace (an object with ``spans``), or its :class:`~thinkprobe.traces.Exclusion`."""
    from types import SimpleNamespace

    from ..segmentation import segment
    from ..traces import Exclusion, validate_trace

    reason = validate_trace(trace, params.input)
    if reason:
        return Exclusion(trace.trace_id, reason, trace.source, "input")
    return SimpleNamespace(spans=segment(trace.text, params.segmentation, lexicon))


def agreement_table(paths: Sequence[str | Path], params: Any = None, encoder: Any = None, *, tolerance: int = 2,
                    k: int | None = None, limit: int | None = None) -> "pd.DataFrame":
    """Agreement of thinkprobe's Thought Units with the LLM step labels of steering-thinking-llms traces.

    For every record (``thinking_process`` = the reasoning, ``annotated_response`` = the labelled steps) of
    each ``reasoning_comparison_<model>.json`` file, the labelled steps are the reference and thinkprobe's
    TUs the hypothesis, twice: after layer 1 only (``segmentation = "layer1"``) and after layers 1 and 2
    (``"layer1+2"``, the pipeline's final TUs).

    Parameters
    ----------
    paths : files in the corpus format (a JSON list of records).
    params : :class:`thinkprobe.params.Params` (default: the paper's); ``encoder`` is needed by layer 2
        (default: :func:`thinkprobe.encoder.load_encoder` with ``params.encoder``).
    tolerance, k : boundary tolerance in sentences and the Pk/WindowDiff window (default: half the mean
        reference segment length).
    limit : first ``limit`` records of each file only.

    Returns
    -------
    pandas.DataFrame
        One row per trace and segmentation: ``model, record, trace_id, segmentation, status, reason,
        n_sentences, n_ref_segments, n_hyp_segments, ref_unaligned, tolerance, k, precision, recall, f1, pk,
        windowdiff, kappa``. A trace thinkprobe excludes (too short, ...) or that has no labelled step keeps
        its row with ``status = "excluded"``, the reason, and NaN scores.
    """
    import pandas as pd

    from ..lexicon import load_cues
    from ..params import Params
    from ..pipeline import segment_traces
    from ..traces import Exclusion, Trace

    params = params if params is not None else Params()
    if encoder is None:
        from ..encoder import load_encoder

        encoder = load_encoder(params.encoder)
    rows: list[dict[str, Any]] = []
    for path in map(Path, paths):
        records = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(records, list):
            raise ValueError(f"{path}: expected a JSON list of records")
        model = _model_of(path)
        records = records[:limit] if limit is not None else records
        traces, refs = [], []
        for i, rec in enumerate(records):
            text = rec.get("thinking_process") if isinstance(rec, Mapping) else None
            ann = rec.get("annotated_response") if isinstance(rec, Mapping) else None
            traces.append(Trace(f"{model}/{i}", text if isinstance(text, str) else "", model, str(i),
                                source=f"{path}:{i}"))
            refs.append([t for _, t in parse_step_labels(ann)] if isinstance(ann, str) else [])
        lexicon = load_cues(params.segmentation.cue_lexicon or None)
        layered = {"layer1": [_layer1(tr, params, lexicon) for tr in traces],
                   "layer1+2": segment_traces(traces, params, encoder, layer2=True)}
        for i, tr in enumerate(traces):
            atoms = sentence_atoms(tr.text)
            ref, missing = segmentation_from_texts(tr.text, refs[i], atoms)
            for name, results in layered.items():
                row: dict[str, Any] = {"model": model, "record": i, "trace_id": tr.trace_id, "segmentation": name,
                                       "ref_unaligned": missing}
                seg = results[i]
                reason = None
                if isinstance(seg, Exclusion):
                    reason = seg.reason
                elif not refs[i]:
                    reason = "no labelled steps"
                elif len(atoms) < 2:
                    reason = f"{len(atoms)} sentence(s)"
                if reason:
                    row.update(status="excluded", reason=reason, n_sentences=len(atoms),
                               **{s: float("nan") for s in SCORES})
                else:
                    hyp = segmentation_from_starts([s.start for s in seg.spans], atoms)
                    row.update(status="ok", reason="", **agreement(ref, hyp, tolerance, k))
                rows.append(row)
    cols = ["model", "record", "trace_id", "segmentation", "status", "reason", "n_sentences", "n_ref_segments",
            "n_hyp_segments", "ref_unaligned", "tolerance", "k", *SCORES]
    return pd.DataFrame(rows).reindex(columns=cols)


def agreement_summary(table: "pd.DataFrame", by: Sequence[str] = ("segmentation",)) -> "pd.DataFrame":
    """Mean and SD of every score over the ``ok`` rows of :func:`agreement_table`, per group (App. H, Table 16)."""
    ok = table[table["status"] == "ok"]
    agg = ok.groupby(list(by))[[*SCORES, "n_ref_segments", "n_hyp_segments"]].agg(["mean", "std"])
    agg.columns = [f"{a}_{b}" for a, b in agg.columns]
    agg.insert(0, "n_traces", ok.groupby(list(by)).size())
    return agg.reset_index()
