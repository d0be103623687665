"""The reference a trace page scores a trace's 19 metrics against: mean and standard deviation per metric.

A page shows each metric as a z-score ``z_m = (x_m - mean_m) / sd_m`` (population sd, as the 5D-CP of
paper §3.5, eq. 1, standardises) and the trace's 5D-CP as the mean z-score of each dimension's metrics.
The reference is the study's own ``results/tables/metrics.parquet`` when there is one (the z-scores are then
exactly the study's), else the bundled reference profile ``reference.json``: the mean and sd of the 500
DeepSeek-R1-distill traces of the corpus study (five models, 100 shared prompts), written by::

    thinkprobe analyze reasoning_comparison_deepseek-r1-distill-*.json --out DIR
    python -m thinkprobe.view.reference DIR/metrics.parquet thinkprobe/view/reference.json

A metric whose reference sd is 0 scores 0, as in :func:`thinkprobe.profile.zscores`.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Mapping

from ..vocabulary import METRIC_NAMES

BUNDLED = Path(__file__).with_name("reference.json")
CODE_DATA = ("view/reference.json",)  # read at run time: part of the code hash of the pages (thinkprobe.codedeps)


def reference_from_table(metrics, name: str) -> dict[str, Any]:
    """Mean and population sd of every metric over the rows of a metrics table (a pandas DataFrame)."""
    cols = [m for m in METRIC_NAMES if m in metrics.columns]
    values = metrics[cols].astype(float)
    mean, sd = values.mean(axis=0), values.std(axis=0, ddof=0)
    return {"name": name, "n": int(len(metrics)),
            "metrics": {m: {"mean": float(mean[m]), "sd": float(sd[m])} for m in cols}}


def bundled_reference() -> dict[str, Any]:
    """The bundled reference profile (see the module docstring for the command that wrote it)."""
    return json.loads(BUNDLED.read_text(encoding="utf-8"))


def study_reference(path: str | Path) -> dict[str, Any]:
    """The reference of a study's metrics table (``results/tables/metrics.parquet``)."""
    import pandas as pd

    return reference_from_table(pd.read_parquet(path), f"the metrics table {path}")


def zscore(value: float | None, ref: Mapping[str, float] | None) -> float | None:
    """``(value - mean) / sd``; 0 for a reference sd of 0; None when the value or the reference is missing."""
    if value is None or ref is None or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    sd = float(ref["sd"])
    return 0.0 if not sd > 0 else (float(value) - float(ref["mean"])) / sd


def main(argv: list[str] | None = None) -> int:
    """``python -m thinkprobe.view.reference METRICS_PARQUET OUT_JSON [NAME]``: write a reference profile."""
    import pandas as pd

    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        print(main.__doc__, file=sys.stderr)
        return 2
    table = pd.read_parquet(args[0])
    name = args[2] if len(args) == 3 else "bundled reference: 500 DeepSeek-R1-distill traces of the corpus study"
    ref = reference_from_table(table, name)
    Path(args[1]).write_text(json.dumps(ref, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{args[1]}: reference of {ref['n']} traces, {len(ref['metrics'])} metrics")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
