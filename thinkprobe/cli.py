"""Command-line interface: ``thinkprobe <subcommand>``, one module per subcommand in :mod:`thinkprobe.commands`.

Each subcommand's module registers its parser and binds its ``run`` with ``set_defaults(func=...)``; this
module builds the parser, sets up logging and turns the errors a user can fix (bad parameters, a missing
file, a bad value) into one line on stderr and exit status 2. An unknown subcommand is argparse's own
error (exit 2).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from . import __version__
from .commands import COMMANDS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="thinkprobe", description="Structural profiling of LLM reasoning traces.")
    parser.add_argument("--version", action="version", version=f"thinkprobe {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log details (internal errors with tracebacks)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"{__package__}.commands.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    from .encoder import EncoderError
    from .lexicon import LexiconError
    from .params import ParamsError

    try:
        return args.func(args)
    except (ParamsError, EncoderError, LexiconError, OSError, ValueError) as exc:
        print(f"thinkprobe: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
