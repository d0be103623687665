"""``thinkprobe validate``: Thought Graphs against other people's annotations of the same traces (docs/validity.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..validity import DRAWS, SEED, TOLERANCE
from .common import add_params_options, analysis_params, out_dir


def add_parser(sub) -> argparse.ArgumentParser:
    va = sub.add_parser("validate", help="compare Thought Graphs with annotated traces (boundaries, node types, edges)",
                        description="Reads annotated traces in one published format, runs the pipeline on their "
                                    "text and reports boundary agreement, node-type agreement under a mapping "
                                    "file declared beforehand, edge precision/recall per type and, where the "
                                    "annotation carries a per-unit outcome measure, whether boundaries and node "
                                    "types pick out the units that move it. The formats and the mapping "
                                    "files: docs/validity.md.")
    va.add_argument("paths", nargs="+", metavar="PATH", help="annotated files or folders in the chosen format")
    va.add_argument("--format", required=True, metavar="NAME", help="annotation format (a member of thinkprobe/validity/formats; an unknown name is "
                         "an error listing the known ones)")
    va.add_argument("--mapping", required=True, metavar="YAML",
                    help="the label -> node/edge type mapping, declared beforehand (e.g. config/validity/<format>.yaml)")
    va.add_argument("--tolerance", type=int, default=TOLERANCE, metavar="T",
                    help=f"boundary match window in sentences (default {TOLERANCE}, the paper's)")
    va.add_argument("--draws", type=int, default=DRAWS, metavar="N",
                    help=f"random position-matched sets per scored set (default {DRAWS})")
    va.add_argument("--seed", type=int, default=SEED, help=f"seed of the random sets (default {SEED})")
    va.add_argument("--limit", type=int, default=None, metavar="N", help="first N traces of each path only")
    va.add_argument("--out", metavar="DIR", help="write summary.json and traces.csv (one row per trace, exclusions with their reason)")
    va.add_argument("--page", metavar="FILE", help="write the run's Markdown page (a page holding the markers of "
                                                   "thinkprobe.validity.run_page keeps its text: the run goes between them)")
    va.add_argument("--title", default=None, help="the page's title (default: Validity run)")
    add_params_options(va)
    va.set_defaults(func=run)
    return va


def run(args: argparse.Namespace) -> int:
    from ..encoder import load_encoder
    from ..validity import mapping as mapping_mod
    from ..validity.run import validate, write_outputs

    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        raise FileNotFoundError(f"no such file or folder: {', '.join(missing)}")
    if args.tolerance < 0 or args.draws < 1 or (args.limit is not None and args.limit < 1):
        raise ValueError("--tolerance must be >= 0, --draws >= 1 and --limit >= 1")
    out = out_dir(args.out)
    mapping = mapping_mod.load(args.mapping)
    params = analysis_params(args)
    encoder = load_encoder(params.encoder, device=args.device)
    result = validate(args.format, args.paths, mapping, params, encoder, tolerance=args.tolerance,
                      draws=args.draws, seed=args.seed, limit=args.limit)
    write_outputs(result, out, args.page, args.title)
    s = result.summary
    print(json.dumps({"traces": s["n_traces"], "compared": s["n_compared"], "excluded": s["exclusions"],
                      "boundary_f1": s["boundaries"]["f1"]["mean"], "pk": s["boundaries"]["pk"]["mean"],
                      "node_type_kappa": s["node_types"]["kappa"]}))
    return 0
