"""Where thinkprobe keeps what it builds once and reuses: ``$THINKPROBE_CACHE``, else ``~/.cache/thinkprobe``.

A leaf of the core, so that every layer can name the cache: the converted built-in models
(:mod:`thinkprobe.generate.models`, ``<cache>/models/``) and the git clones of the corpus inputs
(:mod:`thinkprobe.corpus_git`, ``<cache>/git/``) live under it.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """``cache_dir`` when given, else ``$THINKPROBE_CACHE``, else ``~/.cache/thinkprobe``."""
    if cache_dir:
        return Path(cache_dir)
    root = os.environ.get("THINKPROBE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "thinkprobe")
    return Path(root)
