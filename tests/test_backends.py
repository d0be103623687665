"""The model backends' registry (issue 34, item 1): one file per backend, the schema's enum generated from it, an
unknown backend an error naming the known ones; the ``replay`` backend through the real collection path; and
the worked example of docs/adding-a-backend.md, followed step by step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thinkprobe.config import ConfigError, load_schema, validate_config
from thinkprobe.generate import backends
from thinkprobe.generate.collection_jobs import list_collection_jobs
from thinkprobe.generate.engine import BACKENDS, open_engine
from thinkprobe.generate.jobres import job_resources
from thinkprobe.generate.prompts import format_prompt
from thinkprobe.generate.unit_store import batch_digest, store_path
from thinkprobe.stages.collect import collect_batch

pytestmark = pytest.mark.fast

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "config" / "schema.yaml"
PAGE = REPO / "docs" / "adding-a-backend.md"


def _backend_enum() -> list[str]:
    return load_schema(SCHEMA)["properties"]["models"]["additionalProperties"]["properties"]["backend"]["enum"]


def test_an_unknown_backend_is_an_error_naming_the_known_ones():
    with pytest.raises(backends.UnknownBackend, match="model 'm': unknown backend 'tgi': known backends are "
                                                      "openai, replay, vllm"):
        open_engine({"name": "m", "backend": "tgi"})
    with pytest.raises(ConfigError, match=r"models\.m\.backend = 'tgi' is not allowed: must be one of "
                                          r"\['openai', 'replay', 'vllm'\]"):
        validate_config({"models": {"m": {"backend": "tgi"}}}, load_schema(SCHEMA))


def test_the_schema_enum_is_the_registry():
    assert _backend_enum() == backends.names() == sorted(BACKENDS) == ["openai", "replay", "vllm"]
    # every backend file of the folder is registered (a file missing from the import line would be silent)
    files = {p.stem for p in (REPO / "thinkprobe" / "generate" / "backends").glob("*.py") if not p.stem.startswith("_")}
    assert files == set(backends.names())


def test_what_each_backend_declares():
    vllm, openai, replay = backends.get("vllm"), backends.get("openai"), backends.get("replay")
    m = {"backend": "vllm", "device": "gpu", "engine": {"tensor_parallel_size": 2, "max_model_len": 4096}}
    assert vllm.gpus(m) == 2 and vllm.gpus({**m, "device": "cpu"}) == 0
    assert openai.gpus({"backend": "openai"}) == replay.gpus({"backend": "replay"}) == 0
    assert vllm.engine_settings(m) == {"max_model_len": 4096, "dtype": "auto"}
    assert openai.engine_settings({"max_model_len": 8192}) == {"max_model_len": 8192, "return_token_ids": "auto"}
    assert replay.engine_settings({"path": "x.jsonl"}) == {}
    assert backends.continuation_names() == ["openai", "vllm"]
    assert [n for n in backends.names() if backends.get(n).hub] == ["vllm"]
    # the declared keys are keys of the schema's model entry, and their declared defaults the schema's
    props = load_schema(SCHEMA)["properties"]["models"]["additionalProperties"]["properties"]
    for name in backends.names():
        b = backends.get(name)
        assert set(b.keys) <= set(props) and set(b.defaults) <= set(b.keys), name
        for key, value in b.defaults.items():
            schema_default = props[key].get("default") if key != "engine" else {
                k: v["default"] for k, v in props[key]["properties"].items() if "default" in v}
            assert schema_default == value, (name, key)


def test_the_table_is_the_registry():
    """docs/adding-a-backend.md's table of backends says what each backend file declares."""
    import importlib
    import re

    text = PAGE.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| `([\w.]+)` \| [^|]+ \| (yes|no) \| (yes|no) \| (yes|no) \| ([^|]+) \|$", text, re.M)
    assert sorted(r[0] for r in rows) == backends.names()
    for name, engine, weights, hub, continuations, identity in rows:
        b = backends.get(name)
        assert (weights, hub, continuations) == tuple("yes" if v else "no" for v in (b.loads_weights, b.hub,
                                                                                         b.continuations)), name
        assert tuple(re.findall(r"`(\w+)`", identity)) == b.identity_keys, name
        module, _, cls = engine.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), cls), type), engine


def _replay_config(path: Path) -> dict:
    return {"models": {"rec": {"backend": "replay", "path": str(path), "prompt_variant": "plain"}},
            "question_sets": {"tiny": {"source": "builtin", "limit": 3}},
            "collection": {"jobs": [{"model": "rec", "question_set": "tiny", "prompt_variant": "plain"}],
                           "runs": 1, "seed": 0, "batch_questions": 10, "chunk_prompts": 8,
                           "sampling": {"max_tokens": 64, "temperature": 0.6},
                           "loop_detection": {"window": 3, "min_repeats": 3, "min_line_chars": 8, "max_retries": 1}}}


def test_replay_collects_recorded_completions_through_the_collection_job(tmp_path):
    """The collection job (stages.collect.collect_batch, what rule collect runs) with a replay file: each recorded
    completion is stored as its unit, split into reasoning and answer; a question the file does not hold is that
    unit's error, the others go on; a bad line is excluded with its line number; a rerun opens no engine."""
    replay = tmp_path / "rollouts.jsonl"
    replay.write_text("", encoding="utf-8")
    cfg = _replay_config(replay)
    plan = list_collection_jobs(cfg)
    params = plan.batch_params("rec", "tiny", "c0000", cfg["collection"])
    questions = [u["question"] for u in params["units"]]
    assert len(questions) == 3
    prompts = [format_prompt(q, "plain") for q in plan.questions["tiny"]]
    assert prompts == [q["text"] for q in questions]  # "plain": the prompt is the question's text
    replay.write_text("\n".join([
        json.dumps({"prompt": prompts[0], "completion": "<think>First, I weigh both sides.\nThen I decide.</think>"
                                                        "It depends on the context.", "token_ids": [5, 6, 7]}),
        "{not json",
        json.dumps({"prompt": prompts[1], "completion": "<think>One view.\nAnother view.</think>Both matter.",
                    "finish_reason": "length"}),
    ]) + "\n", encoding="utf-8")
    opened = []

    def opener(model_cfg):
        opened.append(model_cfg["name"])
        return open_engine(model_cfg)

    store, traces = tmp_path / "store", tmp_path / "traces"
    manifest = collect_batch(opener, params, store, traces=str(traces))
    assert opened == ["rec"] and manifest["stats"]["generated"] == 3
    docs = [json.loads(store_path(store, u["unit"]).read_text()) for u in params["units"]]
    assert [d["status"] for d in docs] == ["ok", "ok", "excluded"]
    assert docs[0]["reasoning"].startswith("First, I weigh both sides.") and docs[0]["token_ids"] == [5, 6, 7]
    assert "It depends on the context." in docs[0]["answer"]
    assert docs[1]["reasoning"].startswith("One view.")
    assert "no record of this prompt" in docs[2]["reason"] and str(replay) in docs[2]["reason"]
    for d in docs[:2]:
        prov = d["provenance"]
        assert prov["backend"] == "replay" and prov["engine_version"].startswith(f"replay {replay} sha256:")
    assert sum(1 for _ in traces.rglob("*.json")) == 3  # a trace file per stored unit (the excluded one too)
    again = collect_batch(opener, params, store, traces=str(traces))
    assert opened == ["rec"] and again["stats"]["already_stored"] == 3
    # the job asks for no GPU and holds no weights
    res_cfg = {"resources": {"runtime_factor": 2, "min_runtime": 10, "cpus_per_gpu": 8, "analysis_threads": 2},
               "trajectories": {"gpu": True}}
    rec = {"name": "rec", **cfg["models"]["rec"]}
    assert job_resources("collect", rec, res_cfg, 1.0, 1e3, 64)["gpu"] == 0
    assert job_resources("collect", rec, res_cfg, 1.0, 1e3, 64)["mem_mb"] == \
        job_resources("collect", rec, res_cfg, 1.0, 1e3, 0)["mem_mb"]
    vllm = {"name": "v", "backend": "vllm", "device": "cpu"}
    assert job_resources("collect", vllm, res_cfg, 1.0, 1e3, 64)["mem_mb"] == \
        job_resources("collect", vllm, res_cfg, 1.0, 1e3, 0)["mem_mb"] + 64 * 1024


def test_a_replay_file_excludes_bad_lines_and_repeated_prompts(tmp_path):
    from thinkprobe.generate.backends.replay import read_records

    path = tmp_path / "r.jsonl"
    path.write_text("\n".join([json.dumps({"prompt": "a", "completion": "x"}), "[1, 2]",
                               json.dumps({"prompt": "b", "completion": 3}),
                               json.dumps({"prompt": "c", "completion": "y"}),
                               json.dumps({"prompt": "c", "completion": "z"})]) + "\n", encoding="utf-8")
    records, excluded = read_records(path)
    assert set(records) == {"a"}
    assert excluded[f"{path}:2"].endswith("a record is a JSON object, not list")
    assert excluded["b"] == f"{path}:3: 'completion' must be a string"
    assert excluded["c"] == f"{path}: lines 4 and 5 both record this prompt"


def _study_config(replay: Path) -> dict:
    """The embedded default config with a replay model collected beside its vLLM one."""
    import copy

    import yaml

    cfg = copy.deepcopy(yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8")))
    cfg["models"]["rec"] = {"backend": "replay", "path": str(replay), "prompt_variant": "plain"}
    cfg["collection"]["jobs"].append({"model": "rec", "question_set": "open_demo"})
    return cfg


def test_a_replay_model_is_checked_before_any_job(tmp_path):
    schema = load_schema(SCHEMA)
    cfg = _study_config(tmp_path / "missing.jsonl")
    with pytest.raises(ConfigError, match=r"models\.rec\.path = '.*missing\.jsonl': no such replay file"):
        validate_config(cfg, schema)
    (tmp_path / "missing.jsonl").write_text("", encoding="utf-8")
    validate_config(cfg, schema)
    cfg["trajectories"]["models"] = ["rec"]
    with pytest.raises(ConfigError, match=r"models\.rec: backend replay samples no continuations"):
        validate_config(cfg, schema)


def _page_block(title: str) -> str:
    """The fenced Python block of docs/adding-a-backend.md under the heading ``title``."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


def test_the_worked_example_of_adding_a_backend(tmp_path):
    """docs/adding-a-backend.md: the page's backend file, run as written, is a backend of the registry, the
    schema, the engine factory, the job resources and the collection job, without touching any other file."""
    import importlib.util
    import sys

    source = _page_block("Worked example: an echo backend")
    file = tmp_path / "echo.py"
    file.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("thinkprobe.generate.backends.echo", file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    backend = backends.register(module.BACKEND)
    try:
        assert "echo" in backends.names() and "echo" in _backend_enum()
        study = _study_config(tmp_path / "r.jsonl")
        study["models"]["e"] = {"backend": "echo", "prompt_variant": "plain"}
        (tmp_path / "r.jsonl").write_text("", encoding="utf-8")
        validate_config(study, load_schema(SCHEMA))
        cfg = _replay_config(tmp_path / "r.jsonl")
        cfg["models"] = {"e": {"backend": "echo", "prompt_variant": "plain"}}
        cfg["collection"]["jobs"] = [{"model": "e", "question_set": "tiny", "prompt_variant": "plain"}]
        engine = open_engine({"name": "e", **cfg["models"]["e"]})
        assert engine.backend == "echo" and backend.gpus(cfg["models"]["e"]) == 0
        plan = list_collection_jobs(cfg)
        params = plan.batch_params("e", "tiny", "c0000", cfg["collection"])
        manifest = collect_batch(open_engine, params, tmp_path / "store")
        assert manifest["stats"]["generated"] == 3
        doc = json.loads(store_path(tmp_path / "store", params["units"][0]["unit"]).read_text())
        assert doc["status"] == "ok" and doc["reasoning"] == params["units"][0]["question"]["text"]
        assert len(batch_digest(params)) == 16
    finally:
        backends._REGISTRY.pop("echo", None)
        sys.modules.pop(spec.name, None)
    assert "echo" not in backends.names()


def test_the_backend_files_are_no_sampling_code():
    """The registry and the backend declarations decide no sample: the walk that derives the sampling code never
    reaches them (thinkprobe/generate/__init__.py re-exports the interface, not the factory), so adding a backend
    leaves every stored continuation's hash as it was (docs/adding-a-backend.md, "A backend that samples
    continuations")."""
    from itertools import product

    from thinkprobe.generate.defaults import ESTIMATORS
    from thinkprobe.trajectories.sampling import sampling_code

    for backend, estimator, stopping in product(backends.continuation_names(), ESTIMATORS, (False, True)):
        code = sampling_code(stopping, backend, estimator)
        assert not [m for m in code if m.startswith("generate.backends") or m in ("generate.engine",
                                                                                   "generate.lazy_engine")], code
