"""The shipped paper configs as a dry run sees them at full size (or scaled to a number of units), with only their
question sets' sources replaced by local files, so that planning never needs the network (tests/test_dag_scale.py,
bench/dag_bench.py).

Everything else is the shipped config: models, collection jobs and batches, trajectories, resources. A question
set's source becomes the shared corpus's benchmark file when it is here (the paper's own split), else a generated
file with the same number of questions (GSM8K format: planning does not read the questions' content). The config
is written whole (question_sets replaced, not merged), so it holds whatever keys the shipped config uses to name
its data.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("THINKPROBE_CORPUS", REPO.parent / "shared" / "corpus"))

# the trajectories paper's sets: (source, corpus file, extra spec keys, questions in the official split)
TRAJ_SETS = {
    "gsm8k": ("gsm8k", "benchmarks/gsm8k/test.jsonl", {}, 1319),
    "svamp": ("svamp", "benchmarks/svamp/SVAMP.json", {}, 1000),
    "math": ("math", "benchmarks/math-evaluation-harness/data/math/test.jsonl", {"math_type": "Algebra"}, 1187),
    "arc": ("arc", "benchmarks/arc-challenge-skywork/data/arc/test.jsonl", {}, 1172),
}
FULL_UNITS = {"thinkprobe-paper": 4200, "trajectories-paper": 74848, "one-model": 75000,
              "one-model-imported": 75000, "sixteen-models-imported": 75008}
# the imported shapes (issue 32, item 6: import jobs grouped by analysis batch): models, questions at full size
IMPORTED_SHAPES = {"one-model-imported": (1, 75000), "sixteen-models-imported": (16, 4688)}


def _gsm8k_file(path: Path, n: int, tag: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"question": f"{tag} question {i}: what is {i} + {i}?", "answer": f"#### {2 * i}"}) + "\n")
    return path


def _open_file(path: Path, n: int) -> Path:
    """``n`` open-ended questions: the packaged 200, repeated under new ids (planning reads ids and texts only)."""
    from thinkprobe.generate.questions import builtin_path

    base = [json.loads(line) for line in builtin_path().read_text(encoding="utf-8").splitlines() if line.strip()]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            rec = base[i % len(base)]
            fh.write(json.dumps({**rec, "id": f"{rec['id']}-r{i // len(base)}"}) + "\n")
    return path


def one_model_config(questions: int, data: Path) -> dict:
    """The other study shape (issue 32, item 6): one model on one large question set, 1 run per question, e.g. a
    new model evaluated on a 75,000-item benchmark. The ThinkProbe paper's config cut to its first model, with
    ``questions`` generated open questions, collected 200 per job (one engine start each)."""
    cfg = yaml.safe_load((REPO / "config" / "thinkprobe-paper.yaml").read_text())
    model = next(iter(cfg["models"]))
    cfg["models"] = {model: cfg["models"][model]}
    cfg["question_sets"] = {"bench": {"source": "open", "path": str(_open_file(data / "bench.jsonl", questions))}}
    cfg["collection"].update(jobs=[{"model": model, "question_set": "bench"}], runs=1, batch_questions=200)
    return cfg


def imported_config(models: int, questions: int, data: Path) -> dict:
    """A study of traces already on disk (no collection, no trajectories): ``models`` models x ``questions``
    questions x 1 run, one generated JSONL trace file (each record a short reasoning trace), imported by the
    ``import_traces`` jobs. Over the embedded default (its collection jobs and trajectories switched off), with the
    schema's 100 questions per analysis batch (the embedded default's 10 are sized for its demo set)."""
    data.mkdir(parents=True, exist_ok=True)
    path = data / "traces.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for m in range(models):
            for q in range(questions):
                fh.write(json.dumps({"id": f"m{m:02d}-q{q:05d}", "model": f"m{m:02d}", "run": 1,
                                     "question_id": f"q{q:05d}",
                                     "text": "<think>First I read the question. Then I check it.</think> 42"}) + "\n")
    return {"inputs": [{"path": str(path), "question_set": "bench"}], "collection": {"jobs": []},
            "trajectories": {"enabled": False}, "resources": {"batch_questions": 100}}  # the schema's default


def paper_study(workdir: Path, name: str, units: int | None = None) -> tuple[Path, int]:
    """A working directory holding ``config/config.yaml`` (the embedded default) and ``study.yaml``: the paper
    config ``name`` with local question sets (or ``one-model``: :func:`one_model_config`; ``one-model-imported``,
    ``sixteen-models-imported``: :func:`imported_config`), at full size or scaled
    to about ``units``. Returns the study config's
    path and its number of units (models x questions x runs, as collected)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config").mkdir(exist_ok=True)
    (workdir / "config" / "config.yaml").write_text((REPO / "config" / "config.yaml").read_text())
    if not (workdir / "examples").exists():
        (workdir / "examples").symlink_to(REPO / "examples")
    data = workdir / "data"
    if name in IMPORTED_SHAPES:
        models, questions = IMPORTED_SHAPES[name]
        if units:
            questions = max(1, round(units / models))
        study = workdir / "study.yaml"
        study.write_text(yaml.safe_dump(imported_config(models, questions, data), sort_keys=False))
        return study, models * questions
    if name == "one-model":
        total = units or FULL_UNITS[name]
        cfg = one_model_config(total, data)
        study = workdir / "study.yaml"
        study.write_text(yaml.safe_dump(cfg, sort_keys=False))
        return study, total
    cfg = yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())
    jobs = cfg["collection"]["jobs"]
    if name == "trajectories-paper":
        per_model = {qset: sum(1 for j in jobs if j["question_set"] == qset) for qset in TRAJ_SETS}
        full = sum(per_model[q] * n for q, (_, _, _, n) in TRAJ_SETS.items())
        scale = 1.0 if units is None else min(1.0, units / full)
        sets, total = {}, 0
        for qset, (source, rel, extra, n) in TRAJ_SETS.items():
            limit = n if units is None else max(1, round(n * scale))
            if (CORPUS / rel).exists():
                sets[qset] = {"source": source, "path": str(CORPUS / rel), **extra}
            else:
                sets[qset] = {"source": "gsm8k", "path": str(_gsm8k_file(data / f"{qset}.jsonl", n, qset))}
            if limit < n:
                sets[qset]["limit"] = limit
            total += per_model[qset] * limit
        cfg["question_sets"] = sets
    else:  # thinkprobe paper: 7 models x the 200 built-in open questions x 3 runs; scaled: generated questions
        runs = int(cfg["collection"]["runs"])
        questions = 200 if units is None else max(1, round(units / (len(jobs) * runs)))
        if questions != 200:
            cfg["question_sets"] = {"open200": {"source": "open", "path": str(_open_file(data / "open.jsonl",
                                                                                         questions))}}
        total = len(jobs) * runs * questions
    study = workdir / "study.yaml"
    study.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return study, total
