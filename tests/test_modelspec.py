"""A model entry is parsed once, into a frozen ModelSpec (issue 34, item 2): its keys checked in one place, its
backend's defaults merged there, and what passes between jobs (rule params, stored identities) unchanged."""

from __future__ import annotations

import ast
import copy
import dataclasses
from pathlib import Path

import pytest
import yaml

from thinkprobe.config import ConfigError, load_schema, validate_config
from thinkprobe.generate import backends
from thinkprobe.generate.backends import Backend
from thinkprobe.generate.defaults import HTTP_DEFAULTS, MODEL_DEFAULTS, VLLM_ENGINE_DEFAULTS
from thinkprobe.generate.modelspec import ModelSpec, ModelSpecError, entry_problems, known_keys

pytestmark = pytest.mark.fast

REPO = Path(__file__).resolve().parents[1]
VLLM = {"backend": "vllm", "path": "smollm2", "engine": {"max_model_len": 2048, "block_size": 32},
        "sampling": {"stop": ["</answer>"]}}


def test_the_spec_is_frozen_and_hashable_and_equal_for_equal_entries():
    spec = ModelSpec.from_config("m", VLLM)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.path = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.engine["max_model_len"] = 4096  # type: ignore[index]
    with pytest.raises(AttributeError):
        spec.settings.update({"dtype": "half"})  # type: ignore[attr-defined]
    reordered = {"sampling": {"stop": ["</answer>"]}, "engine": {"block_size": 32, "max_model_len": 2048},
                 "path": "smollm2", "backend": "vllm"}
    assert ModelSpec.from_config("m", copy.deepcopy(VLLM)) == spec == ModelSpec.from_config("m", reordered)
    assert hash(ModelSpec.from_config("m", reordered)) == hash(spec) and len({spec, ModelSpec.from_config("m", VLLM)}) == 1
    assert ModelSpec.from_config("m", {**VLLM, "engine": {"max_model_len": 4096}}) != spec
    assert ModelSpec.from_config("n", VLLM) != spec


def test_the_backends_defaults_are_merged_in_the_spec_and_the_entry_keeps_its_form():
    spec = ModelSpec.from_config("m", VLLM)
    assert dict(spec.settings) == {**VLLM_ENGINE_DEFAULTS, **VLLM["engine"]} and spec.max_model_len == 2048
    assert spec.reasoning == MODEL_DEFAULTS["reasoning"] and spec.device == MODEL_DEFAULTS["device"]
    assert spec.gpus() == 1 and spec.identity_settings() == {"max_model_len": 2048, "dtype": "auto"}
    # what the rule params carry: the filled entry (collection) and the entry as stated (trajectory sampling)
    assert spec.as_dict() == {"name": "m", **MODEL_DEFAULTS, **VLLM}
    assert spec.as_stated() == {"name": "m", **VLLM} and spec.as_stated()["sampling"]["stop"] == ["</answer>"]
    assert ModelSpec.of(spec.as_dict()).as_dict() == spec.as_dict()  # a job parses its param to the same entry
    http = ModelSpec.from_config("r1", {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "concurrency": 2})
    assert {k: http.settings[k] for k in HTTP_DEFAULTS} == {**HTTP_DEFAULTS, "concurrency": 2}
    assert http.max_model_len is None and http.gpus() == 0
    hub = ModelSpec.from_config("h", {"backend": "vllm", "hub_id": "org/model"})
    assert hub.revision == "main" and "revision" not in hub.as_stated()  # the stated entry stays as written


def test_an_unknown_key_fails_naming_the_model_the_key_and_the_known_keys():
    with pytest.raises(ModelSpecError) as err:
        ModelSpec.from_config("r1", {"backend": "vllm", "path": "smollm2", "max_modellen": 4096})
    msg = str(err.value)
    assert "models.r1.max_modellen" in msg and "model 'r1'" in msg
    assert f"known keys: {', '.join(known_keys())}" in msg and "max_model_len" in msg
    # the config is refused the same way, by the same check, with every other problem
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    name = next(iter(cfg["models"]))
    cfg["models"][name]["served_modle"] = "x"
    with pytest.raises(ConfigError) as err:
        validate_config(cfg, load_schema(REPO / "config" / "schema.yaml"))
    assert f"models.{name}.served_modle: unknown key of model {name!r} (known keys: " in str(err.value)
    # a key the workflow plan adds for a hub model's jobs is no key of a config
    assert entry_problems("h", {"backend": "vllm", "hub_id": "o/m", "manifest": "x.json"}) == []
    assert "manifest" in entry_problems("h", {"backend": "vllm", "hub_id": "o/m", "manifest": "x.json"},
                                        planned=False)[0]


def test_a_renamed_key_names_its_new_name():
    backend = backends.register(Backend(name="renamedtest", description="a backend whose key was renamed",
                                        open=lambda model: None, keys=("endpoint_url",),
                                        renamed={"url": "endpoint_url"}))
    try:
        with pytest.raises(ModelSpecError, match=r"models\.m\.url: this key is now models\.m\.endpoint_url"):
            ModelSpec.from_config("m", {"backend": "renamedtest", "url": "http://x"})
        assert ModelSpec.from_config("m", {"backend": "renamedtest", "endpoint_url": "http://x"}).backend == backend.name
    finally:
        backends._REGISTRY.pop("renamedtest")


def test_the_schema_lists_exactly_the_keys_the_registry_declares():
    entry = load_schema(REPO / "config" / "schema.yaml")["properties"]["models"]["additionalProperties"]
    assert sorted(entry["properties"]) == known_keys()
    assert "additionalProperties" not in entry  # the one home of the check is entry_problems


def test_an_unknown_backend_names_the_known_ones():
    with pytest.raises(backends.UnknownBackend, match="model 'm'.*known backends are openai, replay, vllm"):
        ModelSpec.from_config("m", {"backend": "tgi"})


def test_the_trajectory_command_opens_its_model_through_the_registry():
    spec = ModelSpec.named("smollm2", "vllm")
    assert spec == ModelSpec.from_config("smollm2", {"backend": "vllm", "path": "smollm2"})
    with pytest.raises(ModelSpecError, match="backend 'openai' cannot open a model from its name alone"):
        ModelSpec.named("r1", "openai")
    assert backends.named_backends() == ["vllm"]


# ---------------------------------------------------------------------- the house rule: no .get on a model entry

# Where a model entry is read as a mapping: the spec and the backend registry; protect.py, which reads stored
# identity records (written by any earlier thinkprobe) as well as stated entries. The engines
# (generate/vllm_engine.py, generate/http_engine.py) and the model lookup they call (generate/models.py) take the
# spec and read its fields, so the rule holds for them too.
READERS = {"generate/modelspec.py", "protect.py"}
ENGINE_MODULES = ("generate/vllm_engine.py", "generate/http_engine.py", "generate/models.py")
# names a model entry goes by, and keys only a model entry has
ENTRY_NAMES = {"model_cfg", "mcfg", "model", "models_cfg", "model_entry"}
MODEL_ONLY_KEYS = {"backend", "served_model", "base_url", "engine", "think_prefill", "system_prompt", "api_key_env",
                   "tokenizer", "device", "weights_gb", "params_b", "total_params_b", "trace_tokens", "hub_id"}
# a hub_id of a question set or a lock entry is no model entry's
OTHER_HUB_IDS = {"generate/questions.py", "generate/datasets.py", "generate/lock.py", "generate/dataset_fetch.py"}


def _entry_reads(path: Path, rel: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
            continue
        receiver = node.func.value
        name = receiver.id if isinstance(receiver, ast.Name) else None
        key = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
        if key == "hub_id" and rel in OTHER_HUB_IDS:
            continue
        if name in ENTRY_NAMES or key in MODEL_ONLY_KEYS:
            found.append(f"thinkprobe/{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_outside_the_spec_and_the_registry_reads_a_model_entry_with_get():
    package = REPO / "thinkprobe"
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel in READERS or rel.startswith("generate/backends/"):
            continue
        found += _entry_reads(path, rel)
    assert not found, ("read a model's ModelSpec (thinkprobe.generate.modelspec) instead of its entry:\n  "
                       + "\n  ".join(found))


def test_the_house_rule_covers_the_engines(tmp_path):
    """The engines and their model lookup are read by the rule (not exempt), and it finds nothing there; the
    entry reads they held before they took the spec (an engine's own defaults merge) are what it would find."""
    assert not READERS & set(ENGINE_MODULES)
    for rel in ENGINE_MODULES:
        assert _entry_reads(REPO / "thinkprobe" / rel, rel) == [], rel
    old = tmp_path / "vllm_engine.py"
    old.write_text("def __init__(self, model_cfg):\n    self.model = str(model_cfg.get('name'))\n"
                   "    args = {**ENGINE_DEFAULTS, **dict(model_cfg.get('engine') or {})}\n")
    assert len(_entry_reads(old, "generate/vllm_engine.py")) == 2


def test_the_house_rule_sees_an_entry_read(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f(model_cfg, cfg):\n    return model_cfg.get('path'), cfg.get('base_url')\n")
    assert len(_entry_reads(module, "stages/m.py")) == 2


# ------------------------------------------------------------ what passes between jobs is what it was before

ENTRIES = {"path": VLLM, "hub": {"backend": "vllm", "hub_id": "org/m", "device": "cpu", "mem_mb": 3000,
                                 "engine": {"max_model_len": 2048, "dtype": "half"}},
           "endpoint": {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "served_model": "x",
                        "max_model_len": 4096, "system_prompt": "be brief", "think_prefill": True}}


@pytest.mark.parametrize("kind", sorted(ENTRIES))
def test_params_and_stored_identities_are_those_of_the_entry_before_the_spec(kind):
    """The mappings the rule params carried before the spec (the filled entry: collection_jobs.model_settings; the
    entry as stated less its resources: TrajectoryJobs.engine_model), written out here as they were computed, and
    a collected unit's settings digest as unit_store computed it: Snakemake reruns a job whose params' repr
    changes, and a stored unit or batch whose key changes is refused."""
    import hashlib
    import json

    from thinkprobe.generate.defaults import MODEL_RESOURCE_KEYS
    from thinkprobe.generate.unit_store import _sampling, unit_settings
    from thinkprobe.protect import identity

    entry = ENTRIES[kind]
    spec = ModelSpec.from_config("m", entry)
    filled = {"name": "m", **MODEL_DEFAULTS, **entry}
    if filled.get("hub_id"):
        filled.setdefault("revision", "main")
    assert repr(spec.as_dict()) == repr(filled)
    stated = {k: v for k, v in {"name": "m", **entry}.items() if k not in MODEL_RESOURCE_KEYS}
    assert repr({k: v for k, v in spec.as_stated().items() if k not in MODEL_RESOURCE_KEYS}) == repr(stated)
    # the continuation batch's identity: from the stated entry, as before (no default revision added)
    assert identity({"n": 4}, spec.as_stated()) == identity({"n": 4}, {"name": "m", **entry})
    # a collected unit's settings, as unit_store.unit_identity wrote them before it read the spec
    m = filled
    u = {"question": {"text": "2 + 2?", "choices": []}, "seed": 7}
    params = {"model": filled, "prompt_variant": "native", "sampling": {"temperature": 0.6, "max_tokens": 64}}
    old = {"backend": m.get("backend"), "model": m.get("path") or m.get("served_model") or m.get("name"),
           "base_url": m.get("base_url"), "reasoning": m.get("reasoning"), "think_prefill": bool(m.get("think_prefill")),
           "system_prompt": m.get("system_prompt") or "", "prompt_variant": "native", "question": "2 + 2?",
           "choices": [], "sampling": _sampling(params["sampling"], 7).as_dict()}
    if m.get("hub_id"):
        old.update(model=m["hub_id"], revision=m.get("revision") or "main")
    assert unit_settings(u, params) == hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()
