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
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where the encoder runs (default auto: cuda when CUDA_VISIBLE_DEVICES names a GPU; "
                        "cuda that is not available falls back to cpu with a warning)")


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
    pr.add_argument("--dimensions", default="table2", metavar="MAP",
                    help="dimension map: table2 (Table 2, all 19 metrics; default) or app_g (App. G: Efficiency "
                         "= TPI and RR, AT and ATU as baselines)")

    ab = sub.add_parser("ablate", help="mean metrics under the four cumulative pipeline stages (paper Table 6)",
                        description="Runs the pipeline stopped after layer 1, after layer 3, after layer 4 and "
                                    "in full, and writes the mean of every metric per stage.")
    ab.add_argument("paths", nargs="+", metavar="PATH", help="trace files, JSONL files or directories")
    ab.add_argument("--out", metavar="FILE", help="write the table as Parquet here (default: print only)")
    _add_params_options(ab)

    ag = sub.add_parser("agree", help="agreement of two segmentations of one trace (boundary F1, Pk, WindowDiff, kappa)",
                        description="Compares segmentation B with reference A over a common sentence sequence "
                                    "(paper App. H). Each file is a JSON list of segment strings, or a text file "
                                    "with one segment per blank-line-separated block. Without --text the trace "
                                    "is A's segments joined by blank lines; B's segments are located in it by "
                                    "their characters (whitespace ignored).")
    ag.add_argument("ref", metavar="A", help="reference segmentation (.json list of strings, or .txt blocks)")
    ag.add_argument("hyp", metavar="B", help="segmentation to compare with A")
    ag.add_argument("--text", metavar="TRACE", help="the trace's full text (both A and B are aligned to it)")
    ag.add_argument("--tolerance", type=int, default=2, metavar="T",
                    help="boundary match window in sentences (default 2, the paper's)")
    ag.add_argument("--k", type=int, default=None, metavar="K",
                    help="Pk/WindowDiff window (default: half the mean segment length of A)")
    ag.add_argument("--json", action="store_true", help="print one JSON object instead of a table")

    from .trajectories.cli import add_parser as _add_trajectory_parser

    _add_trajectory_parser(sub)
    from .generate.plan_cli import add_parser as _add_plan_parser

    _add_plan_parser(sub)

    from .view.cli import add_parser as _add_show_parser

    _add_params_options(_add_show_parser(sub))

    from .stats.summary_cli import add_parser as _add_summary_parser

    _add_summary_parser(sub)
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
        if args.command == "agree":
            return cmd_agree(args)
        if args.command == "show":
            from .view.cli import run as cmd_show

            return cmd_show(args, _params(args))
        if args.command == "trajectory":
            from .trajectories.cli import run as cmd_trajectory

            return cmd_trajectory(args)
        if args.command == "plan":
            from .generate.plan_cli import run as cmd_plan

            return cmd_plan(args)

        if args.command == "summary":
            from .stats.summary_cli import run_cli as cmd_summary

            return cmd_summary(args)
        return cmd_ablate(args)
    except (ParamsError, EncoderError, LexiconError, OSError, ValueError) as exc:
        print(f"thinkprobe: error: {exc}", file=sys.stderr)
        return 2


def _out_dir(value: str | None) -> Path | None:
    """The ``--out`` folder, checked before any work: it must not be an existing file."""
    if value is None:
        return None
    out = Path(value)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {value}: exists and is not a directory")
    return out


def cmd_analyze(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .encoder import load_encoder
    from .vocabulary import METRIC_NAMES
    from .outputs import write_graph, write_table
    from .pipeline import analyze
    from .traces import read_traces

    params = _params(args)
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        raise FileNotFoundError(f"no such file or directory: {', '.join(missing)}")
    out = _out_dir(args.out)
    items = list(read_traces(args.paths, params.input.require_think, params.input.max_trace_bytes,
                             skip=[out] if out is not None else []))  # --out inside an input folder: not read
    if not items:
        raise ValueError(f"no trace files under {', '.join(args.paths)} (.txt, .md, .json, .jsonl)")
    encoder = load_encoder(params.encoder, device=args.device)
    provenance = {"thinkprobe_version": __version__, **encoder.provenance(), "stage": args.stage,
                  "params": params.to_dict()}
    rows, excluded = [], []
    written: set[Path] = set()
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
            graph_path = out / "graphs" / f"{res.trace.trace_id}.{suffix}"
            write_graph(graph_path, res.graph, args.graph_format)
            written.add(graph_path)
        else:
            print(json.dumps({**res.trace.ids(), "n_tus": res.graph.n, "metrics": res.metrics}))
    bar.close()
    if out is not None:
        import pandas as pd

        ids = ["trace_id", "model", "question_id", "run", "domain"]
        write_table(out / "metrics.parquet", pd.DataFrame(rows, columns=ids + list(METRIC_NAMES)), provenance)
        write_table(out / "exclusions.parquet",
                    pd.DataFrame(excluded, columns=["trace_id", "reason", "source", "stage"]), provenance)
        stale = _remove_stale_graphs(out / "graphs", written)
        if stale:
            print(f"thinkprobe: removed {stale} graph file(s) of an earlier run from {out / 'graphs'}",
                  file=sys.stderr)
    print(f"thinkprobe: analysed {len(rows)} trace(s), excluded {len(excluded)}"
          + (f"; results in {out}" if out else ""), file=sys.stderr)
    for row in excluded:
        print(f"  excluded {row['trace_id']} ({row['stage']}): {row['reason']}", file=sys.stderr)
    return 0


def _remove_stale_graphs(folder: Path, written: set[Path]) -> int:
    """Delete graph files in ``folder`` that this run did not write (a reused ``--out``); returns how many."""
    if not folder.is_dir():
        return 0
    stale = [p for p in folder.iterdir() if p.suffix in (".json", ".graphml") and p.is_file() and p not in written]
    for p in stale:
        p.unlink()
    return len(stale)


def cmd_profile(args: argparse.Namespace) -> int:
    import pandas as pd

    from .vocabulary import LENGTH_METRICS
    from .outputs import read_table_metadata, write_table
    from .params import Params
    from .profile import model_profiles, trace_profiles

    path = Path(args.metrics)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    metrics = pd.read_parquet(path)
    if metrics.empty:
        raise ValueError(f"{path}: the metrics table has no rows")
    if args.by not in metrics.columns:
        raise ValueError(f"{path}: no column {args.by!r} to group by; columns: {list(metrics.columns)}")
    out = _out_dir(args.out)
    exclude = LENGTH_METRICS if args.exclude_length else ()
    dimensions = Params.from_dict({"profile": {"dimensions": args.dimensions}}).profile.dimensions
    traces, stats = trace_profiles(metrics, exclude, dimensions)
    models = model_profiles(traces, args.by)
    meta = {"source": str(path), "source_metadata": read_table_metadata(path), "excluded_metrics": list(exclude),
            "dimensions": dimensions}
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
    table = pd.DataFrame(ablation(traces, params, load_encoder(params.encoder, device=args.device)))
    if args.out:
        write_table(args.out, table, {"params": params.to_dict(), "thinkprobe_version": __version__})
    shares = [c for c in table.columns if c.startswith("class_")]
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.drop(columns=shares).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print("\nboundary-class shares (all TU boundaries; soft = opened by layer 2, none_soft = the part of it still none)")
        by_class = table.set_index("stage")[shares].T
        by_class.index = [c.removeprefix("class_") for c in shares]
        print(by_class.to_string(float_format=lambda v: f"{v:.3f}"))
    return 0


def cmd_agree(args: argparse.Namespace) -> int:
    from .stats.agreement import compare_segment_texts, read_segment_file

    missing = [p for p in (args.ref, args.hyp, args.text) if p and not Path(p).is_file()]
    if missing:
        raise FileNotFoundError(f"no such file: {', '.join(missing)}")
    if args.tolerance < 0 or (args.k is not None and args.k < 1):
        raise ValueError("--tolerance must be >= 0 and --k >= 1")
    ref, hyp = read_segment_file(args.ref), read_segment_file(args.hyp)
    if not ref:
        raise ValueError(f"{args.ref}: no segments")
    text = Path(args.text).read_text(encoding="utf-8") if args.text else None
    scores = compare_segment_texts(ref, hyp, args.tolerance, args.k, text)
    if args.json:
        print(json.dumps(scores))
        return 0
    for key, value in scores.items():
        print(f"{key:<16}{value:.4f}" if isinstance(value, float) else f"{key:<16}{value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
