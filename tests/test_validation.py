"""Every config value validated before any job (issue 19, item 8): NaN and infinities, sampling overrides
at every level, names that must exist in another section, runs written as 1.0. Through the validator and the
real workflow's planning (dry runs: no job starts)."""

from __future__ import annotations

import json

import pytest

from thinkprobe.config import ConfigError, load_schema, validate_config
from thinkprobe.units import discover

from .workflow_helpers import REPO, default_config, make_workdir, snakemake

SCHEMA = load_schema(REPO / "config" / "schema.yaml")


def _check(edit) -> str:
    cfg = default_config()
    edit(cfg)
    with pytest.raises(ConfigError) as err:
        validate_config(cfg, SCHEMA)
    return str(err.value)


@pytest.mark.fast
@pytest.mark.parametrize("where, value", [
    (("analysis", "trajectory", "elab_percentile"), float("nan")),
    (("analysis", "segmentation", "max_thought_units"), float("inf")),
    (("trajectories", "tau"), float("nan")),
    (("trajectories", "sampling", "temperature"), float("-inf")),
    (("stats", "effect_small"), float("nan")),
])
def test_nan_and_infinities_are_rejected_naming_the_key(where, value):
    def edit(cfg):
        node = cfg
        for k in where[:-1]:
            node = node.setdefault(k, {})
        node[where[-1]] = value

    msg = _check(edit)
    assert f"{'.'.join(where)} = {value!r} is not allowed" in msg


@pytest.mark.fast
@pytest.mark.parametrize("old, new, value", [
    (("units",), "grid", {"models": [], "runs": [1]}),
    (("analysis", "segmentation", "max_units"), "analysis.segmentation.max_thought_units", 4000),
    (("analysis", "texttiling", "max_unit_sentences"), "analysis.texttiling.max_tu_sentences", 20),
])
def test_a_renamed_key_is_refused_naming_its_new_name(old, new, value):
    """Issue 27, one name per role: an old key is no alias; the error names it, its new name and the migration
    note, and the rest of the config is still checked in the same run."""
    def edit(cfg):
        node = cfg
        for k in old[:-1]:
            node = node.setdefault(k, {})
        node.pop(new.rsplit(".", 1)[-1], None)
        node[old[-1]] = value
        cfg["trajectories"] = {**cfg.get("trajectories", {}), "tau": float("nan")}  # another problem

    msg = _check(edit)
    assert f"{'.'.join(old)}: this key is now {new}; rename it in the config" in msg
    assert "docs/changes.md" in msg and (REPO / "docs" / "changes.md").read_text().startswith("# Changes")
    assert "Renames (issue 27)" in (REPO / "docs" / "changes.md").read_text()
    assert "trajectories.tau = nan is not allowed" in msg  # reported together with the rename
    assert "Additional properties" not in msg  # the old key is named once, by its rename


@pytest.mark.fast
def test_a_renamed_analysis_key_is_refused_by_params_too():
    """thinkprobe analyze reads analysis parameters without the workflow schema: the same error there."""
    from thinkprobe.params import Params, ParamsError

    with pytest.raises(ParamsError, match=r"analysis\.segmentation\.max_units: this key is now "
                                          r"analysis\.segmentation\.max_thought_units"):
        Params.from_dict({"segmentation": {"max_units": 10}})
    assert Params.from_dict({"segmentation": {"max_thought_units": 10}}).segmentation.max_thought_units == 10


@pytest.mark.fast
def test_sampling_overrides_are_validated_at_every_level():
    msg = _check(lambda c: c["collection"]["jobs"][1]["sampling"].update(temperature=-0.5))
    assert "collection.jobs.1.sampling.temperature = -0.5 is not allowed: must be > 0" in msg
    msg = _check(lambda c: c["collection"]["jobs"][1]["sampling"].update(temprature=0.7))
    assert "collection.jobs.1.sampling" in msg and "'temprature' was unexpected" in msg
    msg = _check(lambda c: c["models"]["smollm2"].update(sampling={"top_p": 1.5, "max_token": 3}))
    assert "models.smollm2.sampling.top_p = 1.5 is not allowed: must be <= 1" in msg
    assert "'max_token' was unexpected" in msg
    ok = default_config()
    ok["models"]["smollm2"]["sampling"] = {"temperature": 0.7, "stop": ["</answer>"]}
    validate_config(ok, SCHEMA)  # the same keys as collection.sampling pass


@pytest.mark.engine
@pytest.mark.workflow
def test_names_that_must_exist_elsewhere_stop_planning(tmp_path):
    cfg = default_config()
    cfg["grid"] = {"models": ["smollm2", "smolm2"]}  # a typo, with collection supplying the grid
    proc = snakemake(make_workdir(tmp_path / "a", cfg), "-n", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "grid.models: ['smolm2'] name no model of the inputs" in out
    assert "collected model (collection.jobs: ['smollm2'])" in out
    cfg = default_config()
    cfg["question_sets"]["extra"] = {"source": "builtin", "limit": 1}
    cfg["trajectories"]["question_sets"] = ["gsm8k_demo", "extra"]
    proc = snakemake(make_workdir(tmp_path / "b", cfg), "-n", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "trajectories: smollm2 x extra is not collected" in out
    assert "MissingInputException" not in out


@pytest.mark.fast
def test_a_run_written_1_0_is_run_1(tmp_path):
    src = tmp_path / "runs.jsonl"
    recs = [{"id": "a", "model": "m", "question_id": "q", "run": 1.0, "text": "<think>x y z.</think>"},
            {"id": "b", "model": "m", "question_id": "q", "run": 1, "text": "<think>x y z w.</think>"},
            {"id": "c", "model": "m", "question_id": "q", "run": 2.0, "text": "<think>x.</think>"}]
    src.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    found = discover([{"path": str(src), "question_set": "s"}])
    assert found.runs == ["1", "2"]
    assert [p.reason for p in found.problems] == ["duplicate unit m/s/q/1: already taken from " +
                                                  f"{src}:1"]
    found = discover([{"path": str(src), "question_set": "s"}], runs=[1.0])
    assert found.runs == ["1"] and len(found.records) == 1
