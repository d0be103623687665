"""Sampling defaults in one home (issue 25, item 1): thinkprobe/generate/defaults.py, which the schema reads, the
samplers use and no caller repeats as a `.get(key, literal)` fallback; and `trajectories.sampling.max_tokens: null`
(the room left in the context) planned and checked, with the planner counting the expected continuation length,
not the cap."""

from __future__ import annotations

import re

import pytest

from tests.workflow_helpers import REPO, default_config

pytestmark = pytest.mark.fast


def _schema():
    from thinkprobe.config import load_schema

    return load_schema(REPO / "config" / "schema.yaml")


def _validated(cfg):
    from thinkprobe.config import validate_config

    return validate_config(cfg, _schema())


def test_the_schema_reads_the_sampling_defaults_from_their_home():
    from thinkprobe.generate import defaults as d
    from thinkprobe.trajectories.sampling import SamplingConfig

    props = _schema()["properties"]
    traj = props["trajectories"]["properties"]
    assert {k: traj[k]["default"] for k in d.TRAJECTORY_DEFAULTS} == d.TRAJECTORY_DEFAULTS
    assert {k: v["default"] for k, v in traj["sampling"]["properties"].items()} == d.TRAJECTORY_SAMPLING_DEFAULTS
    assert traj["forced"]["properties"]["max_tokens"]["default"] == d.FORCED_DEFAULTS["max_tokens"]
    coll = props["collection"]["properties"]["sampling"]["properties"]
    assert {k: v["default"] for k, v in coll.items()} == d.COLLECTION_SAMPLING_DEFAULTS
    # the raw schema file states none of them: one home, not two that a test keeps equal
    raw = (REPO / "config" / "schema.yaml").read_text()
    block = raw[raw.index("  trajectories:"):raw.index("  overwrite_protected:")]
    assert not re.search(r"^\s+(n|stride|max_tokens|temperature|top_p|prefixes_per_call): \{[^}]*default:", block, re.M)
    # the sampler's dataclass and the collection job read the same dicts
    s = SamplingConfig()
    assert (s.n, s.stride, s.temperature, s.top_p, s.max_tokens, s.seed, s.forced_max_tokens) == (
        d.TRAJECTORY_DEFAULTS["n"], d.TRAJECTORY_DEFAULTS["stride"], d.TRAJECTORY_SAMPLING_DEFAULTS["temperature"],
        d.TRAJECTORY_SAMPLING_DEFAULTS["top_p"], None, d.TRAJECTORY_SAMPLING_DEFAULTS["seed"],
        d.FORCED_DEFAULTS["max_tokens"])
    from thinkprobe.generate.unit_store import _sampling

    spec = _sampling({}, seed=1)
    assert (spec.temperature, spec.top_p, spec.max_tokens) == tuple(d.COLLECTION_SAMPLING_DEFAULTS[k] for k in
                                                                    ("temperature", "top_p", "max_tokens"))


def test_no_get_with_a_literal_fallback_anywhere_in_the_package():
    pattern = re.compile(r'\.get\("[a-z_]+", [0-9]')
    hits = [f"{p.relative_to(REPO)}:{i}: {line.strip()}" for p in sorted((REPO / "thinkprobe").rglob("*.py"))
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not hits, "\n".join(hits)


def _null_budget_study(max_model_len: int) -> dict:
    cfg = default_config()
    cfg["inputs"] = []
    cfg["models"]["smollm2"]["engine"]["max_model_len"] = max_model_len
    cfg["trajectories"]["sampling"] = {"temperature": 0.6, "top_p": 0.95, "max_tokens": None, "seed": 0}
    return _validated(cfg)


def test_a_study_with_max_tokens_null_is_planned_and_checked():
    from thinkprobe.study.planner import continuation_tokens, plan_study
    from thinkprobe.study.study_checks import check_study

    cfg = _null_budget_study(2048)
    assert cfg["trajectories"]["sampling"]["max_tokens"] is None
    assert check_study(cfg, REPO) == []  # no TypeError, no problem: a 256-token trace leaves room in 2,048
    plan = plan_study(cfg, REPO)
    row = next(r for r in plan.rows if r.rule == "traj_sample")
    assert row.tokens > 0
    # the expected continuation (the rest of the reasoning plus the answer), not the room left, is counted:
    # a 2,048 context and a 200,000 one give the same estimate when the trace is far from the context's end
    wide = plan_study(_null_budget_study(200_000), REPO)
    assert next(r for r in wide.rows if r.rule == "traj_sample").tokens == row.tokens
    k = 256  # the prior K: collection max_tokens of the trajectory set (256 in the default)
    traj = cfg["trajectories"]
    per_trace = continuation_tokens(k, n=traj["n"], stride=traj["stride"], limit=0, cap=None, window=2048,
                                    prompt=0, answer=cfg["planning"]["answer_tokens_prior"], forced=None)
    assert row.tokens == pytest.approx(per_trace * row.units, rel=0.05)


def test_max_tokens_null_that_leaves_no_room_is_a_config_error_naming_the_key():
    from thinkprobe.study.study_checks import check_study

    problems = check_study(_null_budget_study(300), REPO)  # a 256-token trace + the 64-token answer > 300
    assert any("trajectories smollm2 x gsm8k_demo" in p and "trajectories.sampling.max_tokens null" in p
               and "models.smollm2.engine.max_model_len = 300" in p for p in problems), problems


def test_a_decoding_with_a_budget_is_checked_with_its_own_budget():
    from thinkprobe.study.study_checks import check_study

    cfg = default_config()
    cfg["inputs"] = []
    cfg["models"]["smollm2"]["engine"]["max_model_len"] = 1024
    cfg["trajectories"]["sampling"]["max_tokens"] = None
    cfg["trajectories"]["decodings"] = {"long": {"max_tokens": 900}}
    problems = check_study(_validated(cfg), REPO)
    assert any("trajectories.decodings.long.max_tokens" in p and "continuation of 900" in p for p in problems), problems
