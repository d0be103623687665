"""Re-taking a results snapshot: rerun the corpus study, its ablation sets, the snapshot and every page.

    thinkprobe summary --retake docs/results/corpus-study --corpus CORPUS_DIR

It sits above both :mod:`.snapshot` (what a snapshot holds) and :mod:`thinkprobe.stats.page_blocks` (the
documentation blocks rendered from a snapshot), so that neither imports the other back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..stats.page_blocks import DEFAULT_PAGES, update_pages
from .snapshot import DEFAULT_SNAPSHOT, STUDY_CONFIG, run_ablation_sets, snapshot, study_override


def retake(dest: str | Path = DEFAULT_SNAPSHOT, corpus: str | Path | None = None, cores: int = 2,
           configfiles: tuple[str, ...] = (), results: str | Path = "results", run_study: bool = True,
           pages: tuple[str, ...] | None = None, keep_inputs: bool = False) -> dict[str, Any]:
    """Re-take a snapshot: the corpus study (``snakemake stats --cores N --configfile config/corpus-study.yaml
    [configfiles]``), the ablation sets (``corpus`` needed), the snapshot itself (replaced) and every generated
    page; returns the timings. With ``corpus`` and neither ``configfiles`` nor ``keep_inputs``, the study's
    inputs are read from the corpus folder (:func:`.snapshot.study_override`); ``keep_inputs`` keeps the study
    config's own (a config that fetches its corpus itself)."""
    if corpus is None:
        raise ValueError("--retake needs --corpus DIR: the ablation sets of the snapshot are read from the corpus "
                         "folder (with --keep-inputs the study keeps its config's own inputs)")
    timings: dict[str, Any] = {}
    t_all = time.perf_counter()
    cfgs = list(configfiles)
    with tempfile.TemporaryDirectory(prefix="thinkprobe-retake-") as tmp:
        if not configfiles and not keep_inputs:
            cfgs = [str(study_override(corpus, Path(tmp) / "corpus-inputs.yaml"))]
        # the target first: --configfile takes every word after it
        command = ["snakemake", "stats", "--cores", str(cores), "--configfile", STUDY_CONFIG, *cfgs]
        if run_study:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", *command], check=True)
            timings["study_s"] = round(time.perf_counter() - t0, 1)
        sets_dir = Path(tmp) / "sets"
        timings["ablation_sets_s"] = run_ablation_sets(corpus, sets_dir)
        t0 = time.perf_counter()
        shown = " ".join(["snakemake", "stats", "--cores", str(cores), "--configfile", STUDY_CONFIG])
        snapshot(results, dest, shown, replace=True, sets_dir=sets_dir, corpus=corpus,
                 extra={"retake": f"thinkprobe summary --retake {dest} --corpus CORPUS_DIR", "timings": timings,
                        "load_average": _load()})
        n = update_pages(pages or DEFAULT_PAGES)
        timings["snapshot_and_pages_s"] = round(time.perf_counter() - t0, 1)
    timings["total_s"] = round(time.perf_counter() - t_all, 1)
    timings["pages_blocks"] = n
    return timings


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"
