"""Command-line interface: ``thinkprobe analyze``, ``thinkprobe profile`` and ``thinkprobe ablate``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from . import __version__

ANALYZE_HELP = """\
Analyse reasoning traces: Thought Graph, 19 metrics and exclusions.

PATH may be a plain-text trace (.txt/.md), a JSON record or list of records (.json), a JSONL file (one
record per line) or a directory holding such files. A record's reasoning is its `reasoning`,
`reasoning_content`, `thinking`, `thinking_process` or `reasoning_text` field, else the <think>...</think>
block of its `text`, `response`, `content`, `completion`, `output` or `full_response` field. Ids come from
`id`/`trace_id`, `model`, `question_id`/`qid`, `run` and `domain`/`category` when present.

With --out DIR it writes DIR/graphs/<trace_id>.json (networkx node-link JSON), DIR/metrics.parquet (one row
per analysed trace: ids, then BF UPC DS FID MEC MBD EER BR CBC CI GD RvD CHR HD PT TPI RR AT ATU) and
DIR/exclusions.parquet (trace_id, reason, source, stage). Without --out it prints one JSON line per trace.
"""


def _add_params_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="YAML",
                   help="read parameters from this YAML file (its `analysis:` section, as in config/config.yaml)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override one parameter, e.g. --set trajectory.elab_percentile=70 (repeatable)")
    p.add_argument("--encoder", metavar="MODEL",
                   help="sentence encoder: all-MiniLM-L6-v2 (default, packaged weights), a local "
                        "sentence-transformers folder or a model id already in the local cache")
    p.add_argument("--encoder-backend", choices=("auto", "onnx", "sentence-transformers"),
                   help="how to run the encoder (default auto: onnx for BERT folders)")
    p.add_argument("--whole-text", action="store_true",
                   help="analyse the whole text of inputs that have no <think> block (default: exclude them)")


def _params(args: argparse.Namespace):
    from .params import load_params

    overrides = list(args.overrides)
    if args.encoder:
        overrides.append(f"encoder.model={json.dumps(args.encoder)}")
    if args.encoder_backend:
        overrides.append(f"encoder.backend={args.encoder_backend}")
    if args.whole_text:
        overrides.append("input.require_think=false")
    return load_params(args.config, overrides)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="thinkprobe", description="Structural profiling of LLM reasoning traces.")
    parser.add_argument("--version", action="version", version=f"thinkprobe {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log details (internal errors with tracebacks)")
    sub = parser.add_subparsers(dest="command", required=True)

    a = sub.add_parser("analyze", help="traces -> Thought Graphs, metrics, exclusions",
                       description=ANALYZE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("paths", nargs="+", metavar="PATH", help="trace files, JSONL files or directories")
    a.add_argument("--out", metavar="DIR", help="output directory (default: JSON lines on stdout)")
    a.add_argument("--graph-format", choices=("json", "graphml"), default="json",
                   help="format of DIR/graphs/<trace_id>.* (default json: networkx node-link)")
    a.add_argument("--stage", choices=("l1", "l3", "l4", "full"), default="full",
                   help="stop the pipeline early, as in the ablation (default full)")
    a.add_argument("--chunk-size", type=int, default=64, metavar="N",
                   help="traces encoded together in one batch (default 64)")
    a.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_params_options(a)

    pr = sub.add_parser("profile", help="metrics.parquet -> 5D cognitive profiles per trace and per model",
                        description="Global z-scores of the 19 metrics and the 5D-CP (paper eq. 1). Writes "
                                    "DIR/profiles_traces.parquet, DIR/profiles_models.parquet and "
                                    "DIR/zscore_stats.parquet, and prints the per-model table.")
    pr.add_argument("metrics", metavar="METRICS_PARQUET", help="a metrics.parquet written by `thinkprobe analyze`")
    pr.add_argument("--out", metavar="DIR", required=True, help="output directory")
    pr.add_argument("--by", default="model", help="column to group the profile by (default model)")
    pr.add_argument("--exclude-length", action="store_true",
                    help="drop AT, ATU and TPI before standardising (the length-excluded variant, paper App. G)")

    ab = sub.add_parser("ablate", help="mean metrics under the four cumulative pipeline stages (paper Table 6)",
                        description="Runs the pipeline stopped after layer 1, after layer 3, after layer 4 and "
                                    "in full, and writes the mean of every metric per stage.")
    ab.add_argument("paths", nargs="+", metavar="PATH", help="trace files, JSONL files or directories")
    ab.add_argument("--out", metavar="FILE", help="write the table as Parquet here (default: print only)")
    _add_params_options(ab)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    from .encoder import EncoderError
    from .lexicon import LexiconError
    from .params import ParamsError

    try:
        if args.command == "analyze":
            return cmd_analyze(args)
        if args.command == "profile":
            return cmd_profile(args)
        return cmd_ablate(args)
    except (ParamsError, EncoderError, LexiconError, FileNotFoundError, ValueError) as exc:
        print(f"thinkprobe: error: {exc}", file=sys.stderr)
        return 2


def cmd_analyze(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .encoder import load_encoder
    from .metrics import METRIC_NAMES
    from .outputs import write_graph, write_table
    from .pipeline import analyze
    from .traces import read_traces

    params = _params(args)
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        raise FileNotFoundError(f"no such file or directory: {', '.join(missing)}")
    items = list(read_traces(args.paths, params.input.require_think, params.input.max_trace_bytes))
    if not items:
        raise ValueError(f"no trace files under {', '.join(args.paths)} (.txt, .md, .json, .jsonl)")
    encoder = load_encoder(params.encoder)
    out = Path(args.out) if args.out else None
    provenance = {"thinkprobe_version": __version__, "encoder": encoder.encoder_id, "stage": args.stage,
                  "params": params.to_dict()}
    rows, excluded = [], []
    bar = tqdm(total=len(items), unit="trace", disable=args.quiet or len(items) < 2, file=sys.stderr)
    suffix = "graphml" if args.graph_format == "graphml" else "json"
    for res in analyze(items, params, encoder, stage=args.stage, chunk_size=args.chunk_size,
                       graph_attrs={"provenance": provenance}):
        bar.update(1)
        if res.exclusion:
            excluded.append(res.exclusion.as_row())
            if out is None:
                print(json.dumps({"trace_id": res.trace.trace_id, "excluded": res.exclusion.reason}))
            continue
        rows.append({**res.trace.ids(), **res.metrics})
        if out is not None:
            write_graph(out / "graphs" / f"{res.trace.trace_id}.{suffix}", res.graph, args.graph_format)
        else:
            print(json.dumps({**res.trace.ids(), "n_tus": res.graph.n, "metrics": res.metrics}))
    bar.close()
    if out is not None:
        import pandas as pd

        ids = ["trace_id", "model", "question_id", "run", "domain"]
        write_table(out / "metrics.parquet", pd.DataFrame(rows, columns=ids + list(METRIC_NAMES)), provenance)
        write_table(out / "exclusions.parquet",
                    pd.DataFrame(excluded, columns=["trace_id", "reason", "source", "stage"]), provenance)
    print(f"thinkprobe: analysed {len(rows)} trace(s), excluded {len(excluded)}"
          + (f"; results in {out}" if out else ""), file=sys.stderr)
    for row in excluded:
        print(f"  excluded {row['trace_id']} ({row['stage']}): {row['reason']}", file=sys.stderr)
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    import pandas as pd

    from .metrics import LENGTH_METRICS
    from .outputs import read_table_metadata, write_table
    from .profile import model_profiles, trace_profiles

    path = Path(args.metrics)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    metrics = pd.read_parquet(path)
    if metrics.empty:
        raise ValueError(f"{path}: the metrics table has no rows")
    if args.by not in metrics.columns:
        raise ValueError(f"{path}: no column {args.by!r} to group by; columns: {list(metrics.columns)}")
    exclude = LENGTH_METRICS if args.exclude_length else ()
    traces, stats = trace_profiles(metrics, exclude)
    models = model_profiles(traces, args.by)
    out = Path(args.out)
    meta = {"source": str(path), "source_metadata": read_table_metadata(path), "excluded_metrics": list(exclude)}
    write_table(out / "profiles_traces.parquet", traces, meta)
    write_table(out / "profiles_models.parquet", models, meta)
    write_table(out / "zscore_stats.parquet", stats.reset_index(), meta)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(models.to_string(index=False, float_format=lambda v: f"{v:+.3f}"))
    return 0


def cmd_ablate(args: argparse.Namespace) -> int:
    import pandas as pd

    from .encoder import load_encoder
    from .outputs import write_table
    from .pipeline import ablation
    from .traces import Trace, read_traces

    params = _params(args)
    traces = [t for t in read_traces(args.paths, params.input.require_think, params.input.max_trace_bytes)
              if isinstance(t, Trace)]
    if not traces:
        raise ValueError(f"no analysable traces under {', '.join(args.paths)}")
    table = pd.DataFrame(ablation(traces, params, load_encoder(params.encoder)))
    if args.out:
        write_table(args.out, table, {"params": params.to_dict(), "thinkprobe_version": __version__})
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
