"""``thinkprobe ablate``: mean metrics under the four cumulative layer settings (paper Table 6)."""

from __future__ import annotations

import argparse

from .. import __version__
from .common import add_params_options, analysis_params


def add_parser(sub) -> argparse.ArgumentParser:
    ab = sub.add_parser("ablate", help="mean metrics under the four cumulative layer settings l1, l3, l4, full (paper Table 6)",
                        description="Runs the pipeline stopped after layer 1, after layer 3, after layer 4 and "
                                    "in full, and writes the mean of every metric per layer setting (column layers).")
    ab.add_argument("paths", nargs="+", metavar="PATH", help="trace files, JSONL files or directories")
    ab.add_argument("--out", metavar="FILE", help="write the table as Parquet here (default: print only)")
    add_params_options(ab)
    ab.set_defaults(func=run)
    return ab


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..encoder import load_encoder
    from ..outputs import write_table
    from ..pipeline import ablation
    from ..traces import Trace, read_traces

    params = analysis_params(args)
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
        by_class = table.set_index("layers")[shares].T
        by_class.index = [c.removeprefix("class_") for c in shares]
        print(by_class.to_string(float_format=lambda v: f"{v:.3f}"))
    return 0
