"""Fidelity to the paper's reported behaviour (issue 9) and bounded cost on hostile traces (issue 10, item 6).

Everything runs the real pipeline with the real all-MiniLM-L6-v2 encoder; the corpus tests skip when
../shared/corpus is absent.
"""

from __future__ import annotations

import glob
import json
import math

import numpy as np
import pytest

try:  # tests/ as a package or as a plain folder of modules
    from .conftest import corpus_path
except ImportError:
    from conftest import corpus_path
from thinkprobe.graph import ThoughtGraph, check_invariants
from thinkprobe.metrics import METRIC_NAMES, compute_metrics, domain_spread
from thinkprobe.params import CrossSegmentParams, Params
from thinkprobe.pipeline import ablation, analyze, boundary_class_shares, segment_traces
from thinkprobe.traces import Trace, trace_from_record

BREAD = [
    "Bread dough needs flour, water, salt and a little yeast.",
    "The yeast ferments the sugars in the flour and releases carbon dioxide.",
    "Kneading develops gluten, which traps the gas and lets the loaf rise.",
    "A long, cool proof gives the crumb a deeper and more complex flavour.",
    "Bakers score the top of the loaf so that it expands evenly in the oven.",
    "Steam in the first minutes of baking keeps the crust soft enough to rise.",
]
ORBITS = [
    "A satellite in low Earth orbit circles the planet in about ninety minutes.",
    "Its speed must balance the pull of gravity at that altitude.",
    "Raising the orbit requires a prograde burn at the lowest point of the ellipse.",
    "A geostationary orbit matches the rotation of the Earth once per sidereal day.",
    "Transfer orbits between two circular orbits are half an ellipse touching both.",
    "Atmospheric drag slowly lowers spacecraft that fly below four hundred kilometres.",
]


def _trace(text: str, tid: str = "t") -> Trace:
    return Trace(tid, text, model="m", question_id="q", run="1")


# ------------------------------------------------------------------------------------------ layer 2

@pytest.mark.fast
def test_layer2_one_soft_boundary_at_the_topic_change(encoder):
    """Two topics of six sentences in one paragraph: exactly one soft boundary, at the change, class none."""
    text = " ".join(BREAD + ORBITS)
    (seg,) = segment_traces([_trace(text)], Params(), encoder)
    assert seg.tiling["new_boundaries"] == 1 and seg.tiling["length_cuts"] == 0
    assert [s.origin for s in seg.spans] == ["structural", "texttiling"]
    assert seg.texts == [" ".join(BREAD), " ".join(ORBITS)]
    assert seg.spans[1].boundary == "none"


@pytest.mark.fast
def test_layer2_new_units_get_class_none_even_with_a_cue(encoder):
    """Algorithm 1 inserts NONE boundaries: a cue phrase at the start of a soft TU is not re-run."""
    orbits = ["Wait, " + ORBITS[0][0].lower() + ORBITS[0][1:], *ORBITS[1:]]
    (seg,) = segment_traces([_trace(" ".join(BREAD + orbits))], Params(), encoder)
    assert len(seg.spans) == 2 and seg.spans[1].text(seg.trace.text).startswith("Wait,")
    assert seg.spans[1].boundary == "none"


@pytest.mark.fast
def test_layer2_scope_decides_whether_a_cue_paragraph_is_split(encoder):
    """Algorithm 1 (default scope): a cue paragraph is split too, its class stays on the first part only;
    §3.4's reading (scope none_spans) leaves it whole."""
    bread = ["Wait, " + BREAD[0][0].lower() + BREAD[0][1:], *BREAD[1:]]
    text = " ".join(bread + ORBITS)
    (seg,) = segment_traces([_trace(text)], Params(), encoder)
    assert [s.boundary for s in seg.spans] == ["backtrack", "none"]
    assert [s.origin for s in seg.spans] == ["structural", "texttiling"]
    narrow = Params.from_dict({"texttiling": {"scope": "none_spans"}})
    (seg,) = segment_traces([_trace(text)], narrow, encoder)
    assert len(seg.spans) == 1 and seg.tiling["new_boundaries"] == 0


@pytest.mark.fast
def test_layer2_off_and_one_topic_give_no_soft_boundary(encoder):
    off = Params.from_dict({"texttiling": {"enabled": False}})
    (seg,) = segment_traces([_trace(" ".join(BREAD + ORBITS))], off, encoder)
    assert len(seg.spans) == 1
    (seg,) = segment_traces([_trace(" ".join(BREAD))], Params(), encoder)
    assert len(seg.spans) == 1 and seg.tiling["new_boundaries"] == 0


# ----------------------------------------------------------------------------------- short traces

@pytest.mark.fast
def test_a_20_word_trace_is_analysed_with_every_metric_defined(encoder):
    text = "The answer is four because two plus two equals four, and I checked it twice so it is correct now."
    assert len(text.split()) == 20
    (res,) = list(analyze([_trace(text)], Params(), encoder))
    assert res.exclusion is None, res.exclusion
    g = res.graph
    assert g.n == 1 and g.node_types == ["HYP"]  # v0 is HYP even though its sentence is a convergence cue
    m = res.metrics
    assert list(m) == list(METRIC_NAMES) and all(math.isfinite(v) for v in m.values())
    # the values documented for a 1-TU graph (thinkprobe.metrics module docstring)
    assert m["DS"] == 1 and m["EER"] == 1 and m["ATU"] == 1 and m["TPI"] == m["AT"] > 0
    for name in ("BF", "UPC", "FID", "MEC", "MBD", "BR", "CBC", "CI", "GD", "RvD", "CHR", "PT", "RR"):
        assert m[name] == 0, name


@pytest.mark.fast
def test_two_tu_graph_is_valid_and_defined():
    """Two TUs: layer 3's percentiles of one cosine make it ELAB (s >= P65 = s); all metrics defined."""
    from thinkprobe.graph import build_graph
    from thinkprobe.params import ClassificationParams, TrajectoryParams

    emb = np.array([[1.0, 0.0], [0.6, 0.8]])
    g = build_graph(["Maybe x.", "Wait, y."], [(0, 8), (9, 17)], ["meta", "backtrack"], emb, [3, 3],
                    TrajectoryParams(), CrossSegmentParams(), ClassificationParams(), "l4")
    assert g.edges == [(0, 1, "SEQ"), (0, 1, "ELAB")] and g.node_types == ["HYP", "CRT"]
    m = compute_metrics(g)
    assert m["MEC"] == 1 and m["GD"] == 0.5 and m["CHR"] == 1 and m["EER"] == 1 and m["RR"] == 0
    assert all(math.isfinite(v) for v in m.values())


@pytest.mark.fast
def test_min_words_is_off_by_default_and_still_available(encoder):
    assert Params().input.min_words == 0
    strict = Params.from_dict({"input": {"min_words": 80}})
    (res,) = list(analyze([_trace("Two plus two is four.")], strict, encoder))
    assert res.exclusion is not None and "too short" in res.exclusion.reason


# ---------------------------------------------------------------------------------- Domain Spread

@pytest.mark.fast
def test_domain_spread_threshold_is_a_cosine_similarity():
    """Three HYPs at pairwise cosine 0.5: one domain when 0.45 is a similarity, three if it were a distance."""
    a = np.array([1.0, 0.0, 0.0])
    b = np.array([0.5, math.sqrt(0.75), 0.0])
    c3 = (0.5 - 0.5 * 0.5) / math.sqrt(0.75)
    c = np.array([0.5, c3, math.sqrt(1 - 0.25 - c3 ** 2)])
    emb = np.stack([a, b, c])
    assert np.allclose(emb @ emb.T, [[1, .5, .5], [.5, 1, .5], [.5, .5, 1]])
    g = ThoughtGraph(["x"] * 3, [(0, 1)] * 3, ["none"] * 3, ["HYP"] * 3, [0, 1, 2],
                     [(0, 1, "BRCH"), (1, 2, "BRCH")], emb, [1] * 3)
    assert domain_spread(g) == 1.0  # merge while mean cosine similarity >= 0.45 (0.5 here)
    assert domain_spread(g, 0.55) == 3.0  # the scikit-learn distance_threshold=0.45 reading


# ------------------------------------------------------------------------------------ hostile cost

@pytest.mark.fast
def test_looping_trace_shows_high_redundancy(encoder):
    """One sentence repeated 2,000 times: no TextTiling valley, so max_tu_sentences cuts it; RR ~ 1."""
    text = " ".join(["I need to check the first step again."] * 2000)
    (res,) = list(analyze([_trace(text)], Params(), encoder))
    assert res.exclusion is None
    g = res.graph
    assert g.n == math.ceil(2000 / Params().texttiling.max_tu_sentences)
    assert res.metrics["RR"] > 0.9


@pytest.mark.slow
def test_many_headers_stay_within_the_documented_edge_and_size_bounds(encoder):
    """3,000 one-line headers: edges <= (3 + synthesis_max_targets) x TUs, graph JSON <= 2 KB per TU."""
    text = "\n".join(f"# Step {i} of the plan" for i in range(3000))
    params = Params()
    (res,) = list(analyze([_trace(text)], params, encoder))
    assert res.exclusion is None, res.exclusion
    g = res.graph
    assert g.n == 1500  # a header under 12 tokens absorbs the next one
    k = params.cross_segment.synthesis_max_targets
    assert len(g.edges) <= (3 + k) * g.n
    assert sum(1 for u, _, t in g.edges if t == "SYNT") <= k * g.n
    size = len(json.dumps(g.to_node_link()).encode())
    assert size <= 2048 * g.n, size


@pytest.mark.fast
def test_too_many_thought_units_is_an_exclusion_before_encoding():
    class NoEncoder:
        def encode(self, texts):
            assert not texts, "nothing may be encoded for an excluded trace"
            return np.zeros((0, 384), np.float32)

    params = Params.from_dict({"segmentation": {"max_thought_units": 10}})
    text = "\n".join(f"- item {i}" for i in range(11))
    (res,) = list(analyze([_trace(text, "many")], params, NoEncoder()))
    assert res.exclusion is not None and res.exclusion.stage == "layer1"
    assert res.exclusion.reason.startswith("too many thought units: 11")


# ----------------------------------------------------------------------- Table 6 on the real corpus

@pytest.fixture(scope="module")
def corpus_ablation(encoder):
    folder = corpus_path("steering-thinking-llms", "compare-base-reasoning", "results", "vars")
    traces = []
    for f in sorted(glob.glob(str(folder / "reasoning_comparison_deepseek-r1-distill-*.json"))):
        model = f.rsplit("reasoning_comparison_", 1)[1].removesuffix(".json")
        for i, rec in enumerate(json.load(open(f, encoding="utf-8"))[:12]):
            t = trace_from_record({"id": f"{model}-{i}", "model": model, "response": rec["response"]}, "x", f)
            traces.append(t)
    folder = corpus_path("thought-branches", "faithfulness", "good_problems")
    seen: set[tuple[str, str]] = set()
    for f in sorted(glob.glob(str(folder / "*.json"))):
        for rec in json.load(open(f, encoding="utf-8")):
            key = (rec["model"], str(rec["pn"]))
            if rec["model"] not in ("deepseek-reasoner", "qwen/qwq-32b-preview") or key in seen:
                continue
            seen.add(key)
            traces.append(trace_from_record({**rec, "id": "-".join(key)}, "x", f))
    traces = [t for t in traces if isinstance(t, Trace)]
    assert len(traces) == 60 + 74
    return {row["layers"]: row for row in ablation(traces, Params(), encoder)}



@pytest.mark.slow
def test_ablation_profile_of_table6(corpus_ablation):
    rows = corpus_ablation
    typed = ("BF", "MEC", "MBD", "BR", "CBC", "CI", "GD", "RvD")
    # structural boundaries only: every typed-edge metric is 0; EER and CHR are not
    assert all(rows["l1"][m] == 0 for m in typed)
    assert rows["l1"]["EER"] > 0 and rows["l1"]["CHR"] > 0
    # + L3: BF, MEC and GD switch on; no backward arc yet, so RvD, BR and CBC stay 0
    assert rows["l3"]["BF"] > 0 and rows["l3"]["MEC"] > 0 and rows["l3"]["GD"] > 0
    assert rows["l3"]["RvD"] == rows["l3"]["BR"] == rows["l3"]["CBC"] == 0
    # + L4: RvD switches on (backward arcs span >= 4 TUs), BR and CBC start
    assert rows["l4"]["RvD"] > 0 and rows["l4"]["BR"] > 0 and rows["l4"]["CBC"] > 0
    assert rows["l4"]["BF"] == rows["l3"]["BF"]
    # full (+ layer 2): more TUs, and the largest CBC
    assert rows["full"]["tus_per_trace"] > rows["l4"]["tus_per_trace"]
    assert rows["full"]["CBC"] > rows["l4"]["CBC"]
    assert rows["full"]["class_soft"] > 0.15  # App. H.4: about a third of all boundaries are soft


@pytest.mark.slow
def test_boundary_class_shares_per_stage(corpus_ablation):
    rows = corpus_ablation
    for stage, row in rows.items():
        shares = {k.removeprefix("class_"): v for k, v in row.items() if k.startswith("class_")}
        assert sum(v for k, v in shares.items() if k not in ("soft", "none_soft")) == pytest.approx(1.0), stage
    assert rows["l1"]["class_soft"] == rows["l4"]["class_soft"] == 0
    assert rows["full"]["class_soft"] >= rows["full"]["class_none_soft"] > 0
    # layer 3 makes branch boundaries out of BRCH transitions; layer 4 promotes synthesis TUs
    assert rows["l3"]["class_branch"] > rows["l1"]["class_branch"]
    assert rows["l4"]["class_convergence"] >= rows["l3"]["class_convergence"]


@pytest.mark.fast
def test_boundary_class_shares_by_hand():
    g = ThoughtGraph(["a", "b", "c", "d", "e"], [(0, 1)] * 5, ["meta", "branch", "none", "none", "convergence"],
                     ["HYP", "HYP", "SPC", "SPC", "SYN"], [0, 1, 1, 1, 1], [], np.eye(5), [1] * 5,
                     {"soft_units": [3]})
    shares = boundary_class_shares([g])
    # v0's class is no boundary; of the 4 boundaries: branch 1, none 2 (one soft), convergence 1
    assert shares["branch"] == 0.25 and shares["none"] == 0.5 and shares["convergence"] == 0.25
    assert shares["none_soft"] == 0.25 and shares["soft"] == 0.25 and shares["meta"] == 0
    check_invariants(ThoughtGraph(["a"], [(0, 1)], ["none"], ["HYP"], [0], [], np.eye(1), [1]))
