"""Layer 1: structural blocks, sentence splitting, cue classes and the two merging rules."""

from __future__ import annotations

import pytest

from thinkprobe.lexicon import LexiconError, load_cues
from thinkprobe.params import SegmentationParams
from thinkprobe.segmentation import segment, split_sentences, structural_blocks

pytestmark = pytest.mark.fast


def texts(spans, text):
    return [text[s.start:s.end] for s in spans]


def test_sentence_splitting_respects_abbreviations_decimals_and_cjk():
    s = "Dr. Smith paid 3.50 dollars, i.e. a lot. Then he left! Did he? 是的。好"
    assert [s[a:b] for a, b in split_sentences(s)] == [
        "Dr. Smith paid 3.50 dollars, i.e. a lot.", "Then he left!", "Did he?", "是的。", "好"]


def test_headers_bold_lines_list_items_and_paragraphs():
    text = ("# Plan\n"
            "Intro sentence one. Intro two.\n\n"
            "**Key idea**\n"
            "- first item\n"
            "- second item that\n  continues here\n"
            "1. numbered item\n\n"
            "Para line one ends here.\n"
            "Next line starts upper so it is a new paragraph.\n"
            "but this lowercase line continues it")
    blocks = structural_blocks(text)
    assert [(b.kind, b.boundary) for b in blocks] == [
        ("header", "branch"), ("paragraph", "none"), ("header", "branch"), ("list_item", "none"),
        ("list_item", "none"), ("list_item", "none"), ("paragraph", "none"), ("paragraph", "none")]
    assert texts(blocks, text)[4] == "- second item that\n  continues here"
    assert texts(blocks, text)[7] == "Next line starts upper so it is a new paragraph.\nbut this lowercase line continues it"


def test_code_fence_is_not_parsed_as_headers_or_items():
    text = "Some code follows here.\n```\n# not a header\n- not an item\n```\nAfter the code."
    blocks = structural_blocks(text)
    assert len(blocks) == 1 and blocks[0].kind == "paragraph"


@pytest.mark.parametrize("sentence, cls", [
    ("Wait, that cannot be right.", "backtrack"),
    ("Hmm, wait. Let me redo it.", "backtrack"),
    ("But actually the sum is 5.", "backtrack"),
    ("On second thought, no.", "backtrack"),
    ("Let me step back and look at it.", "meta"),
    ("Okay, I'm going in circles here.", "meta"),
    ("Putting this together, the plan works.", "convergence"),
    ("So, in summary, both hold.", "convergence"),
    ("On the other hand, trains are faster.", "contrast"),
    ("However, costs rise.", "contrast"),
    ("Because the tax is flat, it is regressive.", "support"),
    ("For example, Oslo did this.", "support"),
    ("The bus is cheaper.", "none"),
    ("I waited for the bus.", "none"),  # 'wait' must be a word at the start, not inside another word
])
def test_cue_classes(sentence, cls):
    assert load_cues().classify(sentence) == cls


def test_lexicon_has_the_paper_pattern_counts():
    counts = load_cues().counts()
    assert counts["meta"] == 12 and counts["convergence"] == 16 and counts["backtrack"] == 12
    assert counts["contrast"] > 0 and counts["support"] > 0


def test_user_lexicon_file_and_errors(tmp_path):
    good = tmp_path / "cues.tsv"
    good.write_text("# mine\nbacktrack\tnope\n")
    lex = load_cues(str(good))
    assert lex.classify("Nope, wrong.") == "backtrack" and lex.classify("Wait, wrong.") == "none"
    bad = tmp_path / "bad.tsv"
    bad.write_text("backtrack\tok\nbranchy\tx\n")
    with pytest.raises(LexiconError, match=r"bad.tsv:2: unknown class 'branchy'"):
        load_cues(str(bad))
    broken = tmp_path / "broken.tsv"
    broken.write_text("meta\t(unclosed\n")
    with pytest.raises(LexiconError, match="broken.tsv:1: invalid pattern"):
        load_cues(str(broken))


def test_short_header_absorbs_following_span():
    text = "## Costs\n\nWait, buses are cheap. Trains are not."
    spans = segment(text)
    assert len(spans) == 1 and spans[0].boundary == "branch" and spans[0].kind == "header"
    assert texts(spans, text) == [text]


def test_long_header_does_not_absorb():
    header = "## " + " ".join(["word"] * 12)  # 2 '#' tokens + 12 words = 14 tokens
    text = header + "\n\nThe body has two sentences here. It is long enough to stand alone as a unit of thought."
    spans = segment(text)
    assert [s.kind for s in spans] == ["header", "paragraph"]


def test_short_none_span_merges_forward_into_next_none_span():
    long_para = ("This second paragraph has two sentences and enough tokens to stand alone. "
                 "It keeps going for a while so that it passes the thirty token threshold easily.")
    text = "Short one.\n\n" + long_para + "\n\nWait, that is wrong. Fix it."
    spans = segment(text)
    # "Short one." (1 sentence) merges into the next none paragraph; the backtrack span stays on its own
    assert [s.boundary for s in spans] == ["none", "backtrack"]
    assert texts(spans, text)[0] == "Short one.\n\n" + long_para
    assert len(spans[0].sentences) == 3


def test_short_span_before_a_cue_span_is_not_merged():
    text = "Short one.\n\nWait, that is wrong. Fix it."
    assert [s.boundary for s in segment(text)] == ["none", "backtrack"]


def test_list_items_stay_one_tu_each():
    text = "- a\n- b\n- c"
    spans = segment(text)
    assert [s.kind for s in spans] == ["list_item"] * 3


def test_merge_thresholds_are_parameters():
    text = "One sentence only here.\n\nAnother single sentence follows now."
    assert len(segment(text)) == 1  # both short: merged
    assert len(segment(text, SegmentationParams(min_span_sentences=1, min_span_tokens=0))) == 2
