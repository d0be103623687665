"""Benchmark of the core pipeline on the 500 reasoning traces of the steering-thinking-llms corpus.

Prints one table: end-to-end throughput, time per layer, peak memory, and the encoder-only bound measured
in the same run (a fresh encoder encoding exactly the texts the pipeline encoded, in one batch).

    .venv/bin/python bench/core_bench.py [--corpus ../shared/corpus] [--limit N] [--chunk-size 64] [--typers] [--validate]

``--typers`` adds the analysis after encoding (layers 3-4, node classification, metrics) under each typer of
``classification.typer`` (paper, learned) on the same segmented traces, and the learned layer's extra cost
against the encoder-only bound (issue 36).

``--validate`` adds ``thinkprobe validate``'s time on the same corpus set (the LLM step labels of the five
R1-distill models, ``config/validity/step_labels.yaml``), with a fresh encoder, beside the pipeline's.

Targets (issue "thinkprobe core"): throughput >= 0.8 x the encoder-only bound; peak memory <= 2 GB.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

from thinkprobe.encoder import load_encoder
from thinkprobe.params import Params
from thinkprobe.pipeline import Timings, analyze
from thinkprobe.traces import Trace, trace_from_record

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from table import print_table  # noqa: E402


def load_traces(corpus: Path, limit: int | None) -> list[Trace]:
    folder = corpus / "steering-thinking-llms" / "compare-base-reasoning" / "results" / "vars"
    files = sorted(folder.glob("reasoning_comparison_deepseek-r1-distill-*.json"))
    if not files:
        sys.exit(f"core_bench: no reasoning traces under {folder} (pass --corpus)")
    traces = []
    for f in files:
        model = f.stem.removeprefix("reasoning_comparison_")
        for i, row in enumerate(json.loads(f.read_text())):
            t = trace_from_record({"id": f"{model}-{i}", "model": model, "question_id": str(i),
                                   "response": row["response"]}, f"{model}-{i}", str(f))
            if isinstance(t, Trace):
                traces.append(t)
    return traces[:limit] if limit else traces


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--chunk-size", type=int, default=64)
    ap.add_argument("--typers", action="store_true", help="also time the analysis after encoding under each typer")
    ap.add_argument("--validate", action="store_true", help="also time thinkprobe validate on the step labels")
    args = ap.parse_args()

    traces = load_traces(args.corpus, args.limit)
    params = Params()
    t0 = time.perf_counter()
    encoder = load_encoder(params.encoder, record=True)
    load_s = time.perf_counter() - t0

    timings = Timings()
    t0 = time.perf_counter()
    results = list(analyze(traces, params, encoder, chunk_size=args.chunk_size, timings=timings))
    pipeline_s = time.perf_counter() - t0
    rss_pipeline = peak_rss_mb()
    analysed = sum(r.metrics is not None for r in results)

    texts = list(encoder.recorded or [])
    bound_encoder = load_encoder(params.encoder, record=False)  # separate cache: nothing is pre-encoded
    t0 = time.perf_counter()
    bound_encoder.backend.encode(texts)
    bound_s = time.perf_counter() - t0

    rows = [
        ("traces", f"{len(traces)} ({analysed} analysed, {len(traces) - analysed} excluded)"),
        ("encoder load (s)", f"{load_s:.2f}"),
        ("pipeline wall (s)", f"{pipeline_s:.2f}"),
        ("pipeline throughput (traces/s)", f"{len(traces) / pipeline_s:.2f}"),
        ("  layer 1 (s)", f"{timings['layer1']:.2f}"),
        ("  layer 2 encode sentences (s)", f"{timings['layer2_encode']:.2f}"),
        ("  layer 2 tiling (s)", f"{timings['layer2']:.2f}"),
        ("  TU encoding (s)", f"{timings['tu_encode']:.2f}"),
        ("  layers 3-4 + classification (s)", f"{timings['graph']:.2f}"),
        ("  metrics (s)", f"{timings['metrics']:.2f}"),
        ("texts encoded (distinct)", f"{len(texts)} (of {encoder.stats.requested} requested)"),
        ("encoder-only bound wall (s)", f"{bound_s:.2f}"),
        ("encoder-only bound (traces/s)", f"{len(traces) / bound_s:.2f}"),
        ("throughput / bound (target >= 0.80)", f"{bound_s / pipeline_s:.3f}"),
        ("peak RSS after pipeline (MB)", f"{rss_pipeline:.0f}"),
        ("peak RSS overall (MB, target <= 2048)", f"{peak_rss_mb():.0f}"),
    ]
    if args.typers:
        rows += typer_rows(traces, params, encoder, bound_s)
    if args.validate:
        rows += validate_rows(args.corpus, args.limit, params, pipeline_s)
    print_table(rows)


def typer_rows(traces: list[Trace], params: Params, encoder, bound_s: float) -> list[tuple[str, str]]:
    """Layers 3-4, classification and metrics on the same segmented traces under each typer (the encoder's
    work is done once, before: the warm encoder's cache answers every text)."""
    from dataclasses import replace

    from thinkprobe.lexicon import load_hedges
    from thinkprobe.metrics import compute_metrics
    from thinkprobe.pipeline import SegmentedTrace, graph_of, segment_traces

    segmented = [s for s in segment_traces(traces, params, encoder) if isinstance(s, SegmentedTrace)]
    hedges = load_hedges()
    rows, walls = [], {}
    for typer in ("paper", "learned"):
        p = replace(params, classification=replace(params.classification, typer=typer))
        graph_of(segmented[0], p)  # the artifact and the lexicons loaded outside the timing
        t0 = time.perf_counter()
        for seg in segmented:
            compute_metrics(graph_of(seg, p), p.metrics, hedges)
        walls[typer] = time.perf_counter() - t0
        rows += [(f"typer {typer}: layers 3-4 + classification + metrics (s)", f"{walls[typer]:.2f}"),
                 (f"typer {typer}: traces/s after encoding", f"{len(segmented) / walls[typer]:.1f}")]
    rows.append(("learned layer's extra cost / encoder-only bound", f"{(walls['learned'] - walls['paper']) / bound_s:.3f}"))
    return rows


def validate_rows(corpus: Path, limit: int | None, params: Params, pipeline_s: float) -> list[tuple[str, str]]:
    """``thinkprobe validate`` (reading, mapping, the pipeline, the scores) on the corpus's step labels."""
    from thinkprobe.encoder import Encoder
    from thinkprobe.validity import mapping
    from thinkprobe.validity.run import validate

    folder = corpus / "steering-thinking-llms" / "compare-base-reasoning" / "results" / "vars"
    files = sorted(folder.glob("reasoning_comparison_deepseek-r1-distill-*.json"))
    loaded = load_encoder(params.encoder)
    fresh = Encoder(loaded.backend, loaded.encoder_id)  # same weights, empty cache: nothing pre-encoded
    t0 = time.perf_counter()
    per_file = max(1, limit // len(files)) if limit else None  # --limit N: N traces in all, spread over the files
    s = validate("step_labels", files, mapping.load(REPO / "config" / "validity" / "step_labels.yaml"), params,
                 fresh, limit=per_file).summary
    wall = time.perf_counter() - t0
    return [
        ("validate: traces", f"{s['n_traces']} ({s['n_compared']} compared, {s['n_excluded']} excluded)"),
        ("validate: wall (s)", f"{wall:.2f}"),
        ("validate: traces/s", f"{s['n_traces'] / wall:.2f}"),
        ("validate wall / pipeline wall", f"{wall / pipeline_s:.2f}"),
    ]


if __name__ == "__main__":
    main()
