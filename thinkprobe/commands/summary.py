"""``thinkprobe summary``: the command line of :mod:`thinkprobe.stats.results_text`, :mod:`thinkprobe.stats.page_blocks`,
:mod:`thinkprobe.study.snapshot` and :mod:`thinkprobe.study.retake`; registering the subcommand imports none of
them (no pandas: ``thinkprobe --help`` starts in a fraction of a second)."""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub) -> argparse.ArgumentParser:
    """``thinkprobe summary``: print a statistics folder's results; snapshot, re-take or check a snapshot;
    regenerate the results blocks of the documentation."""
    p = sub.add_parser("summary", help="the study's results as Markdown, from results/stats (or a snapshot)",
                       description="Prints the results summary of a statistics folder (results/stats or a snapshot "
                                   "under docs/results/<name>). --snapshot keeps a finished run's tables as a new "
                                   "snapshot; --retake reruns the corpus study and replaces a snapshot; --pages "
                                   "rewrites every <!-- results:KIND DIR --> block of the README and docs pages; "
                                   "--stale lists a snapshot's tables whose code changed.")
    p.add_argument("stats_dir", nargs="?", default="results/stats", metavar="DIR",
                   help="a statistics folder: results/stats (default) or a snapshot docs/results/<name>")
    p.add_argument("--snapshot", metavar="DEST", help="copy a finished run's tables to DEST (a new folder)")
    p.add_argument("--run-command", dest="run_command", default="",
                   help="the command that produced the run (recorded in run.json)")
    p.add_argument("--retake", metavar="DEST", help="rerun the corpus study and replace the snapshot DEST, then "
                                                    "regenerate the pages (run from the checkout)")
    p.add_argument("--corpus", metavar="DIR", help="with --retake: the corpus folder (study inputs, ablation sets)")
    p.add_argument("--configfile", action="append", default=[], metavar="YAML",
                   help="with --retake: an extra config file for the study (instead of --corpus's inputs)")
    p.add_argument("--keep-inputs", dest="keep_inputs", action="store_true",
                   help="with --retake: keep the study config's own inputs (--corpus then only feeds the ablation sets)")
    p.add_argument("--cores", type=int, default=2, help="with --retake: Snakemake's --cores (default 2)")
    p.add_argument("--pages", action="store_true", help="regenerate the results blocks of README.md and docs/")
    p.add_argument("--stale", metavar="SNAPSHOT", help="list the tables of SNAPSHOT whose code or config changed")
    p.add_argument("--readme", metavar="FILE", help="rewrite FILE's results blocks (as --pages, for one file)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    if args.retake:
        from ..study.retake import retake

        timings = retake(args.retake, args.corpus, args.cores, tuple(args.configfile), keep_inputs=args.keep_inputs)
        print(json.dumps(timings), file=sys.stderr)
        return 0
    if args.stale:
        from ..study.snapshot import stale_tables

        stale = stale_tables(args.stale)
        print("\n".join(stale) if stale else f"{args.stale}: up to date")
        return 1 if stale else 0
    if args.pages or args.readme:
        from ..stats.page_blocks import DEFAULT_PAGES, update_pages

        pages = (args.readme,) if args.readme else DEFAULT_PAGES
        print(f"{update_pages(pages)} results block(s) regenerated in {', '.join(pages)}", file=sys.stderr)
        return 0
    if args.snapshot:
        from ..study.snapshot import snapshot

        dest = snapshot(args.stats_dir, args.snapshot, args.run_command or "(not recorded)")
        print(f"snapshot: {dest}", file=sys.stderr)
        return 0
    from ..stats.results_text import summary_text

    print(summary_text(args.stats_dir), end="")
    return 0
