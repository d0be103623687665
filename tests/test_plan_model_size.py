"""A model's size read from its own files (thinkprobe.generate.modelsize; issue 32, item 4): the total parameters
from the weight index, else the safetensors headers, else config.json, the active ones of a mixture-of-experts
model from its config, and the plan naming where each figure came from. The models lie in a cache in the Hugging
Face layout (thinkprobe.generate.hub.import_folder, as after fetch_models) built from SmolLM2's own config and
tokenizer with configs and indexes of larger models; the planner reads them as `thinkprobe plan` does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_hub_models import _config, _hub_model, _light_copy, _smollm2_folder
from tests.workflow_helpers import REPO, make_workdir

pytestmark = pytest.mark.fast

# Qwen3-30B-A3B's config.json sizes (its model card: 30.5 B parameters, 3.3 B activated)
QWEN3_MOE = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
             "num_hidden_layers": 48, "vocab_size": 151936, "num_attention_heads": 32, "num_key_value_heads": 4,
             "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
             "num_experts_per_tok": 8, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
             "max_position_embeddings": 40960}
QWEN3_BYTES = 61_064_220_672  # its index's metadata.total_size: 30,532,110,336 parameters x 2 bytes
# gpt-oss-120b's (its model card: 117 B parameters, MXFP4 experts; 65 GB of weights)
GPT_OSS = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
           "num_hidden_layers": 36, "vocab_size": 201088, "num_attention_heads": 64, "num_key_value_heads": 8,
           "head_dim": 64, "intermediate_size": 2880, "num_local_experts": 128, "num_experts_per_tok": 4,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "max_position_embeddings": 131072,
           "quantization_config": {"quant_method": "mxfp4"}}
GPT_OSS_BYTES = 65_248_815_744


def _model_folder(dest: Path, config: dict | None = None, index_meta: dict | None = None, shards: int = 2) -> Path:
    """SmolLM2's tokenizer and chat template with ``config`` as its config.json and, with ``index_meta``, a weight
    index with that metadata over ``shards`` stand-in shards (8 float32 parameters each)."""
    folder = _light_copy(dest, shards=shards)
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    if index_meta is not None:
        index = json.loads((folder / "model.safetensors.index.json").read_text())
        (folder / "model.safetensors.index.json").write_text(json.dumps({**index, "metadata": index_meta}))
    return folder


def _cache(tmp_path: Path) -> Path:
    import numpy as np
    from safetensors.numpy import save_file

    from thinkprobe.generate.hub import import_folder

    cache = tmp_path / "cache"
    import_folder(_model_folder(tmp_path / "moe", QWEN3_MOE, {"total_size": QWEN3_BYTES}), "org/moe-a3b", cache)
    import_folder(_model_folder(tmp_path / "quant", GPT_OSS, {"total_size": GPT_OSS_BYTES}), "org/quant", cache)
    # a dense model with its weights and no index: SmolLM2's own config; two tensors of known shapes
    dense = _light_copy(tmp_path / "dense")
    save_file({"a": np.zeros((1000, 300), dtype=np.float32), "b": np.zeros(77, dtype=np.float32)},
              str(dense / "model.safetensors"))
    import_folder(dense, "org/dense", cache)
    # config and tokenizer only (a snapshot whose weights are not there): the config's estimate
    bare = _light_copy(tmp_path / "bare")
    (bare / "model.safetensors").unlink()
    (bare / "config.json").write_text(json.dumps(QWEN3_MOE))
    import_folder(bare, "org/bare", cache)
    return cache


def _gpu(hub_id: str, **extra) -> dict:
    model = _hub_model(hub_id, device="gpu", **extra)
    for key in ("mem_mb", "runtime"):  # derived from the model and the plan
        model.pop(key)
    return model


def test_total_parameters_come_from_the_weight_index_and_active_ones_from_the_config(tmp_path):
    from thinkprobe.config import load_schema, validate_config
    from thinkprobe.generate.modelsize import read_size
    from thinkprobe.study.planner import plan_study

    cache = _cache(tmp_path)
    models = {"moe": _gpu("org/moe-a3b"), "quant": _gpu("org/quant", engine={"tensor_parallel_size": 2}),
              "dense": _gpu("org/dense"), "bare": _gpu("org/bare"),
              # the same MoE model named by hand before its fetch: its active parameters only (what the planner
              # used to size it by), and with total_params_b
              "hand": _gpu("org/not-fetched", params_b=3.3), "hand_total": _gpu("org/not-fetched-2", params_b=3.3,
                                                                                    total_params_b=30.5)}
    cfg = validate_config(_config(cache, models), load_schema(REPO / "config" / "schema.yaml"))
    plan = plan_study(cfg, tmp_path)
    mem = {j.model: j.resources["mem_mb"] for j in plan.jobs if j.rule == "collect"}
    cls = {r.detail.split(" x ")[0]: r.detail for r in plan.rows if r.rule == "collect"}

    # the MoE model in the cache: total from its index (over the stand-in shards' headers: 16 parameters), active
    # from its config: memory for 61 GB of weights, the throughput class of 3.4 B
    size = plan.sizes["moe"]
    assert "total 30.5 B (model.safetensors.index.json metadata.total_size 61,064,220,672 bytes / 2 (bfloat16))" \
        in size, size
    assert "active 3.35 B (config.json estimate (48 layers of hidden size 2048, 128 experts of which 8 per token" \
        in size, size
    assert "weights 61.1 GB (model.safetensors.index.json metadata.total_size)" in size, size
    assert mem["moe"] >= 61 * 1024 + 8 * 1024 and "/small," in cls["moe"], (mem, cls)
    # by hand, before the fetch: the active parameters alone undersize it; total_params_b sizes it as the index does
    assert mem["hand"] + 50 * 1024 < mem["moe"] and "models.hand.params_b x 2 bytes" in plan.sizes["hand"]
    assert abs(mem["hand_total"] - mem["moe"]) <= 1024 and "models.hand_total.total_params_b x 2 bytes" in \
        plan.sizes["hand_total"]
    assert cls["hand"].split(" (")[1] == cls["moe"].split(" (")[1]  # the same class: the same active figure

    # a quantized MoE: its bytes are its memory, its parameters are not bytes / 2 (MXFP4): the config's estimate
    size = plan.sizes["quant"]
    assert "weights 65.2 GB (model.safetensors.index.json metadata.total_size)" in size, size
    assert "total 117 B (config.json estimate (36 layers of hidden size 2880, 128 experts of which 4 per token" \
        in size and "(quantized: mxfp4)" in size, size
    assert "active 5.71 B" in size and "/small," in cls["quant"]

    # a dense model with its weights and no index: the headers' exact count (300,077), its files' bytes
    size = read_size(plan_folder(cfg, "dense"))
    assert (size.total, size.active) == (300_077, 300_077) and size.total_source == "the safetensors headers of 1 file(s)"
    assert "weights 0.0012 GB (1 safetensors file(s) on disk)" in plan.sizes["dense"], plan.sizes["dense"]
    assert "active 0.0003 B (dense: its total)" in plan.sizes["dense"] and "/tiny," in cls["dense"]

    # config.json alone: the estimate, and memory for its total x 2 bytes (bf16)
    size = plan.sizes["bare"]
    assert "total 30.5 B (config.json estimate" in size and "active 3.35 B" in size, size
    assert "weights 61.1 GB (total parameters (config.json estimate" in size and "x 2 bytes)" in size, size
    assert abs(mem["bare"] - mem["moe"]) <= 1024


def plan_folder(cfg, name):
    from thinkprobe.generate.modelspec import ModelSpec
    from thinkprobe.study.planner import local_folder

    return local_folder(ModelSpec.from_config(name, cfg["models"][name]), cfg["resources"]["model_cache"])


def test_the_config_estimate_counts_smollm2_exactly_and_the_published_moe_sizes():
    """SmolLM2-135M's own config against its own safetensors headers (134,515,008 parameters); Qwen3-30B-A3B and
    gpt-oss-120b against their model cards (30.5 B / 3.3 B active; 117 B)."""
    from thinkprobe.generate.modelsize import config_estimate, read_size, safetensors_header_params

    folder = _smollm2_folder()
    counted = safetensors_header_params(folder / "model.safetensors")
    estimate = config_estimate(json.loads((folder / "config.json").read_text()))
    assert counted == estimate[0] == estimate[1] == 134_515_008
    assert read_size(folder).total_source == "the safetensors headers of 1 file(s)"
    total, active, _ = config_estimate(QWEN3_MOE)
    assert round(total / 1e9, 1) == 30.5 and round(active / 1e9, 1) == 3.4  # the card rounds 3.35 down to 3.3
    total, active, _ = config_estimate(GPT_OSS)
    assert round(total / 1e9) == 117 and active < total / 15
    assert config_estimate({"hidden_size": 8}) is None  # no layers, no vocabulary: no estimate


def test_an_unreadable_index_or_header_is_passed_over_and_named(tmp_path):
    from thinkprobe.generate.modelsize import read_size

    folder = _model_folder(tmp_path / "m", QWEN3_MOE, None)
    (folder / "model.safetensors.index.json").write_text("{not json")
    (folder / "model-00001-of-00002.safetensors").write_bytes(b"\x00\x01")  # cut short
    size = read_size(folder)
    assert size.total == 30_532_110_336 and size.total_source.startswith("config.json estimate")
    assert "passed over: model.safetensors.index.json unreadable or without metadata" in size.total_source
    assert ("the safetensors header of model-00001-of-00002.safetensors unreadable (shorter than a safetensors "
            "header)") in size.total_source


def test_thinkprobe_plan_prints_each_models_size_and_its_witness(tmp_path):
    cache = _cache(tmp_path)
    wd = make_workdir(tmp_path / "wd", _config(cache, {"moe": _gpu("org/moe-a3b")}))
    out = subprocess.run([sys.executable, "-m", "thinkprobe.cli", "plan", "--directory", str(wd)],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr
    line = next(l for l in out.stdout.splitlines() if l.startswith("model size, moe: "))
    assert "total 30.5 B (model.safetensors.index.json metadata.total_size" in line, line
    js = subprocess.run([sys.executable, "-m", "thinkprobe.cli", "plan", "--directory", str(wd), "--json"],
                        capture_output=True, text=True, cwd=REPO, timeout=300)
    assert js.returncode == 0, js.stderr
    assert json.loads(js.stdout)["sizes"]["moe"] == line.removeprefix("model size, moe: ")
