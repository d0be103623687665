"""Segmentation agreement: hand-worked values, NLTK / scikit-learn cross-checks, alignment, CLI, real corpus."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from thinkprobe.cli import main
from thinkprobe.segmentation import segment
from thinkprobe.stats.agreement import (
    Segmentation, agreement, agreement_summary, agreement_table, align_segments, boundary_kappa, boundary_prf,
    compare_segment_texts, default_window, parse_step_labels, pk, read_segment_file, segmentation_from_starts,
    segmentation_from_texts, sentence_atoms, window_diff,
)

from .conftest import corpus_path, require

# Worked by hand (see the comments): 10 sentences, reference boundaries before sentences 3 and 7,
# hypothesis before 4 and 9. Gap vectors r = 001000100, h = 000100001.
REF = Segmentation.from_boundaries(10, [3, 7])
HYP = Segmentation.from_boundaries(10, [4, 9])


@pytest.mark.fast
def test_boundary_prf_by_hand():
    assert boundary_prf(REF, HYP, tolerance=0) == (0.0, 0.0, 0.0)
    assert boundary_prf(REF, HYP, tolerance=1) == (0.5, 0.5, 0.5)      # 3~4 matches; 7 vs 9 is 2 away
    assert boundary_prf(REF, HYP, tolerance=2) == (1.0, 1.0, 1.0)
    # one-to-one: a reference boundary absorbs one hypothesis boundary only
    p, r, f = boundary_prf(Segmentation.from_boundaries(10, [5]), Segmentation.from_boundaries(10, [4, 6]), 1)
    assert (p, r) == (0.5, 1.0) and f == pytest.approx(2 / 3)
    # greedy order must not steal: ref 3, 4 vs hyp 2, 5 at t=1 -> both match (3-2, 4-5)
    assert boundary_prf(Segmentation.from_boundaries(8, [3, 4]), Segmentation.from_boundaries(8, [2, 5]), 1) == (
        1.0, 1.0, 1.0)
    empty = Segmentation.from_boundaries(10, [])
    assert boundary_prf(empty, empty) == (1.0, 1.0, 1.0)
    assert boundary_prf(REF, empty) == (0.0, 0.0, 0.0)


@pytest.mark.fast
def test_pk_windowdiff_kappa_by_hand():
    # mean reference segment = 10/3 sentences; half = 1.67 -> k = 2
    assert default_window(REF) == 2
    # window sums over k=2 gaps, i = 0..7: ref 0 1 1 0 0 1 1 0 ; hyp 0 0 1 1 0 0 0 1
    # presence differs at i = 1, 3, 5, 6, 7 -> 5/8 for Pk; counts differ at the same windows -> 5/8 for WD
    assert pk(REF, HYP) == 0.625
    assert window_diff(REF, HYP) == 0.625
    # 9 gaps, agreement on 5; p_a = p_b = 2/9; p_e = 4/81 + 49/81 = 53/81; kappa = (45-53)/(81-53) = -2/7
    assert boundary_kappa(REF, HYP) == pytest.approx(-2 / 7)
    # WindowDiff counts boundary numbers, Pk only presence: ref 3|3, hyp 2|1|3, k = 2
    ref, hyp = Segmentation.from_masses([3, 3]), Segmentation.from_masses([2, 1, 3])
    assert pk(ref, hyp, k=2) == 0.25 and window_diff(ref, hyp, k=2) == 0.5
    same = agreement(REF, REF)
    assert (same["f1"], same["pk"], same["windowdiff"], same["kappa"]) == (1.0, 0.0, 0.0, 1.0)
    assert same["n_ref_segments"] == 3 and same["k"] == 2


@pytest.mark.fast
def test_degenerate_inputs():
    one = Segmentation.from_masses([1])
    assert math.isnan(pk(one, one)) and math.isnan(window_diff(one, one)) and math.isnan(boundary_kappa(one, one))
    flat = Segmentation.from_boundaries(5, [])
    assert math.isnan(boundary_kappa(flat, flat))      # both constant: kappa undefined
    assert pk(flat, flat) == 0.0
    with pytest.raises(ValueError, match="different numbers of sentences"):
        pk(REF, flat)
    with pytest.raises(ValueError, match="boundaries must lie in 1..4"):
        Segmentation.from_boundaries(5, [5])
    # k larger than the trace is clipped to n - 1 (one probe over the whole trace)
    assert pk(Segmentation.from_boundaries(4, [2]), Segmentation.from_boundaries(4, []), k=10) == 1.0


def _gap_string(seg: Segmentation) -> str:
    return "".join(map(str, seg.gaps().tolist()))


@pytest.mark.fast
def test_pk_and_windowdiff_match_nltk():
    nltk_seg = require("nltk.metrics.segmentation", "nltk (dev extra) is not installed")
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(3, 60))
        a = Segmentation.from_boundaries(n, np.flatnonzero(rng.random(n - 1) < rng.uniform(0.05, 0.5)) + 1)
        b = Segmentation.from_boundaries(n, np.flatnonzero(rng.random(n - 1) < rng.uniform(0.05, 0.5)) + 1)
        k = int(rng.integers(1, n - 1)) if n > 2 else 1
        assert pk(a, b, k) == pytest.approx(nltk_seg.pk(_gap_string(a), _gap_string(b), k=k))
        assert window_diff(a, b, k) == pytest.approx(nltk_seg.windowdiff(_gap_string(a), _gap_string(b), k))


@pytest.mark.fast
def test_kappa_matches_scikit_learn():
    metrics = require("sklearn.metrics", "scikit-learn is not installed")
    rng = np.random.default_rng(3)
    for _ in range(100):
        n = int(rng.integers(5, 80))
        a = Segmentation.from_boundaries(n, np.flatnonzero(rng.random(n - 1) < 0.3) + 1)
        b = Segmentation.from_boundaries(n, np.flatnonzero(rng.random(n - 1) < 0.2) + 1)
        if a.gaps().any() or b.gaps().any():
            assert boundary_kappa(a, b) == pytest.approx(metrics.cohen_kappa_score(a.gaps(), b.gaps()))


# ------------------------------------------------------------------------------------------- texts

TRACE = ("Let me think about this. First, the cost matters.\n\n"
         "Wait, maybe I am wrong. Let me check the numbers again.\n"
         "- option one\n- option two\n\n"
         "So the answer is clear. It is option two.")


@pytest.mark.fast
def test_sentence_atoms_split_lines_and_sentences():
    atoms = [TRACE[a:b] for a, b in sentence_atoms(TRACE)]
    assert atoms == ["Let me think about this.", "First, the cost matters.", "Wait, maybe I am wrong.",
                     "Let me check the numbers again.", "- option one", "- option two", "So the answer is clear.",
                     "It is option two."]


@pytest.mark.fast
def test_alignment_ignores_whitespace_snaps_and_counts_unaligned():
    segs = ["Let me think about this.  First, the cost matters.", "Wait, maybe I am wrong.",
            "Let me check\nthe numbers again. - option one - option two", "this text is not in the trace",
            "So the answer is clear. It is option two."]
    seg, missing = segmentation_from_texts(TRACE, segs)
    assert missing == 1
    assert seg.n == 8 and sorted(seg.boundaries) == [2, 3, 6]
    starts, _ = align_segments(TRACE, ["maybe I am wrong."])
    assert TRACE[starts[0]:].startswith("maybe")
    atoms = sentence_atoms(TRACE)
    # "maybe" lies inside sentence 2 near its start -> snaps to 2; "wrong." near the end -> snaps to 3
    assert segmentation_from_starts([TRACE.index("maybe")], atoms).boundaries == {2}
    assert segmentation_from_starts([TRACE.index("wrong.")], atoms).boundaries == {3}


@pytest.mark.fast
def test_compare_segment_texts_and_files(tmp_path):
    ref = ["We start here. We go on.", "Now a new idea. It grows.", "Finally we stop."]
    hyp = ["We start here.", "We go on. Now a new idea. It grows. Finally we stop."]
    scores = compare_segment_texts(ref, hyp, tolerance=0)
    # sentences 0..4; ref boundaries {2, 4}; hyp {1}: no exact match
    assert (scores["n_sentences"], scores["precision"], scores["recall"]) == (5, 0.0, 0.0)
    assert compare_segment_texts(ref, hyp, tolerance=1)["recall"] == 0.5
    txt = tmp_path / "a.txt"
    txt.write_text("\n\n".join(ref) + "\n")
    js = tmp_path / "b.json"
    js.write_text(json.dumps(hyp))
    assert read_segment_file(txt) == ref and read_segment_file(js) == hyp
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}')
    with pytest.raises(ValueError, match="bad.json: expected a JSON list"):
        read_segment_file(bad)


@pytest.mark.fast
def test_cli_agree(tmp_path, capsys):
    a = tmp_path / "a.txt"
    a.write_text("We start here. We go on.\n\nNow a new idea. It grows.\n\nFinally we stop.\n")
    b = tmp_path / "b.json"
    b.write_text(json.dumps(["We start here. We go on.", "Now a new idea.", "It grows. Finally we stop."]))
    assert main(["agree", str(a), str(b), "--json", "--tolerance", "0"]) == 0
    out = json.loads(capsys.readouterr().out)
    # ref {2, 4}, hyp {2, 3}: one exact match; gaps r = 0101, h = 0110 -> p_o = 1/2, p_e = 1/2, kappa 0
    assert (out["precision"], out["recall"], out["kappa"], out["hyp_unaligned"]) == (0.5, 0.5, 0.0, 0)
    assert main(["agree", str(a), str(b)]) == 0
    assert "windowdiff" in capsys.readouterr().out
    assert main(["agree", str(a), str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err


@pytest.mark.fast
def test_parse_step_labels_formats():
    ann = ('["initializing"] Okay, so. ["end-section"]\n\n[deduction]First, x. ["end-section"] '
           '[2. adding-knowledge]I recall y.["end-section"]\n["1. backtracking"] Wait. ["end-section"]\n'
           'unlabelled tail. ["end-section"]')
    assert parse_step_labels(ann) == [("initializing", "Okay, so."), ("deduction", "First, x."),
                                      ("adding-knowledge", "I recall y."), ("backtracking", "Wait."),
                                      (None, "unlabelled tail.")]


# -------------------------------------------------------------------------------------- real corpus


@pytest.mark.slow
def test_agreement_with_llm_step_labels_on_real_traces(encoder, params):
    path = corpus_path("steering-thinking-llms", "compare-base-reasoning", "results", "vars",
                       "reasoning_comparison_deepseek-r1-distill-qwen-14b.json")
    table = agreement_table([path], params, encoder, limit=4)
    assert len(table) == 8 and set(table["segmentation"]) == {"layer1", "layer1+2"}
    ok = table[table["status"] == "ok"]
    assert len(ok) >= 6
    records = json.loads(path.read_text())
    for _, row in ok.iterrows():
        steps = parse_step_labels(records[row["record"]]["annotated_response"])
        assert row["ref_unaligned"] <= 0.1 * len(steps)
        # the labelled steps become reference segments (a few may snap onto the same sentence)
        assert 0.7 * len(steps) <= row["n_ref_segments"] <= len(steps) + 1
        for s in ("precision", "recall", "f1", "pk", "windowdiff"):
            assert 0.0 <= row[s] <= 1.0
    # thinkprobe's boundaries nearly always fall on a labelled step boundary (the labels are finer)
    assert ok["precision"].mean() >= 0.8
    # and far more often than chance: at exact positions (t = 0), the layer-1 TUs recomputed here beat a
    # random segmentation with the same number of boundaries on every trace
    rng = np.random.default_rng(0)
    for _, row in ok[ok["segmentation"] == "layer1"].iterrows():
        rec = records[row["record"]]
        text = rec["thinking_process"]
        atoms = sentence_atoms(text)
        ref, _ = segmentation_from_texts(text, [t for _, t in parse_step_labels(rec["annotated_response"])], atoms)
        hyp = segmentation_from_starts([s.start for s in segment(text, params.segmentation)], atoms)
        assert len(hyp.boundaries) + 1 == row["n_hyp_segments"]
        assert boundary_prf(ref, hyp, 2)[2] == pytest.approx(row["f1"])
        chance = [boundary_prf(ref, Segmentation.from_boundaries(
            ref.n, rng.choice(np.arange(1, ref.n), len(hyp.boundaries), replace=False)), 0)[2] for _ in range(50)]
        assert boundary_prf(ref, hyp, 0)[2] > np.mean(chance)
    summary = agreement_summary(table)
    assert list(summary["segmentation"]) == ["layer1", "layer1+2"]
    assert summary["f1_mean"].between(0, 1).all()
