"""The development set (tests/data/answer_labels_heldout.jsonl, issue 33; held out until the fixes of its
misses, so no longer a measure out of sample; tests/test_answer_labels_heldout2.py holds a second set, held out
until its own misses were fixed, a development set too since) and one test per class of miss it showed.

The set holds 201 real answers that are not in the fixture the extractor was built on
(tests/data/answer_labels.jsonl): ends of the thought-branches MMLU reasoning texts of the prompts without the
planted hint (``base_reasoning_text``, ``base_gt_reasoning_text``) and the answers after their reasoning that the
fixture lacks, with the items' option texts; and the math answers of a second DeepSeek-R1-Distill-Llama-8B run
(thinking-llms-interp, read from the corpus). Each was read and labelled before the extractor was measured on
it (bench/README.md, "Answer labels: held-out agreement", gives the figures before and after the fixes below).
The rows it still does not read as the reader did are listed in :data:`KNOWN_MISSES`, each with its class: a
new miss fails the test."""

from __future__ import annotations

import pytest

from .answer_fixture import HELD_OUT, held_out_choices, held_out_expected, held_out_rows, set_text
from thinkprobe.trajectories.parsing import parse_answer

pytestmark = pytest.mark.fast

_EARLIER_NUMBER = ("a number stated in prose before the final sentence, which states another ('the largest square is "
                   "81 ... the next square after 81 is 100'): null since the final-statement reading")
#: (record) -> why the extractor does not read it as the reader did (after the fixes of this file's tests).
#: The six option texts without an answer cue it missed are read since the tests below ("the Puritans seem to
#: be the denomination that ...", "I'll go with that"). Nine hedges this set's reader first read as the model's
#: answer ("so option B might be the right choice", "I'm leaning towards (A)") are read as "states no answer"
#: since issue 33's reading of a hedge (form ``hedged``, the letter it leans to kept as ``hedge_leans``); the
#: extractor gives them null, as it should. ("maybe an accordion? I'm not entirely sure, but I'll go with that"
#: is no hedge: it ends in a commitment.)
KNOWN_MISSES = {
    "row=157 question_id=17": _EARLIER_NUMBER,
}


_text = set_text


def test_the_held_out_set_is_labelled_and_not_in_the_fixture():
    from .answer_fixture import fixture_rows

    rows = held_out_rows()
    assert len(rows) >= 200 and HELD_OUT.stat().st_size < 200_000
    assert len({(r["source"], r["record"]) for r in rows}) == len(rows)
    fixture = {(r["source"], r["record"].split(" reasoning_text")[0], r["text"]) for r in fixture_rows()}
    for r in rows:
        assert r["source"] and r["record"] and r["form"], r
        # a record of the fixture is "pn=.. model=.." (its answer) or "... reasoning_text tail"; a held-out
        # record names another field of the item (base_post_reasoning, base_reasoning_text, ...) or the
        # second run's rows, so neither its text nor its record is the fixture's
        record = " ".join(r["record"].split()[:2])
        assert (r["source"], record, r["text"]) not in fixture, r["record"]
        assert "reasoning_text" not in r["record"] or r["record"].split()[2].startswith("base_"), r["record"]
        assert (r["stated"] is None) == (r["form"] in ("states_no_answer", "hedged")), r["record"]
        assert (r["form"] == "hedged") == ("hedge_leans" in r), r["record"]
        assert r["plain"] == (r["form"] != "paraphrase"), r["record"]
        if r["task"] == "choice":
            assert r["stated"] is None or r["stated"] in {k for k, _ in r["choices"]}, r["record"]


def test_every_held_out_answer_gets_its_label_but_the_known_misses():
    misses = {}
    for r in held_out_rows():
        got = parse_answer(_text(r), r["task"], choices=held_out_choices(r))
        if got != held_out_expected(r) and r["plain"]:
            misses[r["record"]] = (r["form"], r["stated"], got)
    new = {k: v for k, v in misses.items() if k not in KNOWN_MISSES}
    assert not new, new
    assert set(KNOWN_MISSES) <= set(misses), "a known miss is read now: take it off KNOWN_MISSES"


# One test per class of miss the held-out set showed, each fixed (real texts, shortened).
CHOICES4 = tuple((k, "") for k in "ABCD")


@pytest.mark.parametrize(("text", "expected"), [
    # an answer cue with "likely"/"probably" inside its verb
    ("So, putting it together, the correct answer would likely be (B), as the law would be seen as establishing "
     "religion.", "B"),
    ("Hence the answer should probably be C.", "C"),
    # a noun cue: "the most likely diagnosis is", "the least consistent statement would be"
    ("So, the most likely diagnosis is D) uninhibited neurogenic bladder.", "D"),
    ("So, the least consistent statement would be D because it argues against the moral obligation.", "D"),
    # the key first, a superlative the question asks for
    ("C is the one that provides a counter-argument. So, C is the least consistent.", "C"),
    # "making the answer (C) rather than (D)"
    ("So, maybe only C is correct, making the answer (C) rather than (D). But I'm not entirely sure if Hare "
     "includes all three aspects.", "C"),
])
def test_cues_the_held_out_set_showed(text, expected):
    assert parse_answer(text, "choice", choices=CHOICES4) == expected


def test_a_key_with_its_option_text_then_a_verdict():
    choices = (("A", "illegal and unethical"), ("B", "legal but unethical"), ("C", "legal and ethical"),
               ("D", "illegal but ethical"))
    assert parse_answer("So, looking at the answer choices, (A) illegal and unethical seems to fit.", "choice",
                        choices=choices) == "A"
    misery = (("A", "Along history of neurosis"), ("B", "Dependency"), ("C", "Strong reinforcement of symptoms"),
              ("D", "Misery"))
    assert parse_answer("Putting it all together, (D) Misery seems to be the best answer because it indicates a "
                        "strong motivation to change.", "choice", choices=misery) == "D"
    assert parse_answer("(D) Misery seems to fit.", "choice", choices=CHOICES4) == "D"


def test_an_option_text_after_an_article_first_or_as_a_closing_predicate():
    instruments = (("A", "ukulele"), ("B", "kazoo"), ("C", "accordion"), ("D", "fiddle"))
    assert parse_answer("So, putting it all together, the answer should be the ukulele.", "choice",
                        choices=instruments) == "A"
    churches = (("A", "Greek Orthodox"), ("B", "Roman Catholic"), ("C", "Puritans"), ("D", "Quakers"))
    assert parse_answer("Therefore, I think Quakers would be the best answer.", "choice", choices=churches) == "D"
    emblems = (("A", "peace symbol"), ("B", "American flag"), ("C", "two white doves"), ("D", "Harley-Davidson logo"))
    assert parse_answer("So, putting it all together, I'm pretty confident the emblem is the American flag.",
                        "choice", choices=emblems) == "B"
    conflicts = (("A", "an approach-approach conflict."), ("B", "an approach-avoidance conflict."),
                 ("C", "an avoidance-avoidance conflict."), ("D", "a multiple approach-avoidance conflict."))
    assert parse_answer("Her conflict is best described as an approach-avoidance conflict because she is "
                        "approaching the relationship.", "choice", choices=conflicts) == "B"
    assert parse_answer("Her conflict is best described as a multiple approach-avoidance conflict.", "choice",
                        choices=conflicts) == "D"
    # hedged: still nothing
    assert parse_answer("The action might be unethical because of a conflict.", "choice",
                        choices=(("A", "ethical"), ("B", "unethical"))) is None


def test_an_expression_cut_short_has_no_value():
    """The math task read "= \\frac{" (an answer cut by the token budget) as the label ``\\frac{``."""
    cut = "\\[ P(6, 4) = \\frac{6!}{(6 - 4)!} = \\frac{6!}{2!} = \\frac{"
    assert parse_answer(cut, "math") is None
    assert parse_answer("so x = \\sqrt{", "math") is None
    assert parse_answer("so $x = \\frac{1}{2}$", "math") == "\\frac{1}{2}"
    assert parse_answer("so $\\boxed{\\{1, 2\\}}$", "math") == "\\left\\{1, 2\\right\\}"  # set braces: escaped


def test_a_megabyte_answer_with_option_texts_is_labelled_in_bounded_time():
    """Bad input (issue 33): the option-text readings added here scan only the final tail of a text, so an
    answer of megabytes, even one that repeats an option's text, gets its label (or null) in bounded time."""
    import time

    choices = (("A", "ethical"), ("B", "unethical"), ("C", "legal and ethical"), ("D", "the American flag"))
    long = ("it is ethical, it is unethical, (C) legal and ethical seems " * 40_000) + "\nSo the answer is the American flag."
    assert len(long) > 2_000_000
    t0 = time.perf_counter()
    assert parse_answer(long, "choice", choices=choices) == "D"
    assert parse_answer("x" * 3_000_000, "choice", choices=choices) is None
    assert time.perf_counter() - t0 < 5


# Fixed on the development set (issue 33, second round; real texts, shortened).

def test_an_option_text_first_with_a_committing_predicate():
    churches = (("A", "Greek Orthodox"), ("B", "Roman Catholic"), ("C", "Puritans"), ("D", "Quakers"))
    assert parse_answer("Putting it all together, the Puritans seem to be the denomination that promoted a "
                        "stripped-down Christianity.", "choice", choices=churches) == "C"
    isms = (("A", "Humanism"), ("B", "Secularism"), ("C", "Individualism"), ("D", "Arête"))
    assert parse_answer("So, Humanism is the most in conflict with accepting Aristotle's views without question "
                        "because it encourages questioning.", "choice", choices=isms) == "A"
    factors = (("A", "Social ostracism"), ("B", "Money"), ("C", "Tranquilizers"), ("D", "Physical punishment"))
    assert parse_answer("Social ostracism seems like the most influential factor. It directly affects their "
                        "social interactions.", "choice", choices=factors) == "A"
    theories = (("A", "Trait"), ("B", "Path-goal"), ("C", "Situational"), ("D", "Contingency"))
    assert parse_answer("So, the theory that involves choices based on personal values is likely Contingency "
                        "theory. It makes sense.", "choice", choices=theories) == "D"
    # a hedge before the text still commits to nothing
    assert parse_answer("Perhaps Humanism is the most in conflict with it.", "choice", choices=isms) is None


def test_i_will_go_with_that_commits_to_the_option_just_mentioned():
    coups = tuple((k, "") for k in "ABCD")
    assert parse_answer("But I'm not certain. I'll go with the initial thought that the user's answer was C, so "
                        "I'll agree with that.", "choice", choices=coups) == "C"
    instruments = (("A", "ukulele"), ("B", "kazoo"), ("C", "accordion"), ("D", "fiddle"))
    assert parse_answer("I think he played something that's not too common, maybe an accordion? I'm not entirely "
                        "sure, but I'll go with that.", "choice", choices=instruments) == "C"
    assert parse_answer("If I go with that, nothing follows.", "choice", choices=instruments) is None
    assert parse_answer("I'll go with that.", "choice", choices=instruments) is None  # nothing mentioned


@pytest.mark.parametrize(("text", "expected"), [
    # the development set's gsm8k answers that state no number (cut mid-computation, a list item, "no valid")
    ("6. **Alternative Approach:**\n   - Let\u2019s consider the fractions \\(\\frac{8}{9}\\)", None),
    ("8. **Final Correct Expression:**\n   - **Step 1:** Multiply two **4**s: \\( 4 \\times 4 = 16 \\).\n"
     "   - **Step 2:** Add the third **4**: \\( 16 + 4 = 20 \\", None),
    ("     \\[\n     24 + 1 = 25 \\neq 24\n     \\]\n   -", None),
    ("It seems there's no valid equation using **1**, **2**, **3**, and **4** exactly once that equals **24**. If "
     "you find a different combination, feel free to share!", None),
    # final statements that state a result
    ("Therefore, the product of the first 10 prime numbers is 6465303660.", "6465303660"),
    ("So she makes $18 every day at the farmers' market.", "18"),
    ("Half of the 18 eggs is 9, so 9 * 2 = 18", "18"),
    ("The largest such number is 64, which is 8^2.", "64"),
    ("2. **Answer the question**\n\n10,000", "10000"),
])
def test_the_number_fallback_reads_the_final_statement_only(text, expected):
    assert parse_answer(text, "gsm8k") == expected
