"""``thinkprobe migrate``: seal the files a release before digests wrote, and record it (issue 37)."""

from __future__ import annotations

import argparse


def add_parser(sub) -> argparse.ArgumentParser:
    mg = sub.add_parser("migrate", help="seal result files written before digests (recorded)",
                        description="Since digests are required, a unit, store or embeddings file without one is "
                                    "refused like an altered one. This seals every such file below RESULTS under "
                                    "the key it is found at, leaves sealed files alone (an altered one stays "
                                    "refused) and records what it sealed in RESULTS/migrations/.")
    mg.add_argument("results", nargs="?", default="results", metavar="RESULTS",
                    help="the results folder (default: results)")
    mg.set_defaults(func=run)
    return mg


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..stages.migrate import migrate_digests, summary

    if not Path(args.results).is_dir():
        raise FileNotFoundError(f"no such folder: {args.results}")
    print(summary(migrate_digests(args.results)))
    return 0
