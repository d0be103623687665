"""What several subcommands share: the analysis parameters' options and the ``--out`` folder check."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


class RenamedOption(argparse.Action):
    """An option that was renamed: using it stops with one line naming the new option (exit status 2, as
    argparse's own errors, without the usage block that would bury the line). argparse alone would only say
    "unrecognized arguments", which does not tell the user what the option is called now; the old name is no
    alias (one name per role, docs/glossary.md)."""

    def __init__(self, option_strings, dest, new: str, **kwargs):
        self.new = new
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from ..config import CHANGES

        parser.exit(2, f"{parser.prog}: error: {option_string} was renamed: use {self.new} ({CHANGES})\n")


def add_params_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="YAML",
                   help="read parameters from this YAML file (its `analysis:` section, as in config/config.yaml)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override one parameter, e.g. --set trajectory.elab_percentile=70 (repeatable)")
    p.add_argument("--encoder", metavar="MODEL",
                   help="sentence encoder: all-MiniLM-L6-v2 (default, packaged weights), a local "
                        "sentence-transformers folder or a model id already in the local cache")
    p.add_argument("--encoder-backend", choices=("auto", "onnx", "sentence-transformers"),
                   help="how to run the encoder (default auto: onnx for BERT folders)")
    p.add_argument("--whole-text", action="store_true",
                   help="analyse the whole text of inputs that have no <think> block (default: exclude them)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where the encoder runs (default auto: cuda when CUDA_VISIBLE_DEVICES names a GPU; "
                        "cuda that is not available falls back to cpu with a warning)")


def analysis_params(args: argparse.Namespace):
    """The analysis parameters: the ``--config`` file's ``analysis:`` section, then every ``--set``, ``--encoder``,
    ``--encoder-backend`` and ``--whole-text``."""
    from ..params import load_params

    overrides = list(args.overrides)
    if args.encoder:
        overrides.append(f"encoder.model={json.dumps(args.encoder)}")
    if args.encoder_backend:
        overrides.append(f"encoder.backend={args.encoder_backend}")
    if args.whole_text:
        overrides.append("input.require_think=false")
    return load_params(args.config, overrides)


def out_dir(value: str | None) -> Path | None:
    """The ``--out`` folder, checked before any work: it must not be an existing file."""
    if value is None:
        return None
    out = Path(value)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {value}: exists and is not a directory")
    return out

