"""A hand-built trace whose TUs, boundary classes, node types, edges and all 19 metrics are worked out by hand.

The segmentation (TUs, boundary classes, token counts) comes from the real layer 1 and is independent of
the encoder. To work the graph out by hand, the TU embeddings must be known exactly, so this test gives
the pipeline an encoder backend that returns chosen unit vectors for the eight TU texts (and fails on any
other text, which also proves nothing else is encoded). The same trace through the real MiniLM encoder is
checked for everything that does not depend on cosines in ``test_real_encoder_same_structure``.

Layer 2 (TextTiling) is switched off here: it would encode every sentence, whose vectors this table does not
fix; it is tested on its own with the real encoder in ``tests/test_fidelity.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from thinkprobe.encoder import Encoder
from thinkprobe.graph import check_invariants
from thinkprobe.metrics import METRIC_NAMES
from thinkprobe.params import Params
from thinkprobe.pipeline import analyze
from thinkprobe.text import count_tokens
from thinkprobe.traces import extract_reasoning, Trace

pytestmark = pytest.mark.fast

T = [
    "The question asks how a mid-sized city should cut traffic in its centre. "
    "I will compare two policies and then decide which one to recommend to the council.",
    "## Option one: congestion pricing\n\n"
    "A daily charge for driving into the centre reduces trips and raises money for buses.",
    "Drivers who must enter the centre might switch to buses if the service improves. "
    "London and Stockholm saw traffic fall by around a fifth after the charges began.",
    "Wait, the charge hits poorer commuters hardest. A flat fee ignores income, which is unfair.",
    "## Option two: a car-free core\n\n"
    "Closing the inner streets to private cars frees space for cycling and walking.",
    "Let me step back and ask what the council values most. Perhaps cleaner air matters more to them than revenue.",
    "A car-free core needs strong public transport and good rules for deliveries. "
    "Cities such as Pontevedra paired the closure with new bus lines and loading zones.",
    "Putting this together, I recommend congestion pricing with discounts for low incomes, "
    "since it cuts traffic and funds buses while keeping the centre open.",
]
RAW = "<think>\n" + "\n\n".join(T) + "\n</think>\nRecommend congestion pricing with income discounts."

# Unit vectors in R^6, chosen so every cosine below is exact: 0.6/0.8 and 0.8/0.6 are 3-4-5 triangles.
E = np.array([
    [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],  # T0 intro
    [0.6, 0.8, 0.0, 0.0, 0.0, 0.0],  # T1 option one (reframes T0: cos 0.6)
    [0.0, 1.0, 0.0, 0.0, 0.0, 0.0],  # T2 elaborates T1 (cos 0.8)
    [0.6, 0.0, 0.8, 0.0, 0.0, 0.0],  # T3 critique (cos 0.6 with T0, 0 with T2)
    [0.0, 0.0, 0.0, 1.0, 0.0, 0.0],  # T4 option two (new topic: cos 0 with T0)
    [0.0, 0.0, 0.0, 0.8, 0.6, 0.0],  # T5 meta (cos 0.8 with T4)
    [0.0, 0.0, 0.0, 0.6, 0.8, 0.0],  # T6 elaborates T5 (cos 0.96)
    [0.8, 0.6, 0.0, 0.0, 0.0, 0.0],  # T7 synthesis: 0.8 with T0, 0.96 with T1
], dtype=np.float32)


class TableBackend:
    dim = 6

    def __init__(self):
        self.table = dict(zip(T, E))

    def encode(self, texts):
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, 6), np.float32)


PARAMS = Params.from_dict({"texttiling": {"enabled": False}})


def _result(encoder):
    ext = extract_reasoning(RAW)
    trace = Trace("handbuilt", ext.text, model="m", question_id="q", run="1")
    (res,) = list(analyze([trace], PARAMS, encoder))
    return res


@pytest.fixture(scope="module")
def result():
    return _result(Encoder(TableBackend(), "table"))


def test_thought_units_and_boundary_classes(result):
    g = result.graph
    assert g.texts == T
    # layer 1: two short headers absorb their paragraphs (branch); cue phrases classify the first sentences
    assert g.boundaries == ["none", "branch", "none", "backtrack", "branch", "meta", "none", "convergence"]
    # offsets are character offsets into the reasoning text, which starts after "<think>\n"
    text = extract_reasoning(RAW).text
    assert [text[a:b] for a, b in g.offsets] == T
    # tokens: words, punctuation marks ("mid-sized" is mid, -, sized); counted by hand per TU
    assert g.n_tokens == [32, 23, 30, 19, 24, 22, 30, 27]
    assert [count_tokens(t) for t in T] == g.n_tokens


def test_edges_and_segments(result):
    g = result.graph
    # Consecutive cosines s1..s7 = 0.6, 0.8, 0, 0, 0.8, 0.96, 0 -> sorted 0,0,0,0.6,0.8,0.8,0.96.
    # tau_branch = P25 = 0 (nothing is below it); tau_elab = P65 = 0.6 + 0.9*(0.8-0.6) = 0.78.
    assert g.attrs["tau_branch"] == pytest.approx(0.0)
    assert g.attrs["tau_elab"] == pytest.approx(0.78)
    expected = {
        *((j - 1, j, "SEQ") for j in range(1, 8)),  # the SEQ backbone: every consecutive pair (App. F)
        (0, 1, "BRCH"),  # T1 is branch-class: structural override
        (1, 2, "ELAB"),  # s2 = 0.8 >= 0.78
        # (2, 3): SEQ only; s3 = 0 is not below tau_branch = 0; backtrack adds no layer-3 edge (Algorithm 1)
        (3, 4, "BRCH"),  # T4 is branch-class
        (4, 5, "ELAB"),  # s5 = 0.8 (meta is not an edge override)
        (5, 6, "ELAB"),  # s6 = 0.96
        # (6, 7): SEQ only; s7 = 0; convergence adds no layer-3 edge
        # layer 4, synthesis: segments {T0}, {T1..T3}, {T4..T7}; T7 has cos 0.8 with centroid 0 (= T0) and
        # 2.04/sqrt(5.32) = 0.88 with centroid 1 (direction (1.2, 1.8, 0.8)), both above 0.50 and above its
        # cos 0 with the rest of its own segment (T4+T5+T6 = (0, 0, 0, 2.4, 1.4)); the representative of
        # segment 1 is T1 (0.94 with the centroid, against 0.78 for T2 and 0.59 for T3)
        (7, 0, "SYNT"), (7, 1, "SYNT"),
        # backward arc for T7: best earlier TU in another segment is T1 (0.96 > 0.65), and T3 in (1, 5) has
        # cos 0.36 < 0.45 with T1; T7 is convergence-class, not backtrack, so the arc is BACK.
        # T3 (backtrack) gets no CRIT: j = 3 is not > 4, so it has no backward arc.
        (7, 1, "BACK"),
    }
    assert set(g.edges) == expected and len(g.edges) == len(expected)
    assert g.segments == [0, 1, 1, 1, 2, 2, 2, 2]


def test_node_types(result):
    # T0 HYP (v0); T1 incoming BRCH, cos(T1,T0)=0.6 in (0.25,0.72) -> RFR; T2 SPC; T3 backtrack class -> CRT;
    # T4 incoming BRCH, cos 0 -> HYP; T5 meta -> MET; T6 SPC; T7 SYNT to 2 targets -> SYN
    assert result.graph.boundaries == ["none", "branch", "none", "backtrack", "branch", "meta", "none",
                                       "convergence"]
    assert result.graph.node_types == ["HYP", "RFR", "SPC", "CRT", "HYP", "MET", "SPC", "SYN"]


def test_all_19_metrics(result):
    m = result.metrics
    assert list(m) == list(METRIC_NAMES)
    AT = 32 + 23 + 30 + 19 + 24 + 22 + 30 + 27  # 207
    expected = {
        "BF": 2 / 8,  # two BRCH edges, eight nodes
        "UPC": 1,  # one RFR
        "DS": 2,  # HYP T0 and T4 are orthogonal: two clusters
        "FID": 1.0,  # first HYPs T0, T4: 1 - cos = 1
        "MEC": 2,  # ELAB chain T4 -> T5 -> T6
        # semantic edges 0-1 1-2 3-4 4-5 5-6 7-1 7-0 7-1; sources T3 (T4 at 1, T5 at 2, T6 at 3) and
        # T7 (T1, T0 at 1, T2 at 2)
        "MBD": (1 + 2 + 3 + 1 + 1 + 2) / 6,
        "EER": 3 / 2,  # HYP, HYP, RFR over SPC, SPC
        "BR": 1 / 8,  # BACK 7->1 over 8 non-SEQ edges
        "CBC": 1.0,  # T7 joins segments 0, 1 and 2: all three pairs
        "CI": 2 / (4 / 8),  # SYN T7 has SYNT degree 2; SYNT degrees sum to 4 over 8 nodes
        "GD": 7 / 56,  # 7 distinct ordered pairs (7->1 carries SYNT and BACK) over 8*7
        "RvD": 6,  # one BACK, 7 -> 1
        "CHR": 1 / 2,  # one CRT, two HYP
        "HD": 2 / 8,  # "might" in T2, "Perhaps" in T5
        "PT": 1 / 8,
        "TPI": AT / 1,
        "RR": 5 / 28,  # pairs above 0.75: (0,7) .8, (1,2) .8, (1,7) .96, (4,5) .8, (5,6) .96
        "AT": AT,
        "ATU": 8,
    }
    for name, value in expected.items():
        assert m[name] == pytest.approx(value), name


def test_invariants_hold(result):
    check_invariants(result.graph)


def test_real_encoder_same_structure(encoder):
    """Through the real MiniLM encoder the TUs, classes, overrides and cue-driven types are the same."""
    res = _result(encoder)
    g = res.graph
    assert g.texts == T
    # cue and structural classes do not depend on the encoder; layers 3-4 may promote a none TU
    assert g.boundaries[:6] == ["none", "branch", "none", "backtrack", "branch", "meta"]
    assert g.boundaries[6] in ("none", "branch", "convergence") and g.boundaries[7] == "convergence"
    edges = set(g.edges)
    assert {(0, 1, "BRCH"), (3, 4, "BRCH")} <= edges
    assert all(t in ("SEQ", "ELAB", "BRCH") for u, v, t in edges if v == u + 1)  # forward: layer 3 only
    assert all((j - 1, j, "SEQ") in edges for j in range(1, g.n))  # the complete SEQ backbone
    assert all(u > v for u, v, t in edges if t in ("SYNT", "BACK", "CRIT"))  # layer 4 arcs point back
    assert g.node_types[0] == "HYP" and g.node_types[3] == "CRT" and g.node_types[5] == "MET"
    assert g.node_types[7] in ("SYN", "RFR", "HYP")
    assert g.node_types[1] in ("RFR", "HYP") and g.node_types[4] in ("RFR", "HYP")
    assert set(res.metrics) == set(METRIC_NAMES) and res.metrics["ATU"] == 8 and res.metrics["AT"] == 207
    check_invariants(g)
