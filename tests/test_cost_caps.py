"""Caps before work (issue 19, item 6): the cost caps of layer 2 are checked from layer 1's counts before
anything is encoded, and the segment rule's runtime grows with its input. The encoder here is a stand-in that
fails the test if it is asked to encode anything for an over-cap trace (the real encoder runs for the
under-cap trace of the same batch)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from thinkprobe.params import Params
from thinkprobe.pipeline import analyze
from thinkprobe.traces import Trace

pytestmark = pytest.mark.fast


class CountingEncoder:
    """The real encoder, counting what it is asked to encode (every text, per call)."""

    def __init__(self, real):
        self.real, self.texts = real, []

    def encode(self, texts):
        self.texts.extend(texts)
        return self.real.encode(texts) if texts else np.zeros((0, 384), np.float32)


def _trace(text: str, tid: str) -> Trace:
    return Trace(tid, text, model="m", question_id="q", run="1")


def test_over_cap_traces_are_excluded_before_any_encoding(encoder):
    params = Params.from_dict({"segmentation": {"max_thought_units": 40}, "texttiling": {"max_sentences": 3000}})
    per = params.texttiling.max_tu_sentences
    # one paragraph of short sentences: one layer-1 span, but at least ceil(n / 24) TUs after layer 2
    paragraph = " ".join(f"Step {i} is fine." for i in range(per * 40 + 1))
    # 20 paragraphs (under the unit cap after layer 1) of 3,200 sentences in all: over the sentence cap
    many = "\n\n".join(" ".join(f"Case {k}.{i} holds." for i in range(160)) for k in range(20))
    ok = "First I add the numbers. Then I check the sum twice.\n\nSo the answer is seven."
    counting = CountingEncoder(encoder)
    res = {r.trace.trace_id: r for r in analyze([_trace(paragraph, "paragraph"), _trace(many, "many"), _trace(ok, "ok")],
                                          params, counting)}
    assert len(res) == 3  # analysed + excluded = inputs
    p, m = res["paragraph"].exclusion, res["many"].exclusion
    assert p is not None and p.stage == "layer2"
    assert p.reason.startswith(f"too many thought units: at least {math.ceil((per * 40 + 1) / per)} after layer2")
    assert "excluded before encoding" in p.reason
    assert m is not None and m.reason.startswith("too many sentences for layer 2: 3200 (maximum 3000")
    assert res["ok"].exclusion is None and res["ok"].graph.n >= 2
    encoded = set(counting.texts)
    assert not any(t.startswith(("Step ", "Case ")) for t in encoded), "an over-cap trace was encoded"
    assert any("add the numbers" in t for t in encoded)


def test_the_segment_rule_runtime_grows_with_its_input():
    from pathlib import Path

    rule = (Path(__file__).resolve().parents[1] / "rules" / "segment.smk").read_text()
    # the MB of the batch's trace files (imported, or written by their collection jobs: rules/common.smk trace_mb)
    assert "runtime=lambda w: _segment_runtime(trace_mb(batch_keys(w)))" in rule
    assert "from thinkprobe.stages.segment import runtime_minutes as _segment_runtime" in rule
    from thinkprobe.stages.segment import runtime_minutes

    assert runtime_minutes(0.01) == 6 and runtime_minutes(0) == 5
    assert runtime_minutes(1.9) >= 2 * 494 / 60  # the 1.9 MB prose trace took 494 s here: twice that
    assert runtime_minutes(4.0) > runtime_minutes(2.0)
