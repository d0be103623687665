"""``thinkprobe show``: one trace as a self-contained HTML page (Thought Graph, metrics, trajectory)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import add_params_options, analysis_params

HELP = """\
Write one trace's page: its reasoning cut into Thought Units coloured by node type, the BRCH/BACK/SYNT/CRIT
arcs beside the text, the 19 metrics as z-scores with the 5D-CP radar, the answer-distribution trajectory
when the unit has one, and the provenance. The page needs no network to be viewed.

TRACE_OR_UNIT is a trace file (.txt/.md/.json/.jsonl, analysed now; --trace-id picks one of several
traces by its id as written) or a unit model/question_set/question_id/run of a results folder (--results,
default results), by its ids as written ("Modell ä/demo/q1/1", "org/model/demo/q1/1") or its file-safe path.
"""


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("show", help="one trace (file or results unit) -> a self-contained HTML page",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", metavar="TRACE_OR_UNIT", help="a trace file, or model/question_set/question_id/run")
    p.add_argument("--out", required=True, metavar="PAGE.html", help="where to write the page")
    p.add_argument("--results", default="results", metavar="DIR", help="the results folder of a unit id (default results)")
    p.add_argument("--trace-id", help="which trace of a trace file, by its id as written (default: its first)")
    p.add_argument("--tau", type=float, default=0.8, help="commitment threshold of the trajectory (default 0.8)")
    p.add_argument("--reference", metavar="METRICS_PARQUET",
                   help="z-scores against this metrics table (default: the results folder's "
                        "tables/metrics.parquet for a unit, the bundled reference profile for a trace file)")
    add_params_options(p)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..view.trace_page import write_page
    from ..stages.page_sources import page_from_results, page_from_trace

    params = analysis_params(args)
    target = Path(args.target)
    if target.is_file():
        data = page_from_trace(target, args.trace_id, params)
    else:
        data = page_from_results(args.results, args.target, tau=args.tau, params=params)
    if args.reference:
        from ..view.reference import study_reference

        data.reference = study_reference(args.reference)
    size = write_page(data, args.out)
    n = len(data.graph["nodes"]) if data.graph else 0
    print(f"{args.out}: {data.unit} ({data.status}), {n} thought units, {size / 1024:.0f} KiB")
    return 0
