"""Protection that holds for root (issue 19, item 1): a changed sampling parameter that would re-sample an
existing continuation batch stops the real workflow at planning, naming the file and how to regenerate it,
and the batch is untouched. Snakemake's own protection is a file mode, which root ignores; these tests run as
whoever runs the suite (root in CI and here), and the unit tests of the guard need no engine."""

from __future__ import annotations

import copy
import hashlib
import json
import os

import pytest
import yaml

from thinkprobe import protect
from thinkprobe.config import load_schema, validate_config
from thinkprobe.trajectories.sampling import SamplingConfig
from thinkprobe.trajectories.batches import TrajectoryJobs, batch_identity

from .workflow_helpers import REPO, default_config, job_counts, make_workdir, snakemake

BATCH = "results/continuations/smollm2/gsm8k_demo/b0000.json"


def _plant_batch(wd, cfg: dict, sidecar: bool) -> bytes:
    """A finished, read-only batch as the sampling job leaves it (provenance, and the identity sidecar)."""
    full = validate_config(copy.deepcopy(cfg), load_schema(REPO / "config" / "schema.yaml"))
    plan = TrajectoryJobs(full, base=wd)
    sampling = SamplingConfig.from_config(plan.sampling()).as_dict()
    model = plan.models["smollm2"]
    path = wd / BATCH
    path.parent.mkdir(parents=True, exist_ok=True)
    ident = batch_identity(plan.sampling(), model)
    path.write_text(json.dumps({"documents": [], "stats": {},
                                "provenance": {"params": sampling, "model": model.as_stated(),
                                               "sampling_code_sha256": ident["code_sha256"]}}))
    if sidecar:
        protect.record(path, ident)
    os.chmod(path, 0o444)
    return path.read_bytes()


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.engine
@pytest.mark.workflow
def test_a_changed_sampling_parameter_is_refused_before_any_job(tmp_path):
    for sidecar in (True, False):  # the identity sidecar, or (older batches) the batch's own provenance
        cfg = default_config()
        wd = make_workdir(tmp_path / f"wd-{sidecar}", cfg)
        _plant_batch(wd, cfg, sidecar)
        batch = wd / BATCH
        before = _sha(batch)
        if os.geteuid() == 0:  # the mode protects nothing here: root may write the read-only file
            assert os.access(batch, os.W_OK)
        # same settings: planning passes (the batch is not re-sampled)
        same = snakemake(wd, "-n", "trajectories")
        assert "refusing" not in same.stdout + same.stderr
        # an added question re-samples nothing that exists: it passes too
        cfg2 = copy.deepcopy(cfg)
        cfg2["collection"]["jobs"][1]["runs"] = 1
        cfg2["models"]["smollm2"].setdefault("engine", {})["max_num_seqs"] = 64  # a tuning knob only
        (wd / "config/config.yaml").write_text(yaml.safe_dump(cfg2, sort_keys=False))
        assert "refusing" not in snakemake(wd, "-n", "trajectories").stdout
        # a changed sampling budget: refused, naming the file and both ways to regenerate it
        cfg3 = copy.deepcopy(cfg)
        cfg3["trajectories"]["sampling"]["max_tokens"] += 8
        (wd / "config/config.yaml").write_text(yaml.safe_dump(cfg3, sort_keys=False))
        proc = snakemake(wd, "-n", "trajectories", check=False)  # a real run: test_trajectory_workflow.py
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0
        assert "refusing to overwrite 1 protected continuation batch" in out
        assert f"{BATCH} (the sampling settings changed)" in out
        assert "--config overwrite_protected=True" in out
        assert _sha(batch) == before
        # a changed model path: refused too
        cfg4 = copy.deepcopy(cfg)
        cfg4["models"]["smollm2"]["path"] = "another-folder"  # another model folder (this release checks it exists)
        if not (wd / "another-folder").exists():
            from thinkprobe.generate.models import local_model_folder

            (wd / "another-folder").symlink_to(local_model_folder("smollm2"), target_is_directory=True)
        (wd / "config/config.yaml").write_text(yaml.safe_dump(cfg4, sort_keys=False))
        proc = snakemake(wd, "-n", "trajectories", check=False)
        assert proc.returncode != 0 and "(the model changed)" in proc.stdout + proc.stderr
        # the explicit way: one run with overwrite_protected=True plans the re-sampling
        (wd / "config/config.yaml").write_text(yaml.safe_dump(cfg3, sort_keys=False))
        proc = snakemake(wd, "-n", "trajectories", "--config", "overwrite_protected=True")
        assert "refusing" not in proc.stdout + proc.stderr and "traj_label" in job_counts(proc.stdout)
        assert _sha(batch) == before


@pytest.mark.fast
def test_identity_ignores_tuning_knobs_and_names_changes(tmp_path):
    base = SamplingConfig(n=4, max_tokens=96).as_dict()
    model = {"name": "m", "backend": "vllm", "path": "m", "engine": {"max_num_seqs": 256}}
    ident = protect.identity(base, model)
    assert ident == protect.identity(base, {**model, "engine": {"max_num_seqs": 8}, "threads": 3})
    f = tmp_path / "b0000.json"
    f.write_text("{}")
    protect.record(f, ident)
    assert protect.changed({str(f): ident}) == []
    assert protect.changed({str(f): protect.identity(SamplingConfig(n=5, max_tokens=96).as_dict(), model)}) == [
        (str(f), "the sampling settings")]
    assert protect.changed({str(tmp_path / "absent.json"): ident}) == []
    # a hub model's id or pinned revision names other weights: a changed model (its folder is the cache's)
    hub = {"name": "m", "backend": "vllm", "hub_id": "org/m", "revision": "v1"}
    protect.record(f, protect.identity(base, hub))
    for other in ({**hub, "revision": "v2"}, {**hub, "hub_id": "org/n"}):
        assert protect.changed({str(f): protect.identity(base, other)}) == [(str(f), "the model")]


@pytest.mark.engine
@pytest.mark.workflow
def test_a_decoding_batch_is_compared_with_its_own_decoding(tmp_path):
    """A ``b0000-<decoding>`` batch records its decoding's settings: planning again with the same config
    passes; changing that decoding's temperature is refused, naming the batch."""
    cfg = default_config()
    cfg["trajectories"]["decodings"] = {"t02": {"temperature": 0.2}}
    wd = make_workdir(tmp_path / "wd", cfg)
    full = validate_config(copy.deepcopy(cfg), load_schema(REPO / "config" / "schema.yaml"))
    plan = TrajectoryJobs(full, base=wd)
    path = wd / BATCH.replace("b0000", "b0000-t02")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"documents": [], "stats": {}}))
    protect.record(path, batch_identity(plan.sampling("b0000-t02"), plan.models["smollm2"]))
    same = snakemake(wd, "-n", "trajectories", check=False)
    assert same.returncode == 0 and "refusing" not in same.stdout + same.stderr
    cfg["trajectories"]["decodings"]["t02"]["temperature"] = 0.3
    (wd / "config/config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    proc = snakemake(wd, "-n", "trajectories", check=False)
    assert proc.returncode != 0
    assert "b0000-t02.json (the sampling settings changed)" in proc.stdout + proc.stderr
