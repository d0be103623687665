"""``thinkprobe analyze``: traces -> Thought Graphs, the 19 metrics and the exclusions."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import __version__
from .common import RenamedOption, add_params_options, analysis_params, out_dir

HELP = """\
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


def add_parser(sub) -> argparse.ArgumentParser:
    a = sub.add_parser("analyze", help="traces -> Thought Graphs, metrics, exclusions",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("paths", nargs="+", metavar="PATH", help="trace files, JSONL files or directories")
    a.add_argument("--out", metavar="DIR", help="output directory (default: JSON lines on stdout)")
    a.add_argument("--graph-format", choices=("json", "graphml"), default="json",
                   help="format of DIR/graphs/<trace_id>.* (default json: networkx node-link)")
    # pipeline.LAYER_SETTINGS, written out: importing the pipeline here would slow every --help (tests/test_cli.py
    # checks that the two agree)
    a.add_argument("--layers", choices=("l1", "l3", "l4", "full"), default="full",
                   help="which layers run, as in the ablation: l1, l3, l4 stop the pipeline early (default full; "
                        "this option was --stage before issue 27, which is now refused)")
    a.add_argument("--stage", action=RenamedOption, new="--layers")
    a.add_argument("--chunk-size", type=int, default=64, metavar="N",
                   help="traces encoded together in one chunk (default 64)")
    a.add_argument("--quiet", action="store_true", help="no progress bar")
    add_params_options(a)
    a.set_defaults(func=run)
    return a


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ..encoder import load_encoder
    from ..vocabulary import METRIC_NAMES
    from ..outputs import write_graph, write_table
    from ..pipeline import analyze
    from ..traces import read_traces

    params = analysis_params(args)
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        raise FileNotFoundError(f"no such file or directory: {', '.join(missing)}")
    out = out_dir(args.out)
    items = list(read_traces(args.paths, params.input.require_think, params.input.max_trace_bytes,
                             skip=[out] if out is not None else []))  # --out inside an input folder: not read
    if not items:
        raise ValueError(f"no trace files under {', '.join(args.paths)} (.txt, .md, .json, .jsonl)")
    encoder = load_encoder(params.encoder, device=args.device)
    provenance = {"thinkprobe_version": __version__, **encoder.provenance(), "layers": args.layers,
                  "params": params.to_dict()}
    rows, excluded = [], []
    written: set[Path] = set()
    bar = tqdm(total=len(items), unit="trace", disable=args.quiet or len(items) < 2, file=sys.stderr)
    suffix = "graphml" if args.graph_format == "graphml" else "json"
    for res in analyze(items, params, encoder, layers=args.layers, chunk_size=args.chunk_size,
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
        stale = remove_stale_graphs(out / "graphs", written)
        if stale:
            print(f"thinkprobe: removed {stale} graph file(s) of an earlier run from {out / 'graphs'}",
                  file=sys.stderr)
    print(f"thinkprobe: analysed {len(rows)} trace(s), excluded {len(excluded)}"
          + (f"; results in {out}" if out else ""), file=sys.stderr)
    for row in excluded:
        print(f"  excluded {row['trace_id']} ({row['stage']}): {row['reason']}", file=sys.stderr)
    return 0


def remove_stale_graphs(folder: Path, written: set[Path]) -> int:
    """Delete graph files in ``folder`` that this run did not write (a reused ``--out``); returns how many."""
    if not folder.is_dir():
        return 0
    stale = [p for p in folder.iterdir() if p.suffix in (".json", ".graphml") and p.is_file() and p not in written]
    for p in stale:
        p.unlink()
    return len(stale)
