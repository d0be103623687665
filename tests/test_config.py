"""Every paper constant is a config key with the paper's value as default, validated by the schema."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from thinkprobe.config import ConfigError, load_schema, validate_config
from thinkprobe.vocabulary import DIMENSION_MAPS
from thinkprobe.params import Params, ParamsError, load_params, parameter_specs

from .workflow_helpers import REPO

pytestmark = pytest.mark.fast

SCHEMA = load_schema(REPO / "config" / "schema.yaml")
CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())

def _config() -> dict:
    """The shipped config with every analysis section written out (the file states only what it changes)."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    given = cfg.get("analysis") or {}
    cfg["analysis"] = {s: {**v, **(given.get(s) or {})} for s, v in Params().to_dict().items()}
    return cfg


# The constants the paper states (section 3.4-3.5), spelled out here independently of the code.
PAPER = {
    ("segmentation", "branch_header_max_tokens"): 12,
    ("segmentation", "min_span_sentences"): 2,
    ("segmentation", "min_span_tokens"): 30,
    ("texttiling", "window"): 3,
    ("texttiling", "prominence"): 0.15,
    ("texttiling", "threshold_percentile"): 30,
    ("trajectory", "branch_percentile"): 25,
    ("trajectory", "elab_percentile"): 65,
    ("cross_segment", "synthesis_similarity"): 0.50,
    ("cross_segment", "synthesis_min_segments"): 2,
    ("cross_segment", "revision_min_index"): 4,
    ("cross_segment", "revision_min_gap"): 4,
    ("cross_segment", "revision_divergence_window"): 4,
    ("cross_segment", "revision_divergence_similarity"): 0.45,
    ("cross_segment", "revision_similarity"): 0.65,
    ("classification", "reframe_min_similarity"): 0.25,
    ("classification", "reframe_max_similarity"): 0.72,
    ("metrics", "domain_spread_similarity"): 0.45,
    ("metrics", "first_ideas"): 3,
    ("metrics", "redundancy_similarity"): 0.75,
    ("encoder", "model"): "all-MiniLM-L6-v2",
}


def test_paper_constants_are_the_library_defaults():
    p = Params().to_dict()
    for (section, key), value in PAPER.items():
        assert p[section][key] == value, f"{section}.{key}"


def test_config_yaml_and_schema_defaults_mirror_params_key_for_key():
    params = Params().to_dict()
    for section, values in (CONFIG.get("analysis") or {}).items():  # the shipped config states only changes
        for key, value in values.items():
            assert params[section][key] != value, f"config.yaml repeats the default of analysis.{section}.{key}"
    schema_analysis = SCHEMA["properties"]["analysis"]["properties"]
    assert set(schema_analysis) == set(params)
    for section, values in params.items():
        props = schema_analysis[section]["properties"]
        assert set(props) == set(values), section
        for key, value in values.items():
            assert props[key]["default"] == value, f"{section}.{key}"


SCHEMA_TYPES = {"int": "integer", "float": "number", "bool": "boolean", "str": "string"}


def test_schema_and_params_agree_on_every_key_default_type_and_bounds():
    """One source of truth: every analysis key's default, type, minimum, maximum and choices, key by key."""
    schema_analysis = SCHEMA["properties"]["analysis"]["properties"]
    specs = parameter_specs()
    assert set(schema_analysis) == set(specs)
    for section, keys in specs.items():
        props = schema_analysis[section]["properties"]
        assert set(props) == set(keys), section
        for key, spec in keys.items():
            prop, where = props[key], f"{section}.{key}"
            assert prop["default"] == spec["default"], where
            if (section, key) == ("profile", "dimensions"):
                assert prop["oneOf"][0]["enum"] == list(DIMENSION_MAPS), where
                continue
            if spec["choices"]:
                assert prop["enum"] == list(spec["choices"]) and "type" not in prop, where
            else:
                assert prop["type"] == SCHEMA_TYPES[spec["type"]], where
            assert prop.get("minimum") == spec["minimum"], where
            assert prop.get("maximum") == spec["maximum"], where


@pytest.mark.parametrize("override", ["cross_segment.revision_similarity=1.5", "texttiling.prominence=-0.1",
                                      "metrics.redundancy_similarity=-2", "texttiling.window=0",
                                      "trajectory.elab_percentile=101", "encoder.backend=gpu"])
def test_values_the_schema_refuses_are_refused_by_the_cli_too(override):
    section, rest = override.split(".", 1)
    key, raw = rest.split("=")
    cfg = _config()
    cfg["analysis"][section][key] = yaml.safe_load(raw)
    with pytest.raises(ConfigError):
        validate_config(cfg, SCHEMA)
    with pytest.raises(ParamsError, match=f"{section}.{key}"):
        load_params(None, [override])


def test_profile_dimension_map_is_validated():
    assert Params.from_dict({"profile": {"dimensions": "app_g"}}).profile.dimensions == "app_g"
    custom = {"Breadth": ["BF", "DS"], "Economy": ["RR"]}
    assert Params.from_dict({"profile": {"dimensions": custom}}).profile.dimensions == custom
    for bad, message in [("paper", "not a dimension map"), ({"Breadth": ["XX"]}, "unknown metric 'XX'"),
                         ({"A": ["BF"], "B": ["BF"]}, "is in both"), ({"A": []}, "non-empty list")]:
        with pytest.raises(ParamsError, match=message):
            Params.from_dict({"profile": {"dimensions": bad}})
    cfg = _config()
    cfg["analysis"]["profile"]["dimensions"] = {"Breadth": ["BF", "BF"]}
    with pytest.raises(ConfigError):
        validate_config(cfg, SCHEMA)


def test_empty_analysis_section_gets_paper_defaults():
    filled = validate_config({"inputs": [{"path": "x", "question_set": "s"}]}, SCHEMA)
    assert Params.from_dict(filled["analysis"]) == Params()
    assert filled["resources"]["batch_questions"] == 100 and filled["grid"]["models"] == []


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["analysis"]["texttiling"].update(window=0), "analysis.texttiling.window = 0 is not allowed: must be >= 1"),
    (lambda c: c["analysis"]["trajectory"].update(branch_percentile="low"),
     "analysis.trajectory.branch_percentile = 'low' is not allowed: must be of type number"),
    (lambda c: c["analysis"]["cross_segment"].update(revision_similarity=1.5),
     "analysis.cross_segment.revision_similarity = 1.5 is not allowed: must be <= 1"),
    (lambda c: c["analysis"]["metrics"].update(unknown=1), "analysis.metrics: Additional properties"),
    (lambda c: c.update(inputs="traces.jsonl"), "inputs = 'traces.jsonl' is not allowed: must be of type array"),
    (lambda c: c["inputs"][0].pop("question_set"), "'question_set' is a required property"),
    (lambda c: c["analysis"]["trajectory"].update(branch_percentile=80, elab_percentile=70),
     "branch_percentile must not exceed elab_percentile"),
])
def test_invalid_values_are_named_with_what_is_allowed(edit, message):
    cfg = _config()
    edit(cfg)
    with pytest.raises(ConfigError) as info:
        validate_config(cfg, SCHEMA, "config.yaml")
    assert message in str(info.value)


def test_cli_parameter_overrides_and_errors(tmp_path):
    p = load_params(None, ["trajectory.elab_percentile=70", "texttiling.enabled=false"])
    assert p.trajectory.elab_percentile == 70.0 and p.texttiling.enabled is False
    cfg = tmp_path / "c.yaml"
    cfg.write_text("analysis:\n  metrics:\n    redundancy_similarity: 0.8\n")
    assert load_params(str(cfg)).metrics.redundancy_similarity == 0.8
    with pytest.raises(ParamsError, match="unknown key"):
        load_params(None, ["trajectory.elab=70"])
    with pytest.raises(ParamsError, match="expected section.key=value"):
        load_params(None, ["elab_percentile=70"])
    with pytest.raises(ParamsError, match="is not a number"):
        load_params(None, ["trajectory.elab_percentile=high"])


def test_params_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Params().trajectory.elab_percentile = 1  # type: ignore[misc]


def test_each_section_check_is_the_one_its_schema_block_names():
    """The models' and the statistics' checks are named by their schema blocks (``x-checks-from``), so the
    configuration layer imports neither; a name that does not resolve is an error naming the block."""
    from thinkprobe.config import CHECKS_FROM, declared_checks

    assert SCHEMA["properties"]["models"][CHECKS_FROM] == "thinkprobe.generate.model_checks.config_problems"
    assert SCHEMA["properties"]["stats"][CHECKS_FROM] == "thinkprobe.stats.config_checks.config_problems"
    broken = {"properties": {"stats": {CHECKS_FROM: "thinkprobe.stats.config_checks.no_such_check"}}}
    with pytest.raises(ConfigError, match=r"stats: x-checks-from 'thinkprobe.stats.config_checks.no_such_check'"):
        declared_checks({}, broken)
    with pytest.raises(ConfigError, match=r"stats.permutations = 10: .*permutation_mcse_max = 0.01"):
        validate_config({"stats": {"permutations": 10, "permutation_mcse_max": 0.01}}, SCHEMA)
