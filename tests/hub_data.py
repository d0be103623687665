"""A Hugging Face dataset cache built from the shared corpus's benchmark files, in the hub's layout.

No hub is reachable from the test machines, so the four benchmarks of the trajectories paper are written as
their hub repositories hold them (Parquet files, the fields and the configs of the paper config's hub ids)
and put into a cache with :func:`thinkprobe.generate.hub.import_folder` (``datasets--org--name/snapshots/
<commit>/...``, ``refs/main``). The layouts are the hub's as we know them; each repository exercises one way
of finding a split (a dataset card's ``configs:`` block, or the usual folder layout):

* ``openai/gsm8k``: card with configs ``main``; ``main/test-00000-of-00001.parquet`` (question, answer).
* ``ChilleD/SVAMP``: no card; ``data/train-...parquet`` (the first 700 of SVAMP.json) and ``data/test-...``
  (the last 300), fields ID, Body, Question, Equation, Answer (a float), Type.
* ``EleutherAI/hendrycks_math``: card with one config per subject; ``algebra/test-...`` and
  ``geometry/test-...`` (problem, level, type, solution; no ``idx``).
* ``allenai/ai2_arc``: card with ``ARC-Challenge``; ``ARC-Challenge/test-...`` (id, question, choices
  {text, label}, answerKey), converted from the skywork copy of ARC-Challenge.
"""

from __future__ import annotations

import json
from pathlib import Path

HUB_IDS = {"gsm8k": "openai/gsm8k", "svamp": "ChilleD/SVAMP", "math": "EleutherAI/hendrycks_math",
           "arc": "allenai/ai2_arc"}
# the paper config's specs, path-based twins (relative to the corpus's benchmarks/ folder)
PATHS = {"gsm8k": "gsm8k/test.jsonl", "svamp": "svamp/SVAMP.json",
         "math": "math-evaluation-harness/data/math/test.jsonl", "arc": "arc-challenge-skywork/data/arc/test.jsonl"}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _parquet(rows: list[dict], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def _card(configs: dict[str, dict[str, str]]) -> str:
    import yaml

    block = [{"config_name": name, "data_files": [{"split": s, "path": p} for s, p in splits.items()]}
             for name, splits in configs.items()]
    return "---\n" + yaml.safe_dump({"configs": block}, sort_keys=False) + "---\n# a dataset card\n"


def write_gsm8k(benchmarks: Path, folder: Path) -> None:
    rows = [{"question": r["question"], "answer": r["answer"]} for r in _jsonl(benchmarks / PATHS["gsm8k"])]
    _parquet(rows, folder / "main" / "test-00000-of-00001.parquet")
    (folder / "README.md").write_text(_card({"main": {"test": "main/test-*"}}))


def write_svamp(benchmarks: Path, folder: Path) -> None:
    rows = [{k: r[k] for k in ("ID", "Body", "Question", "Equation", "Type")} | {"Answer": float(r["Answer"])}
            for r in json.loads((benchmarks / PATHS["svamp"]).read_text(encoding="utf-8"))]
    _parquet(rows[:700], folder / "data" / "train-00000-of-00001.parquet")
    _parquet(rows[700:], folder / "data" / "test-00000-of-00001.parquet")


def write_math(benchmarks: Path, folder: Path) -> None:
    rows = _jsonl(benchmarks / PATHS["math"])
    configs = {}
    for subject, kind in (("algebra", "Algebra"), ("geometry", "Geometry")):
        _parquet([{k: r[k] for k in ("problem", "level", "type", "solution")} for r in rows if r["type"] == kind],
                 folder / subject / "test-00000-of-00001.parquet")
        configs[subject] = {"test": f"{subject}/test-*"}
    (folder / "README.md").write_text(_card(configs))


def write_arc(benchmarks: Path, folder: Path) -> None:
    rows = []
    for r in json.loads((benchmarks / PATHS["arc"]).read_text(encoding="utf-8")):
        labels = [str(x) for x in r["label"]]
        rows.append({"id": r["id"], "question": r["question"],
                     "choices": {"text": [r[x] for x in labels], "label": labels}, "answerKey": r["answer"]})
    _parquet(rows, folder / "ARC-Challenge" / "test-00000-of-00001.parquet")
    (folder / "README.md").write_text(_card({"ARC-Challenge": {"test": "ARC-Challenge/test-*"}}))


WRITERS = {"gsm8k": write_gsm8k, "svamp": write_svamp, "math": write_math, "arc": write_arc}


def build_cache(benchmarks: Path, cache: Path, work: Path, sets=tuple(WRITERS)) -> dict[str, tuple[str, str]]:
    """Write each set's repository under ``work`` and import it into ``cache``; set -> (hub id, commit)."""
    from thinkprobe.generate.hub import import_folder

    out = {}
    for name in sets:
        folder = work / name
        WRITERS[name](benchmarks, folder)
        snap, commit = import_folder(folder, HUB_IDS[name], cache, repo_type="dataset")
        out[name] = (HUB_IDS[name], commit)
    return out


def paper_specs() -> dict[str, dict]:
    """The question_sets of config/trajectories-paper.yaml."""
    import yaml

    from tests.workflow_helpers import REPO

    return yaml.safe_load((REPO / "config" / "trajectories-paper.yaml").read_text())["question_sets"]
