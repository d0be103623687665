"""Layers 3 and 4 of the extraction pipeline, node classification and the Thought Graph's invariants.

A Thought Graph (paper §3.2) has one node per Thought Unit, in reading order, 8 node types in 4 families
and 6 edge types. Edge directions, fixed here because the paper's rules need them consistent:

* Every consecutive pair gets a SEQ edge ``v_{j-1} -> v_j``: the sequential backbone, the "default
  sequential reading order" of Table 11. Layer 3 adds a second forward edge, BRCH or ELAB, where the
  transition is typed (see reading 4 below).
* SYNT, BACK and CRIT point backwards, from the later TU to the earlier one it integrates, revises or
  critiques, so that node rules 1-2 ("outgoing SYNT/BACK") label the integrating or revising TU, and
  cycles arise through the forward backbone exactly as the paper's Appendix F describes.

Layer 3 (§3.4, Algorithm 1 lines 16-22): ``s_j = cos(e_{j-1}, e_j)``; ``tau_branch = P25(s)``,
``tau_elab = P65(s)``; a branch-class TU or ``s_j < tau_branch`` -> BRCH, ``s_j >= tau_elab`` -> ELAB,
else SEQ. Each BRCH starts a new thematic segment, and a ``none`` TU entered by BRCH becomes a ``branch``
boundary (the paper's "brch boundary"; App. H.4 counts about a third of all boundaries as branch).

Layer 4 (§3.4, Algorithm 1 lines 23-31): synthesis arcs and backward arcs, see
:func:`cross_segment_arcs`. A segment's representative TU is the one closest to its centroid (ours; the
paper does not say).

Readings where the paper's sections disagree, chosen to reproduce its reported results (Table 6, App. H.4),
measured on R1-distill and R1/QwQ traces of the shared corpus (docs/results.md, "Paper versus ours"):

1. **Layer 3 emits only SEQ, ELAB and BRCH** (Algorithm 1), not §3.4's cue overrides (convergence ->
   SYNT, backtrack -> BACK to the previous TU). Table 6 has RvD, BR and CBC at 0 after layer 3 and RvD
   "requires backward-pointing arcs spanning non-adjacent segments"; the overrides made gap-1 BACK edges
   (RvD 0.33 at layer 3) and SYNT edges before layer 4.
2. **Backward arcs are typed by Algorithm 1's CRIT rule**: the §3.4 revision search finds the arc; it is
   CRIT when the revising TU's layer-1 class is backtrack, BACK otherwise (§3.4 emits BACK for every TU;
   Algorithm 1 names meta -> BACK and backtrack -> CRIT). Restricting BACK to meta-class TUs, as a literal
   Algorithm 1 would, leaves RvD at 0.6 after layer 4 against the paper's 3.87; this reading gives 3.6.
   (The former rule, CRIT to the most similar non-adjacent TU above cosine 0.50, is gone.)
3. **A synthesis TU draws more on the prior threads than on its own.** §3.4's rule alone (cosine > 0.50
   with the centroids of two prior segments) fires for 40% of all TUs on one-topic traces, against the
   14% convergence share of App. H.4; Algorithm 1's (only convergence-class TUs) for 4.5%. We keep §3.4's
   rule and add that each bridged centroid must be closer to the TU than the centroid of the rest of its
   own segment: 18% and 12% of the boundaries of two corpus sets become convergence, and CBC in full is
   0.20 and 0.13 (paper 0.22).
4. **The SEQ backbone is complete** (Table 11, App. F), not only the untyped transitions (§3.4: "all others
   receive seq"). App. F reports that cycles arise "exclusively from synt edges interacting with the
   sequential backbone" (the SEQ+SYNT subgraph has 97.5% of the traces with a cycle, about the full graph's
   rate), and each SYNT arc ``v_j -> v_i`` closes a cycle of length ``j - i + 1`` "through the seq
   backbone": both hold only if every consecutive pair has a SEQ edge. With §3.4's exclusive typing the
   SEQ+SYNT subgraph of the R1-distill corpus had no cycle at all. The 19 metrics read only ``E_sem = E \
   E_SEQ`` and the typed edges, so this reading changes none of their values.
5. **Node rule 2 takes the backtrack class** (Algorithm 1's boundary-to-node map; Table 6 has CHR non-zero
   with structural boundaries only, where no edge exists), and **v0 is always HYP** (it has no boundary
   before it, and rules 1-2 cannot fire for it), so that every graph, one TU included, has its exploration
   node.

Cost: layer 4 holds one ``n x n`` similarity matrix and emits at most ``synthesis_max_targets`` SYNT arcs
and one backward arc per TU, so a graph has at most ``(3 + synthesis_max_targets) n`` edges; ``n`` is
bounded by ``segmentation.max_thought_units``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import learned_typer
from .params import ClassificationParams, CrossSegmentParams, TrajectoryParams

NODE_TYPES = ("HYP", "RFR", "SPC", "JUS", "CRT", "MET", "SYN", "CMP")
FAMILIES = {
    "exploration": ("HYP", "RFR"),
    "exploitation": ("SPC", "JUS"),
    "metacognition": ("CRT", "MET"),
    "integration": ("SYN", "CMP"),
}
FAMILY_OF = {t: fam for fam, types in FAMILIES.items() for t in types}
EDGE_TYPES = ("SEQ", "BRCH", "ELAB", "BACK", "SYNT", "CRIT")
LAYERS = ("l1", "l3", "l4")


class InvariantError(ValueError):
    """A Thought Graph violates one of the structural invariants of paper §3.2."""

    def __init__(self, invariant: str, detail: str):
        super().__init__(f"invariant '{invariant}' failed: {detail}")
        self.invariant = invariant
        self.detail = detail


@dataclass
class ThoughtGraph:
    """Nodes (TUs) in reading order, their labels, and typed directed edges ``(source, target, type)``."""

    texts: list[str]
    offsets: list[tuple[int, int]]
    boundaries: list[str]
    node_types: list[str]
    segments: list[int]
    edges: list[tuple[int, int, str]]
    embeddings: np.ndarray
    n_tokens: list[int]
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.texts)

    def edges_of(self, *types: str) -> list[tuple[int, int, str]]:
        return [e for e in self.edges if e[2] in types]

    def semantic_edges(self) -> list[tuple[int, int, str]]:
        """``E_sem = E \\ E_SEQ`` (paper §3.3)."""
        return [e for e in self.edges if e[2] != "SEQ"]

    def nodes_of(self, *types: str) -> list[int]:
        return [i for i, t in enumerate(self.node_types) if t in types]

    def to_networkx(self):
        """A ``networkx.MultiDiGraph`` with ``node_type``, ``text``, offsets and ``edge_type`` attributes."""
        import networkx as nx

        g = nx.MultiDiGraph(**self.attrs)
        for i in range(self.n):
            g.add_node(i, **self.node_attrs(i))
        for u, v, t in self.edges:
            g.add_edge(u, v, key=t, edge_type=t)
        return g

    def node_attrs(self, i: int) -> dict[str, Any]:
        return {"node_type": self.node_types[i], "family": FAMILY_OF[self.node_types[i]], "text": self.texts[i],
                "start": self.offsets[i][0], "end": self.offsets[i][1], "boundary": self.boundaries[i],
                "segment": self.segments[i], "n_tokens": self.n_tokens[i]}

    def to_node_link(self) -> dict[str, Any]:
        """networkx node-link JSON data (``edges`` key, multigraph keyed by edge type).

        Built directly (networkx costs a quarter second to import in every workflow job); a test checks
        it equals ``networkx.node_link_data(self.to_networkx(), edges="edges")``.
        """
        return {
            "directed": True,
            "multigraph": True,
            "graph": dict(self.attrs),
            "nodes": [{**self.node_attrs(i), "id": i} for i in range(self.n)],
            "edges": [{"edge_type": t, "source": u, "target": v, "key": t} for u, v, t in self.edges],
        }

    @classmethod
    def from_node_link(cls, data: dict[str, Any], embeddings: np.ndarray) -> "ThoughtGraph":
        nodes = sorted(data["nodes"], key=lambda d: d["id"])
        edges = [(int(e["source"]), int(e["target"]), e["edge_type"]) for e in data.get("edges", data.get("links", []))]
        return cls(
            texts=[d["text"] for d in nodes],
            offsets=[(d["start"], d["end"]) for d in nodes],
            boundaries=[d["boundary"] for d in nodes],
            node_types=[d["node_type"] for d in nodes],
            segments=[d["segment"] for d in nodes],
            edges=edges,
            embeddings=embeddings,
            n_tokens=[d["n_tokens"] for d in nodes],
            attrs=dict(data.get("graph", {})),
        )


def semantic_trajectory(boundaries: list[str], emb: np.ndarray, params: TrajectoryParams):
    """Layer 3: the SEQ backbone plus a BRCH or ELAB edge on typed transitions, segments and the two thresholds.

    Returns ``(edges, segments, thresholds, boundaries)``; in the returned boundary classes a ``none`` TU
    whose incoming transition is BRCH is a ``branch`` boundary (the paper's "brch boundary").
    """
    n = len(boundaries)
    boundaries = list(boundaries)
    sims = np.einsum("ij,ij->i", emb[:-1], emb[1:]) if n > 1 else np.zeros(0)
    if sims.size:
        tau_branch = float(np.percentile(sims, params.branch_percentile))
        tau_elab = float(np.percentile(sims, params.elab_percentile))
    else:
        tau_branch = tau_elab = None
    edges: list[tuple[int, int, str]] = []
    segments = [0] * n
    seg = 0
    for j in range(1, n):
        s = sims[j - 1]
        if boundaries[j] == "branch" or s < tau_branch:  # type: ignore[operator]  (n > 1: thresholds set)
            kind = "BRCH"
            if boundaries[j] == "none":
                boundaries[j] = "branch"
        elif s >= tau_elab:  # type: ignore[operator]
            kind = "ELAB"
        else:
            kind = "SEQ"
        edges.append((j - 1, j, "SEQ"))
        if kind != "SEQ":
            edges.append((j - 1, j, kind))
        if kind == "BRCH":
            seg += 1
        segments[j] = seg
    return edges, segments, {"tau_branch": tau_branch, "tau_elab": tau_elab}, boundaries


def cross_segment_arcs(boundaries: list[str], emb: np.ndarray, segments: list[int], params: CrossSegmentParams,
                       sim: np.ndarray | None = None):
    """Layer 4: synthesis arcs and backward (revision/critique) arcs; returns ``(edges, boundaries)``.

    Synthesis (§3.4, with our tie to the TU's own thread): ``v_j`` bridges a prior segment ``s`` (index
    below ``v_j``'s own) when ``cos(e_j, centroid_s) > synthesis_similarity`` and that cosine exceeds
    ``v_j``'s cosine with the centroid of its own segment without ``v_j`` (no such condition when ``v_j``
    is alone in its segment). With at least ``synthesis_min_segments`` bridged segments, ``v_j`` emits
    SYNT to the representative TU of each (at most ``synthesis_max_targets``, most similar centroid first)
    and its boundary class is promoted to convergence.

    Backward arcs (§3.4 "revision arcs"): for ``j > revision_min_index``, among ``v_i`` in another segment
    with ``j - i >= revision_min_gap`` and some TU in ``(i, i + revision_divergence_window)`` with cosine
    ``< revision_divergence_similarity`` to ``v_i``, take the most similar; if its cosine ``>
    revision_similarity``, ``v_j`` has a backward arc to ``v_i``, typed by Algorithm 1 (App. D, lines
    24-28): CRIT when ``v_j``'s layer-1 class is backtrack, BACK otherwise.

    Cost: one ``n x n`` similarity matrix and ``O(n * segments)`` centroid cosines; at most
    ``synthesis_max_targets + 1`` arcs per TU.
    """
    n = len(boundaries)
    cue_class = list(boundaries)
    boundaries = list(boundaries)
    edges: list[tuple[int, int, str]] = []
    if n == 0:
        return edges, boundaries
    sim = emb @ emb.T if sim is None else sim
    seg_arr = np.asarray(segments)
    n_seg = int(seg_arr.max()) + 1
    sums = np.zeros((n_seg, emb.shape[1]), dtype=np.float64)
    np.add.at(sums, seg_arr, emb)
    sizes = np.bincount(seg_arr, minlength=n_seg)
    cents = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    reps = [0] * n_seg
    for s in range(n_seg):
        members = np.flatnonzero(seg_arr == s)
        reps[s] = int(members[np.argmax(emb[members] @ cents[s])])
    cent_sim = emb @ cents.T  # [n, n_seg]
    rest = sums[seg_arr] - emb  # own segment without v_j
    rest_norm = np.linalg.norm(rest, axis=1)
    own_sim = np.where((sizes[seg_arr] > 1) & (rest_norm > 1e-12),
                       np.einsum("ij,ij->i", emb, rest) / np.maximum(rest_norm, 1e-12), -np.inf)

    for j in range(n):
        prior = np.arange(segments[j])
        if prior.size < params.synthesis_min_segments:
            continue
        c = cent_sim[j, prior]
        bridged = prior[(c > params.synthesis_similarity) & (c > own_sim[j])]
        if len(bridged) >= params.synthesis_min_segments:
            bridged = bridged[np.argsort(-cent_sim[j, bridged], kind="stable")][:params.synthesis_max_targets]
            for t in dict.fromkeys(reps[s] for s in bridged):
                edges.append((j, t, "SYNT"))
            boundaries[j] = "convergence"

    divergent = np.zeros(n, dtype=bool)  # some TU in (i, i+window) has sim < threshold to v_i
    for i in range(n):
        hi = min(n, i + params.revision_divergence_window)
        if i + 1 < hi and np.any(sim[i, i + 1:hi] < params.revision_divergence_similarity):
            divergent[i] = True
    for j in range(params.revision_min_index + 1, n):
        last = j - params.revision_min_gap
        if last < 0:
            continue
        cand = np.arange(last + 1)
        cand = cand[(seg_arr[cand] != segments[j]) & divergent[cand]]
        if cand.size:
            i = int(cand[np.argmax(sim[j, cand])])
            if sim[j, i] > params.revision_similarity:
                edges.append((j, i, "CRIT" if cue_class[j] == "backtrack" else "BACK"))
    return edges, boundaries


def classify_nodes(boundaries: list[str], edges: list[tuple[int, int, str]], emb: np.ndarray,
                   params: ClassificationParams, metacognition: list[str] | None = None) -> list[str]:
    """Node types by the paper's 9-rule priority hierarchy (§3.4, "Node classification").

    1. outgoing SYNT to >= 2 targets -> SYN; 2. any outgoing BACK or CRIT, or boundary class backtrack ->
    CRT; 3. meta -> MET; 4. incoming BRCH and 0.25 < cos(v, v0) < 0.72 -> RFR; 5. incoming BRCH
    otherwise -> HYP; 6. contrast -> CMP; 7. support -> JUS; 8. convergence -> SYN; 9. v0 -> HYP, all
    others -> SPC.

    Two readings (module docstring): rule 2 also takes the backtrack class (Algorithm 1's boundary-to-node
    map; Table 6 has CHR non-zero with structural boundaries only, where no edge exists), and ``v0`` is
    always HYP: it has no boundary before it, so no boundary class applies to it, and rules 1-2 cannot
    fire (its arcs would have to point before the trace). This makes every graph, even of one TU, satisfy
    invariant (v).

    ``metacognition`` (the learned typer, ``classification.typer: learned``; :mod:`thinkprobe.learned_typer`):
    one decision per node, ``"CRT"``, ``"MET"`` or ``""``, that takes the place of rules 2-3; every other rule
    and the priority order stay the paper's. ``None`` (the default): the paper's rules 2-3.
    """
    n = len(boundaries)
    synt_targets: list[set[int]] = [set() for _ in range(n)]
    back_out = [False] * n
    brch_in = [False] * n
    for u, v, t in edges:
        if t == "SYNT":
            synt_targets[u].add(v)
        elif t in ("BACK", "CRIT"):
            back_out[u] = True
        elif t == "BRCH":
            brch_in[v] = True
    to_root = emb @ emb[0] if n else np.zeros(0)
    types = []
    for i in range(n):
        b = boundaries[i]
        if i == 0:
            t = "HYP"
        elif len(synt_targets[i]) >= 2:
            t = "SYN"
        elif metacognition is None and (back_out[i] or b == "backtrack"):
            t = "CRT"
        elif metacognition is None and b == "meta":
            t = "MET"
        elif metacognition is not None and metacognition[i]:
            t = metacognition[i]
        elif brch_in[i] and params.reframe_min_similarity < to_root[i] < params.reframe_max_similarity:
            t = "RFR"
        elif brch_in[i]:
            t = "HYP"
        elif b == "contrast":
            t = "CMP"
        elif b == "support":
            t = "JUS"
        elif b == "convergence":
            t = "SYN"
        else:
            t = "SPC"
        types.append(t)
    return types


def _paper_rules(texts, boundaries, edges, emb) -> None:
    """The paper typer: rules 2-3 of :func:`classify_nodes` decide CRT and MET (no decisions passed)."""
    return None


TYPERS = {"paper": _paper_rules, "learned": learned_typer.decide}
"""``classification.typer`` -> what decides node rules 2-3 (the choices of :class:`~thinkprobe.params.ClassificationParams`;
a test keeps the two equal)."""


def check_invariants(graph: ThoughtGraph) -> None:
    """Raise :class:`InvariantError` naming the first invariant of paper §3.2 that ``graph`` violates.

    (i) no self-loops; (ii) valid endpoints; (iii) the ELAB subgraph is acyclic; (iv) every node is
    reachable from v0; (v) at least one exploration-family node (HYP or RFR).
    """
    n = graph.n
    if n == 0:
        raise InvariantError("non-empty", "the graph has no nodes")
    for u, v, t in graph.edges:
        if u == v:
            raise InvariantError("no-self-loops", f"{t} edge {u}->{v}")
    for u, v, t in graph.edges:
        if not (0 <= u < n and 0 <= v < n):
            raise InvariantError("valid-endpoints", f"{t} edge {u}->{v} with {n} nodes")
        if t not in EDGE_TYPES:
            raise InvariantError("valid-endpoints", f"unknown edge type {t!r}")
    elab = [[] for _ in range(n)]
    indeg = [0] * n
    for u, v, t in graph.edges:
        if t == "ELAB":
            elab[u].append(v)
            indeg[v] += 1
    queue = [i for i in range(n) if indeg[i] == 0]
    seen = 0
    while queue:
        u = queue.pop()
        seen += 1
        for v in elab[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                queue.append(v)
    if seen != n:
        raise InvariantError("elab-acyclic", "the ELAB subgraph has a cycle")
    adj = [[] for _ in range(n)]
    for u, v, _ in graph.edges:
        adj[u].append(v)
    reached = [False] * n
    reached[0] = True
    stack = [0]
    while stack:
        u = stack.pop()
        for v in adj[u]:
            if not reached[v]:
                reached[v] = True
                stack.append(v)
    if not all(reached):
        raise InvariantError("reachable-from-v0", f"node {reached.index(False)} is not reachable from v0")
    if not any(FAMILY_OF[t] == "exploration" for t in graph.node_types):
        raise InvariantError("exploration-node", "no HYP or RFR node")


def build_graph(texts: list[str], offsets: list[tuple[int, int]], boundaries: list[str], emb: np.ndarray,
                n_tokens: list[int], trajectory: TrajectoryParams, cross: CrossSegmentParams,
                classification: ClassificationParams, layers: str = "l4",
                attrs: dict[str, Any] | None = None) -> ThoughtGraph:
    """Assemble a Thought Graph from TUs and their embeddings, running layers up to ``layers``.

    ``layers``: ``"l1"`` keeps only the SEQ backbone (structural boundaries only), ``"l3"`` adds the
    semantic trajectory, ``"l4"`` adds cross-segment arcs. Invariants are checked; a violation raises
    :class:`InvariantError`.
    """
    if layers not in LAYERS:
        raise ValueError(f"layers must be one of {LAYERS}, got {layers!r}")
    n = len(texts)
    attrs = dict(attrs or {})
    final_boundaries = list(boundaries)
    if layers == "l1":
        edges = [(j - 1, j, "SEQ") for j in range(1, n)]
        segments = [0] * n
    else:
        edges, segments, thresholds, final_boundaries = semantic_trajectory(final_boundaries, emb, trajectory)
        attrs.update(thresholds)
        if layers == "l4":
            extra, final_boundaries = cross_segment_arcs(final_boundaries, emb, segments, cross)
            edges = edges + extra
    edges = list(dict.fromkeys(edges))
    decided = TYPERS[classification.typer](list(texts), final_boundaries, edges, emb)
    types = classify_nodes(final_boundaries, edges, emb, classification, decided)
    graph = ThoughtGraph(list(texts), list(offsets), final_boundaries, types, segments, edges, emb,
                         list(n_tokens), attrs)
    check_invariants(graph)
    return graph
