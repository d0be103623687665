"""``thinkprobe agree``: agreement of two segmentations of one trace (boundary F1, Pk, WindowDiff, kappa; App. H)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_parser(sub) -> argparse.ArgumentParser:
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
    ag.set_defaults(func=run)
    return ag


def run(args: argparse.Namespace) -> int:
    from ..stats.agreement import compare_segment_texts, read_segment_file

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
