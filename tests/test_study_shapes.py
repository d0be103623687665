"""Any study shape scales (issue 32, item 6; DESIGN.md section 4, rule 7): the analysis runs one job per batch of
units, so the DAG grows with batches, not questions, whether the units come from many models on few questions
(the trajectories paper: 16 models) or from one model on many questions (tests/paper_studies.py: one_model_config).

Each shape is dry-run at two sizes, four times apart: its analysis jobs are exactly its batches (3 per batch: one
model's units of resources.batch_questions questions), equal to the planner's count, and far fewer than its
questions. The full-size timings (75,000 units of each shape) are in bench/README.md (bench/dag_bench.py)."""

from __future__ import annotations

import math

import pytest

from tests.paper_studies import paper_study
from tests.workflow_helpers import job_counts, snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

ANALYSIS = ("segment", "graph", "metrics")


def _dry_run(wd, study) -> dict[str, int]:
    return job_counts(snakemake(wd, "-n", "--configfile", str(study)).stdout)


def _planned_analysis(wd, study) -> int:
    from thinkprobe.study.planner import plan_study, study_config

    return sum(r.jobs for r in plan_study(study_config([study], wd), wd).rows if r.rule == "analysis")


def test_one_model_on_many_questions_plans_one_analysis_job_per_batch_and_stage(tmp_path):
    """1 model x 2,000 and x 8,000 questions (1 run): 3 x 20 and 3 x 80 analysis jobs (100 questions a batch),
    not 3 per question; the collection jobs grow with batches too (200 questions each)."""
    seen = {}
    for units in (2000, 8000):
        study, n = paper_study(tmp_path / f"wd{units}", "one-model", units)
        counts = _dry_run(study.parent, study)
        assert {r: counts[r] for r in ANALYSIS} == {r: units // 100 for r in ANALYSIS}, counts
        assert counts["collect"] == units // 200
        assert _planned_analysis(study.parent, study) == sum(counts[r] for r in ANALYSIS)
        seen[units] = sum(counts.values())
    assert seen[8000] <= 4 * seen[2000] and seen[8000] < 8000 / 20  # grows with batches, far below one per unit


def test_many_models_on_few_questions_plans_one_analysis_job_per_model_batch_and_stage(tmp_path):
    """The trajectories paper's 16 models, cut to ~2,000 and ~8,000 units: per model and question set,
    ceil(questions / 200) batches (its resources.batch_questions), equal to the planner's count."""
    for units in (2000, 8000):
        study, n = paper_study(tmp_path / f"wd{units}", "trajectories-paper", units)
        import yaml

        cfg = yaml.safe_load(study.read_text())
        size = cfg["resources"]["batch_questions"]
        models = {j["model"] for j in cfg["collection"]["jobs"]}
        per_model = sum(math.ceil(spec["limit"] / size) for spec in cfg["question_sets"].values())
        counts = _dry_run(study.parent, study)
        assert {r: counts[r] for r in ANALYSIS} == {r: len(models) * per_model for r in ANALYSIS}, counts
        assert _planned_analysis(study.parent, study) == sum(counts[r] for r in ANALYSIS)
        assert sum(counts[r] for r in ANALYSIS) < n / 10


@pytest.mark.parametrize("shape, models", [("one-model-imported", 1), ("sixteen-models-imported", 16)])
def test_imported_traces_plan_one_import_job_per_analysis_batch(tmp_path, shape, models):
    """Both shapes with their traces on disk (tests/paper_studies.py: imported_config), ~2,000 units: one
    import_traces job per analysis batch (a model's resources.batch_questions questions), not one per question
    (issue 32, item 6: 1 model x 2,000 questions planned 2,000 import jobs before)."""
    import yaml

    study, n = paper_study(tmp_path / "wd", shape, 2000)
    size = yaml.safe_load(study.read_text())["resources"]["batch_questions"]
    counts = _dry_run(study.parent, study)
    batches = models * math.ceil(n // models / size)
    assert {r: counts[r] for r in ("import_traces", *ANALYSIS)} == {r: batches for r in ("import_traces", *ANALYSIS)}
    assert counts["import_traces"] < n // models, counts  # fewer than one per question
