"""``thinkprobe profile``: a metrics table -> 5D cognitive profiles per trace and per model (paper eq. 1)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import out_dir


def add_parser(sub) -> argparse.ArgumentParser:
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
    pr.set_defaults(func=run)
    return pr


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..vocabulary import LENGTH_METRICS
    from ..outputs import read_table_metadata, write_table
    from ..params import Params
    from ..profile import model_profiles, trace_profiles

    path = Path(args.metrics)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    metrics = pd.read_parquet(path)
    if metrics.empty:
        raise ValueError(f"{path}: the metrics table has no rows")
    if args.by not in metrics.columns:
        raise ValueError(f"{path}: no column {args.by!r} to group by; columns: {list(metrics.columns)}")
    out = out_dir(args.out)
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
