"""The 19 ThinkProbe metrics (paper §3.5, Appendix C), one function each, named for what it measures.

Notation: ``G = (V, E)`` a Thought Graph, ``E_X`` its edges of type X, ``E_sem = E \\ E_SEQ``, ``V_T`` its
nodes of type T, ``pos(u)`` a node's index, ``e_v`` a node's unit-norm embedding. The paper's Table 12 did
not survive; each docstring states the formula we use and, where the text leaves a choice, which one we
made. Ratios whose denominator is zero are 0 (a trace without the thing measured scores none of it), with
two exceptions stated in their docstrings (EER, CHR, TPI divide by ``max(count, 1)``).

Every trace with a non-empty reasoning gives a valid graph, however short, and every metric has a defined,
finite value for it. For a **one-TU** graph (``v0``, always HYP, no edges): BF = UPC = FID = MEC = MBD =
BR = CBC = CI = GD = RvD = CHR = PT = RR = 0, DS = 1, EER = 1, ATU = 1, AT = TPI = its tokens, HD = 1 if it
hedges else 0. A **two-TU** graph has one forward edge (layer 3's percentiles of a single cosine make it
ELAB unless the second TU is branch-class: BRCH) and no layer-4 arc (synthesis needs two prior segments,
backward arcs ``j > 4``), so MEC = 1 or BF = 1/2, GD = 1/2, MBD = 1, and the ratios follow their formulas.

Every example below runs as a doctest on :func:`example_graph`, a five-TU graph built by hand.
"""

from __future__ import annotations

from collections import deque
from itertools import combinations
from typing import Callable

import numpy as np

from .graph import FAMILIES, ThoughtGraph
from .lexicon import HedgeLexicon, load_hedges
from .params import MetricParams
from .vocabulary import DIMENSION_MAPS, DIMENSIONS, LENGTH_METRICS, METRIC_NAMES

# The vocabulary (names, dimensions, maps) lives in the leaf module thinkprobe.vocabulary; re-exported here.
__all__ = ["DIMENSIONS", "DIMENSION_MAPS", "LENGTH_METRICS", "METRIC_NAMES", "compute_metrics"]


def example_graph() -> ThoughtGraph:
    """Five TUs: HYP -ELAB-> SPC -BRCH-> RFR -SEQ-> CRT (BACK to 0) -BRCH-> SYN (SYNT to 0 and 2).

    Embeddings are chosen so that TUs 0 and 1 are near-duplicates (cosine 0.8) and all other pairs are
    orthogonal except TU 3 with TU 0 (0.6).
    """
    e = np.zeros((5, 4), dtype=np.float32)
    e[0] = [1, 0, 0, 0]
    e[1] = [0.8, 0.6, 0, 0]
    e[2] = [0, 0, 1, 0]
    e[3] = [0.6, -0.8 * 0.75, 0, 0.8 * np.sqrt(1 - 0.75 ** 2)]
    e[4] = [0, 0, 0, 1]
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    edges = [(0, 1, "ELAB"), (1, 2, "BRCH"), (2, 3, "SEQ"), (3, 0, "BACK"), (3, 4, "BRCH"),
             (4, 0, "SYNT"), (4, 2, "SYNT")]
    return ThoughtGraph(
        texts=["Maybe it is a.", "It is a because b.", "Another view: c.", "Wait, a fails.", "So both hold."],
        offsets=[(0, 14), (15, 33), (34, 50), (51, 65), (66, 79)],
        boundaries=["none", "none", "none", "backtrack", "convergence"],
        node_types=["HYP", "SPC", "RFR", "CRT", "SYN"],
        segments=[0, 0, 1, 1, 2],
        edges=edges, embeddings=e, n_tokens=[6, 7, 6, 6, 5])


def _ratio(num: float, den: float) -> float:
    return float(num) / den if den else 0.0


# ---------------------------------------------------------------------------------------------- Breadth

def branching_factor(g: ThoughtGraph) -> float:
    """BF = |E_BRCH| / |V|: how often the trace opens a new direction, per node.

    >>> branching_factor(example_graph())
    0.4

    References
    ----------
    - ThinkProbe paper, section 3.5 (Breadth), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    """
    return _ratio(len(g.edges_of("BRCH")), g.n)


def unique_perspectives(g: ThoughtGraph) -> float:
    """UPC = |V_RFR|: how many times the problem is reframed from a new angle.

    >>> unique_perspectives(example_graph())
    1.0

    References
    ----------
    - ThinkProbe paper, section 3.5 (Breadth), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - The RFR node type: paper section 3.3 and Appendix B (node classification: section 3.4).
    """
    return float(len(g.nodes_of("RFR")))


def average_linkage_clusters(emb: np.ndarray, min_similarity: float) -> int:
    """Number of clusters when average-linkage agglomeration of unit vectors stops below ``min_similarity``.

    Two clusters merge while their mean pairwise cosine *similarity* is ``>= min_similarity``: the same
    partition as ``scipy.cluster.hierarchy.fcluster(linkage(emb, "average", "cosine"), t=1 -
    min_similarity, criterion="distance")``. Each cluster keeps its most similar partner, so a merge costs
    ``O(n)`` plus a row scan per cluster whose partner was merged: about ``O(n^2)`` in all, ``n^2`` floats of
    memory.

    References
    ----------
    - R. R. Sokal and C. D. Michener (1958), "A statistical method for evaluating systematic relationships"
      (average linkage, UPGMA).
    - SciPy, ``scipy.cluster.hierarchy.linkage(method="average", metric="cosine")`` and
      ``fcluster(criterion="distance")``: the partition this reproduces (``tests/test_metrics.py`` compares
      them).
    """
    n = len(emb)
    if n <= 1:
        return n
    sim = (emb @ emb.T).astype(np.float64)
    np.fill_diagonal(sim, -np.inf)
    size = np.ones(n)
    alive = np.ones(n, dtype=bool)
    best = sim.argmax(axis=1)
    best_val = sim[np.arange(n), best]
    clusters = n
    while clusters > 1:
        a = int(np.argmax(best_val))
        if best_val[a] < min_similarity:
            break
        b = int(best[a])
        merged = (size[a] * sim[a] + size[b] * sim[b]) / (size[a] + size[b])
        merged[[a, b]] = -np.inf
        sim[a, :] = merged
        sim[:, a] = merged
        sim[b, :] = -np.inf
        sim[:, b] = -np.inf
        size[a] += size[b]
        alive[b] = False
        best_val[b] = -np.inf
        clusters -= 1
        stale = alive & ((best == a) | (best == b))
        stale[a] = True
        better = alive & ~stale & (merged > best_val)
        best[better] = a
        best_val[better] = merged[better]
        for i in np.flatnonzero(stale):
            best[i] = int(np.argmax(sim[i]))
            best_val[i] = sim[i, best[i]]
    return clusters


def domain_spread(g: ThoughtGraph, similarity: float = MetricParams.domain_spread_similarity) -> float:
    """DS = number of average-linkage clusters of the HYP embeddings, merged down to cosine similarity 0.45.

    The paper's "cosine threshold 0.45" is read as a cosine **similarity**, like every other cosine
    threshold of the paper (0.50, 0.45, 0.65, 0.75, 0.25/0.72 are all similarities, and the same 0.45 is
    "cosine similarity below 0.45" in the revision rule): two groups of hypotheses are one domain while
    their mean pairwise cosine is at least 0.45, i.e. their cosine *distance* is at most 0.55. The other
    reading, scikit-learn's ``distance_threshold=0.45`` (merge only above similarity 0.55), gives more
    clusters; set ``metrics.domain_spread_similarity: 0.55`` to get it. The paper does not name the
    linkage; average linkage is the standard choice for cosine geometry and is monotone, so the threshold
    cut is well defined. 0 without HYP nodes (never the case for a valid graph, whose v0 is HYP); 1 for a
    1-TU graph.

    >>> domain_spread(example_graph())
    1.0

    References
    ----------
    - ThinkProbe paper, section 3.5 (Breadth), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - R. R. Sokal and C. D. Michener (1958), average linkage (UPGMA): the clustering,
      `average_linkage_clusters`.
    - N. Reimers and I. Gurevych (2019), "Sentence-BERT" (EMNLP): the all-MiniLM-L6-v2 embeddings whose
      cosines are clustered (``thinkprobe.encoder``).
    """
    hyp = g.nodes_of("HYP")
    return float(average_linkage_clusters(g.embeddings[hyp], similarity)) if hyp else 0.0


def first_idea_diversity(g: ThoughtGraph, k: int = MetricParams.first_ideas) -> float:
    """FID = mean over pairs of the first ``k`` (3) HYP nodes of ``1 - cos(e_u, e_v)``; 0 with < 2 HYP.

    >>> first_idea_diversity(example_graph())
    0.0

    References
    ----------
    - ThinkProbe paper, section 3.5 (Breadth), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - N. Reimers and I. Gurevych (2019), "Sentence-BERT" (EMNLP): the embeddings (all-MiniLM-L6-v2).
    """
    first = g.nodes_of("HYP")[:k]
    if len(first) < 2:
        return 0.0
    e = g.embeddings[first]
    return float(np.mean([1.0 - float(e[a] @ e[b]) for a, b in combinations(range(len(first)), 2)]))


# ------------------------------------------------------------------------------------------------ Depth

def max_elaboration_chain(g: ThoughtGraph) -> float:
    """MEC = length in edges of the longest directed path of the ELAB subgraph (acyclic by invariant iii).

    >>> max_elaboration_chain(example_graph())
    1.0

    References
    ----------
    - ThinkProbe paper, section 3.5 (Depth), Table 2, Appendix C (whose Table 12 did not survive: the formula
      above is our reading of the text).
    - A. B. Kahn (1962), "Topological sorting of large networks" (CACM): the longest path by topological
      order; NetworkX ``dag_longest_path_length`` computes the same.
    """
    succ: dict[int, list[int]] = {}
    indeg = [0] * g.n
    for u, v, _ in g.edges_of("ELAB"):
        succ.setdefault(u, []).append(v)
        indeg[v] += 1
    longest = [0] * g.n
    queue = deque(i for i in range(g.n) if indeg[i] == 0)
    while queue:
        u = queue.popleft()
        for v in succ.get(u, ()):
            longest[v] = max(longest[v], longest[u] + 1)
            indeg[v] -= 1
            if indeg[v] == 0:
                queue.append(v)
    return float(max(longest, default=0))


def mean_branch_depth(g: ThoughtGraph) -> float:
    """MBD = mean shortest-path distance from each source to each node it reaches in ``(V, E_sem)``.

    Sources are nodes with in-degree 0 in the semantic subgraph; pairs are (source, reached node other
    than the source); 0 when there is no such pair.

    >>> mean_branch_depth(example_graph())  # from the only source, TU 3: 0 and 4 at 1, then 1 and 2 at 2
    1.5

    References
    ----------
    - ThinkProbe paper, section 3.5 (Depth), Table 2, Appendix C (whose Table 12 did not survive: the formula
      above is our reading of the text).
    - Breadth-first search for unweighted shortest paths, as NetworkX ``single_source_shortest_path_length``.
    """
    succ: list[list[int]] = [[] for _ in range(g.n)]
    indeg = [0] * g.n
    for u, v, _ in g.semantic_edges():
        succ[u].append(v)
        indeg[v] += 1
    total = count = 0
    for s in range(g.n):
        if indeg[s]:
            continue
        dist = {s: 0}
        queue = deque([s])
        while queue:
            u = queue.popleft()
            for v in succ[u]:
                if v not in dist:
                    dist[v] = dist[u] + 1
                    queue.append(v)
        total += sum(dist.values())
        count += len(dist) - 1
    return _ratio(total, count)


# -------------------------------------------------------------------------------------------- Structure

def exploration_exploitation_ratio(g: ThoughtGraph) -> float:
    """EER = |V_HYP ∪ V_RFR| / max(|V_SPC ∪ V_JUS|, 1): generative over elaborative moves.

    Families (paper Table 1, reconstructed): exploration = HYP, RFR; exploitation = SPC, JUS;
    metacognition = CRT, MET; integration = SYN, CMP. The ``max(., 1)`` keeps the ratio finite for a trace
    with no elaboration (the exploration count itself is then the score).

    >>> exploration_exploitation_ratio(example_graph())
    2.0

    References
    ----------
    - ThinkProbe paper, section 3.5 (Structure), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - J. G. March (1991), "Exploration and exploitation in organizational learning" (Organization Science):
      the notion the ratio is named for.
    """
    explore = len(g.nodes_of(*FAMILIES["exploration"]))
    exploit = len(g.nodes_of(*FAMILIES["exploitation"]))
    return explore / max(exploit, 1)


def backtracking_rate(g: ThoughtGraph) -> float:
    """BR = |E_BACK| / |E_sem|: the share of semantic edges that are revision arcs.

    >>> round(backtracking_rate(example_graph()), 4)
    0.1667

    References
    ----------
    - ThinkProbe paper, section 3.5 (Structure), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - The BACK edge: paper section 3.3, Appendix B; found by layer 4, section 3.4.
    """
    return _ratio(len(g.edges_of("BACK")), len(g.semantic_edges()))


def cross_branch_connectivity(g: ThoughtGraph) -> float:
    """CBC = |joined segment pairs| / C(k, 2) over the k thematic segments (0 when k < 2).

    A pair of segments is joined when one TU integrates both: the TU's own segment and the segments of
    its SYNT targets are pairwise joined.

    >>> round(cross_branch_connectivity(example_graph()), 4)
    1.0

    References
    ----------
    - ThinkProbe paper, section 3.5 (Structure), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - The thematic segments: layer 2, TextTiling (M. A. Hearst (1997), "TextTiling: Segmenting text into
      multi-paragraph subtopic passages", Computational Linguistics), paper section 3.4; the synthesis arcs:
      layer 4, section 3.4.
    """
    k = max(g.segments, default=0) + 1
    if k < 2:
        return 0.0
    groups: dict[int, set[int]] = {}
    for u, v, _ in g.edges_of("SYNT"):
        groups.setdefault(u, {g.segments[u]}).add(g.segments[v])
    joined = {pair for segs in groups.values() for pair in combinations(sorted(segs), 2)}
    return len(joined) / (k * (k - 1) / 2)


def convergence_index(g: ThoughtGraph) -> float:
    """CI = mean SYNT-degree of SYN nodes / mean SYNT-degree of all nodes (degree = in + out).

    Above 1 when synthesis concentrates at SYN nodes; 0 without SYN nodes or SYNT edges.

    >>> round(convergence_index(example_graph()), 4)
    2.5

    References
    ----------
    - ThinkProbe paper, section 3.5 (Structure), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - The SYN node and SYNT edge: paper section 3.3, Appendix B.
    """
    synt = g.edges_of("SYNT")
    syn = g.nodes_of("SYN")
    if not synt or not syn:
        return 0.0
    deg = np.zeros(g.n)
    for u, v, _ in synt:
        deg[u] += 1
        deg[v] += 1
    return float(deg[syn].mean() / deg.mean())


def graph_density(g: ThoughtGraph) -> float:
    """GD = |{(u, v) : some semantic edge u -> v}| / (|V| (|V| - 1)).

    Ordered pairs are counted once even when two edge types join them, so GD stays in [0, 1].

    >>> graph_density(example_graph())
    0.3

    References
    ----------
    - ThinkProbe paper, section 3.5 (Structure), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - The density of a directed graph, |E| / (|V| (|V| - 1)), as NetworkX ``density`` (here of the semantic
      edge set, parallel edges counted once).
    """
    if g.n < 2:
        return 0.0
    pairs = {(u, v) for u, v, _ in g.semantic_edges()}
    return len(pairs) / (g.n * (g.n - 1))


def revision_depth(g: ThoughtGraph) -> float:
    """RvD = mean of |pos(u) - pos(v)| over BACK edges (0 without BACK edges).

    >>> revision_depth(example_graph())
    3.0

    References
    ----------
    - ThinkProbe paper, section 3.5 (Structure), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - The BACK edge: paper section 3.3, Appendix B.
    """
    back = g.edges_of("BACK")
    return float(np.mean([abs(u - v) for u, v, _ in back])) if back else 0.0


# ---------------------------------------------------------------------------------------- Metacognition

def critique_hypothesis_ratio(g: ThoughtGraph) -> float:
    """CHR = |V_CRT| / max(|V_HYP|, 1): how often the model critiques its own hypotheses.

    >>> critique_hypothesis_ratio(example_graph())
    1.0

    References
    ----------
    - ThinkProbe paper, section 3.5 (Metacognition), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    """
    return len(g.nodes_of("CRT")) / max(len(g.nodes_of("HYP")), 1)


def hedging_density(g: ThoughtGraph, hedges: HedgeLexicon | None = None) -> float:
    """HD = fraction of TUs containing at least one hedge of the lexicon (might, perhaps, possibly, ...).

    >>> hedging_density(example_graph())
    0.2

    References
    ----------
    - ThinkProbe paper, section 3.5 (Metacognition), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - The lexicon, ``thinkprobe/lexicons/hedges.txt``: the paper's examples (might, perhaps, possibly, likely,
      unclear) and their common variants.
    """
    hedges = hedges or load_hedges()
    return _ratio(sum(hedges.contains_hedge(t) for t in g.texts), g.n)


def perspective_taking(g: ThoughtGraph) -> float:
    """PT = |V_RFR| / |V|: the share of TUs that reframe the problem.

    >>> perspective_taking(example_graph())
    0.2

    References
    ----------
    - ThinkProbe paper, section 3.5 (Metacognition), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    """
    return _ratio(len(g.nodes_of("RFR")), g.n)


# ------------------------------------------------------------------------------------------- Efficiency

def avg_tokens(g: ThoughtGraph) -> float:
    """AT = total tokens of the trace's TUs (per trace; a model's value is the mean over its traces).

    >>> avg_tokens(example_graph())
    30.0

    References
    ----------
    - ThinkProbe paper, section 3.5 (Efficiency), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - The tokens: ``thinkprobe.text.count_tokens`` (words, CJK characters and punctuation marks; the paper names no
      tokenizer).
    """
    return float(sum(g.n_tokens))


def avg_tus(g: ThoughtGraph) -> float:
    """ATU = |V| (per trace; a model's value is the mean over its traces).

    >>> avg_tus(example_graph())
    5.0

    References
    ----------
    - ThinkProbe paper, section 3.5 (Efficiency), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - The Thought Units: paper sections 3.2-3.4 (layer 1 and layer 2 boundaries).
    """
    return float(g.n)


def tokens_per_idea(g: ThoughtGraph) -> float:
    """TPI = total tokens / max(UPC, 1): verbal economy per reframed idea.

    The paper divides by UPC (|V_RFR|); a trace with no reframing divides by 1 so TPI is its length.

    >>> tokens_per_idea(example_graph())
    30.0

    References
    ----------
    - ThinkProbe paper, section 3.5 (Efficiency), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    """
    return avg_tokens(g) / max(unique_perspectives(g), 1.0)


def redundancy_ratio(g: ThoughtGraph, similarity: float = MetricParams.redundancy_similarity,
                     block: int = 1024) -> float:
    """RR = fraction of unordered TU pairs with cosine > 0.75 (0 with fewer than two TUs).

    Counted exactly over all ``n (n - 1) / 2`` pairs, ``block`` rows of the similarity matrix at a time, so
    memory stays ``O(block * n)`` whatever the number of TUs.

    >>> redundancy_ratio(example_graph())
    0.1

    References
    ----------
    - ThinkProbe paper, section 3.5 (Efficiency), Table 2, Appendix C (whose Table 12 did not survive: the
      formula above is our reading of the text).
    - N. Reimers and I. Gurevych (2019), "Sentence-BERT" (EMNLP): the embeddings (all-MiniLM-L6-v2).
    """
    n = g.n
    if n < 2:
        return 0.0
    emb = np.asarray(g.embeddings)
    cols = np.arange(n)
    count = 0
    for start in range(0, n, block):
        rows = np.arange(start, min(n, start + block))
        sim = emb[rows] @ emb.T
        count += int(np.count_nonzero((sim > similarity) & (cols[None, :] > rows[:, None])))
    return count / (n * (n - 1) / 2)


# ------------------------------------------------------------------------------------------------ all 19

def compute_metrics(g: ThoughtGraph, params: MetricParams | None = None,
                    hedges: HedgeLexicon | None = None) -> dict[str, float]:
    """All 19 metrics of ``g``, keyed by their abbreviations in the order of :data:`METRIC_NAMES`.

    References
    ----------
    - ThinkProbe paper, section 3.5 and Table 2 (the 19 metrics and their dimensions), Appendix C.
    """
    params = params or MetricParams()
    hedges = hedges or load_hedges(params.hedge_lexicon or None)
    fns: dict[str, Callable[[], float]] = {
        "BF": lambda: branching_factor(g),
        "UPC": lambda: unique_perspectives(g),
        "DS": lambda: domain_spread(g, params.domain_spread_similarity),
        "FID": lambda: first_idea_diversity(g, params.first_ideas),
        "MEC": lambda: max_elaboration_chain(g),
        "MBD": lambda: mean_branch_depth(g),
        "EER": lambda: exploration_exploitation_ratio(g),
        "BR": lambda: backtracking_rate(g),
        "CBC": lambda: cross_branch_connectivity(g),
        "CI": lambda: convergence_index(g),
        "GD": lambda: graph_density(g),
        "RvD": lambda: revision_depth(g),
        "CHR": lambda: critique_hypothesis_ratio(g),
        "HD": lambda: hedging_density(g, hedges),
        "PT": lambda: perspective_taking(g),
        "TPI": lambda: tokens_per_idea(g),
        "RR": lambda: redundancy_ratio(g, params.redundancy_similarity),
        "AT": lambda: avg_tokens(g),
        "ATU": lambda: avg_tus(g),
    }
    return {name: float(fns[name]()) for name in METRIC_NAMES}
