"""``thinkprobe summary``: the command line of :mod:`thinkprobe.stats.summary`, kept apart so that registering
the subcommand imports no pandas (``thinkprobe --help`` starts in a fraction of a second)."""

from __future__ import annotations

import sys


def add_parser(sub) -> None:
    """``thinkprobe summary``: print, snapshot, or put into the README the summary of a statistics folder."""
    p = sub.add_parser("summary", help="the study's results as Markdown, from results/stats (or a snapshot)",
                       description="Prints the results summary of a statistics folder (results/stats or a snapshot "
                                   "under docs/results/<run>). --snapshot copies its small tables with run.json; "
                                   "--readme rewrites every <!-- results: DIR --> block of a README from its DIR.")
    p.add_argument("stats_dir", nargs="?", default="results/stats", metavar="DIR",
                   help="a statistics folder: results/stats (default) or a snapshot docs/results/<run>")
    p.add_argument("--snapshot", metavar="DEST", help="copy the tables to DEST (new folder) with run.json")
    p.add_argument("--run-command", dest="run_command", default="",
                   help="the command that produced the run (recorded in run.json)")
    p.add_argument("--readme", metavar="FILE", help="rewrite FILE's results blocks (DIR is then unused)")


def run_cli(args) -> int:
    from .summary import snapshot, summary_text, update_readme

    if args.readme:
        n = update_readme(args.readme)
        print(f"{args.readme}: {n} results block(s) regenerated", file=sys.stderr)
        return 0
    if args.snapshot:
        dest = snapshot(args.stats_dir, args.snapshot, args.run_command or "(not recorded)")
        print(f"snapshot: {dest}", file=sys.stderr)
        return 0
    print(summary_text(args.stats_dir), end="")
    return 0
