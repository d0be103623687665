"""Time and peak memory of one trace per hostile class (issue 10): the cost bound on degenerate traces.

    .venv/bin/python bench/hostile_bench.py [--only headers,repeated] [--timeout 900]

Each class is analysed in a fresh process (full pipeline, default parameters, packaged encoder), so its
peak resident memory is its own. Classes, each under the input limit (``input.max_trace_bytes``, 2 MB):

* ``headers``: 3,000 one-line markdown headers (``## Step i``), about 40 KB;
* ``list``: 3,000 list items (``- item i: ...``);
* ``repeated``: one sentence repeated 2,000 times, one paragraph each (a looping model);
* ``long_sentence``: one sentence of 10,000 words without punctuation;
* ``prose``: 2 MB of distinct prose sentences in paragraphs of six;
* ``paragraph_130k``: ONE paragraph of 130,000 short sentences (about 1.2 MB): one layer-1 span, but at least
  5,417 TUs after layer 2 (issue 19: excluded before encoding, was excluded after encoding every sentence);
* ``prose_1_9mb``: 1.9 MB of distinct prose sentences in paragraphs of twelve, under every cap (analysed).

Prints one table: wall seconds (load of the encoder excluded), peak RSS, TUs, edges, the size of the graph
as node-link JSON, and the redundancy ratio RR (a looping trace should score high).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parents[1]
CLASSES = ("headers", "list", "repeated", "long_sentence", "prose", "paragraph_130k", "prose_1_9mb")


def hostile_text(kind: str) -> str:
    """The reasoning text of one hostile class (see the module docstring)."""
    if kind == "headers":
        body = "\n".join(f"## Step {i}" for i in range(3000))
    elif kind == "list":
        body = "\n".join(f"- item {i}: check that the value {i} is below the bound." for i in range(3000))
    elif kind == "repeated":
        body = "\n\n".join(["Wait, let me recompute the sum of the first two terms again."] * 2000)
    elif kind == "long_sentence":
        words = ["the", "value", "of", "each", "term", "depends", "on", "which", "previous", "step", "we", "took"]
        body = " ".join(f"{words[i % len(words)]}" for i in range(10_000))
    elif kind == "paragraph_130k":
        body = " ".join(f"Go {i}." for i in range(130_000))
    elif kind in ("prose", "prose_1_9mb"):
        subjects = ["The first approach", "A second reading", "This estimate", "The boundary case", "Our claim",
                    "The other branch", "That assumption", "The final check"]
        verbs = ["suggests", "contradicts", "refines", "depends on", "simplifies", "revisits", "supports", "weakens"]
        objects = ["the earlier result", "the hidden premise", "the sum over all terms", "the answer from step three",
                   "an unexpected symmetry", "the rate of convergence", "the second derivative", "the total cost"]
        sentences, size, i = [], 0, 0
        target, per = (1_990_000, 6) if kind == "prose" else (1_900_000, 12)
        while size < target:
            s = f"{subjects[i % 8]} {verbs[(i // 8) % 8]} {objects[(i // 64) % 8]} in case {i}."
            sentences.append(s)
            size += len(s) + 1
            i += 1
        body = "\n\n".join(" ".join(sentences[k:k + per]) for k in range(0, len(sentences), per))
    else:
        raise ValueError(f"unknown class {kind!r}: one of {CLASSES}")
    return body


def run_one(kind: str) -> dict:
    """Analyse one hostile trace in this process; returns the measures (called in a fresh subprocess)."""
    from thinkprobe.encoder import load_encoder
    from thinkprobe.params import Params
    from thinkprobe.pipeline import analyze
    from thinkprobe.traces import Trace

    text = hostile_text(kind)
    params = Params()
    encoder = load_encoder(params.encoder, device="cpu")
    t0 = time.perf_counter()
    res = next(iter(analyze([Trace(kind, text)], params, encoder)))
    wall = time.perf_counter() - t0
    row = {"class": kind, "bytes": len(text.encode()), "wall_s": round(wall, 2),
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    if res.exclusion:
        row["excluded"] = res.exclusion.reason
        return row
    graph_json = json.dumps(res.graph.to_node_link(), ensure_ascii=False, default=float)
    row.update({"tus": res.graph.n, "edges": len(res.graph.edges), "graph_mb": round(len(graph_json.encode()) / 1e6, 2),
                "RR": round(float(res.metrics["RR"]), 3)})
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(CLASSES), help="comma-separated classes")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per class before it is reported as a timeout")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one)))
        return 0
    rows = []
    for kind in args.only.split(","):
        try:
            proc = subprocess.run([sys.executable, __file__, "--one", kind], capture_output=True, text=True,
                                  timeout=args.timeout, cwd=REPO)
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0
                        else {"class": kind, "excluded": f"failed: {proc.stderr.strip().splitlines()[-1:]}"})
        except subprocess.TimeoutExpired:
            rows.append({"class": kind, "excluded": f"timeout after {args.timeout} s"})
    cols = ["class", "bytes", "wall_s", "peak_rss_mb", "tus", "edges", "graph_mb", "RR", "excluded"]
    cols = [c for c in cols if any(c in r for r in rows)]
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    print("  ".join(f"{c:<{widths[c]}}" for c in cols))
    print("  ".join("-" * widths[c] for c in cols))
    for r in rows:
        print("  ".join(f"{str(r.get(c, '')):<{widths[c]}}" for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
