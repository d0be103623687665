"""Datasets by hub id and the lock file through the real workflow, against a loopback hub that records requests.

The hub cache is built in the hub's dataset layout from the shared corpus's benchmark files
(:mod:`tests.hub_data`); ``HF_ENDPOINT`` points at :class:`tests.fake_hub.FakeHub`, which answers as a hub
that is down (503), or as the hub does for an unknown repository or revision. The tests check that only
``fetch_dataset`` asks the hub, that a set not fetched yet stops the study (not the fetch) naming it, that
the fetch writes the lock, and that a revision which moved in the cache stops a locked run before any job.
"""

from __future__ import annotations

import json

import pytest
import yaml

from tests.fake_hub import FakeHub
from tests.hub_data import HUB_IDS, WRITERS, build_cache, paper_specs
from tests.test_hub_models import SECRET, _run
from tests.workflow_helpers import REPO, job_counts, make_workdir

from .conftest import corpus_path

pytestmark = pytest.mark.workflow


def _study(cache, sets: dict, jobs: list[str]) -> dict:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["inputs"] = []
    cfg["trajectories"].update(enabled=False, models=[])
    cfg["models"] = {"smol": {"backend": "vllm", "path": "smollm2", "device": "cpu", "reasoning": "prompted",
                              "prompt_variant": "cot", "think_prefill": True, "mem_mb": 4000, "runtime": 10}}
    cfg["question_sets"] = sets
    cfg["collection"] = {"jobs": [{"model": "smol", "question_set": q} for q in jobs], "runs": 1, "seed": 5,
                         "batch_questions": 2, "sampling": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 24}}
    cfg["resources"]["model_cache"] = str(cache)
    return cfg


def _with_configfile(wd, cfg):
    """The study as its own config file (the lock goes beside it: study.lock.yaml)."""
    study = wd / "study.yaml"
    study.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return study


def test_datasets_by_hub_id_through_the_rules(tmp_path):
    """Parse and plan read the cache only; `snakemake fetch_datasets` is the one step that asks the hub (with
    the token); a set not yet in the cache stops the study naming it and the command, while the fetch runs;
    an unknown dataset or revision is an error of its fetch naming the key; the fetch writes the manifests
    (commit, files with sha256) and the lock; then the study plans its collection jobs offline."""
    benchmarks = corpus_path("benchmarks")
    cache = tmp_path / "cache"
    built = build_cache(benchmarks, cache, tmp_path / "repos", sets=("gsm8k", "arc"))
    specs = paper_specs()
    sets = {"gsm8k": {**specs["gsm8k"], "limit": 3}, "arc": {**specs["arc"], "limit": 2},
            "svamp": {**specs["svamp"], "limit": 2}}
    wd = make_workdir(tmp_path / "wd")
    study = _with_configfile(wd, _study(cache, sets, ["gsm8k", "arc", "svamp"]))
    lock = wd / "study.lock.yaml"
    with FakeHub() as hub:
        dry = _run(wd, hub, "-n", "--configfile", str(study))
        out = dry.stdout + dry.stderr
        assert dry.returncode != 0
        assert ("question set 'svamp' (question_sets.svamp.hub_id = 'ChilleD/SVAMP', revision 'main'): not in the "
                f"dataset cache {cache}") in out and "`snakemake fetch_datasets`" in out
        assert "question set 'gsm8k'" not in out  # in the cache: not pending
        assert hub.dataset_requests() == []  # parsing and planning never ask the hub

        first = _run(wd, hub, "fetch_datasets", "--keep-going", "--configfile", str(study))
        assert first.returncode != 0  # svamp: neither in the cache nor reachable
        log = (wd / "results/logs/fetch_dataset/svamp.log").read_text()
        assert "question_sets.svamp.hub_id = 'ChilleD/SVAMP', revision 'main'): the hub cannot be reached" in log
        assert "snakemake fetch_datasets" in log
        assert (wd / "results/datasets/gsm8k.json").is_file() and not lock.exists()
        asked = hub.dataset_requests()
        assert asked and all(auth == f"Bearer {SECRET}" for _, _, auth in asked), asked

        WRITERS["svamp"](benchmarks, tmp_path / "repos" / "svamp")  # fetched on another machine into the cache
        from thinkprobe.generate.hub import import_folder

        _, svamp_commit = import_folder(tmp_path / "repos" / "svamp", HUB_IDS["svamp"], cache, repo_type="dataset")
        fetched = _run(wd, hub, "fetch_datasets", "--configfile", str(study))
        assert fetched.returncode == 0, fetched.stdout[-3000:] + fetched.stderr[-3000:]
        manifest = json.loads((wd / "results/datasets/arc.json").read_text())
        assert manifest["commit"] == built["arc"][1] and manifest["questions"] == 1172
        assert all(len(f["sha256"]) == 64 for f in manifest["files"])
        locked = yaml.safe_load(lock.read_text())
        assert locked == {"datasets": {"arc": {"hub_id": "allenai/ai2_arc", "revision": "main", "commit": built["arc"][1]},
                                       "gsm8k": {"hub_id": "openai/gsm8k", "revision": "main", "commit": built["gsm8k"][1]},
                                       "svamp": {"hub_id": "ChilleD/SVAMP", "revision": "main", "commit": svamp_commit}}}
        asked = hub.dataset_requests()

        planned = _run(wd, hub, "-n", "--configfile", str(study))
        assert planned.returncode == 0, planned.stdout[-3000:] + planned.stderr[-3000:]
        counts = job_counts(planned.stdout)
        assert counts["collect"] == 2 + 1 + 1 and "collected_trace" not in counts, counts  # no job per trace
        ran = _run(wd, hub, "plan", "--configfile", str(study))  # a real job that reads the questions
        assert ran.returncode == 0, ran.stderr[-3000:]
        assert "collect" in (wd / "results/plan/plan.txt").read_text()
        assert hub.dataset_requests() == asked  # only fetch_dataset touched the network

        # bad input: an unknown dataset, an unknown revision
        bad = _study(cache, {"typo": {"source": "gsm8k", "hub_id": "openai/nosuch-gsm8k"},
                             "rev": {**specs["gsm8k"], "revision": "badrev"}}, ["typo", "rev"])
        wd2 = make_workdir(tmp_path / "wd2", bad)
        proc = _run(wd2, hub, "fetch_datasets", "--keep-going")
        assert proc.returncode != 0
        typo = (wd2 / "results/logs/fetch_dataset/typo.log").read_text()
        assert "question_sets.typo.hub_id = 'openai/nosuch-gsm8k': no such dataset on the hub" in typo
        rev = (wd2 / "results/logs/fetch_dataset/rev.log").read_text()
        assert "question_sets.rev.revision = 'badrev': no such branch, tag or commit of openai/gsm8k" in rev


def test_a_moved_revision_stops_a_locked_run(tmp_path):
    """A lock pins gsm8k's `main` and a hub model's `main`; the shared cache's `main` of either then moves to
    another commit (another study fetched it): the next run stops at parse time naming the entry and the
    lock; `--config relock=true` plans again and its fetch moves the lock to the new commit."""
    from tests.test_hub_models import HUB_ID, _hub_model, _light_copy
    from thinkprobe.generate.hub import import_folder

    benchmarks = corpus_path("benchmarks")
    cache = tmp_path / "cache"
    built = build_cache(benchmarks, cache, tmp_path / "repos", sets=("gsm8k",))
    light = _light_copy(tmp_path / "light")
    _, model_commit = import_folder(light, HUB_ID, cache)
    cfg = _study(cache, {"gsm8k": {**paper_specs()["gsm8k"], "limit": 2}}, ["gsm8k"])
    cfg["models"] = {"smol": _hub_model()}
    wd = make_workdir(tmp_path / "wd")
    study = _with_configfile(wd, cfg)
    lock = wd / "study.lock.yaml"
    with FakeHub() as hub:
        fetched = _run(wd, hub, "fetch_datasets", "fetch_models", "--configfile", str(study))
        assert fetched.returncode == 0, fetched.stdout[-3000:] + fetched.stderr[-3000:]
        locked = yaml.safe_load(lock.read_text())
        assert locked["datasets"]["gsm8k"]["commit"] == built["gsm8k"][1]
        assert locked["models"]["smol"] == {"hub_id": HUB_ID, "revision": "main", "commit": model_commit}
        assert _run(wd, hub, "-n", "--configfile", str(study)).returncode == 0

        repo = tmp_path / "repos" / "gsm8k"
        (repo / "NOTES.md").write_text("a new commit on main\n")
        _, moved = import_folder(repo, HUB_IDS["gsm8k"], cache, repo_type="dataset")  # refs/main -> moved
        assert moved != built["gsm8k"][1]
        stopped = _run(wd, hub, "-n", "--configfile", str(study))
        out = stopped.stdout + stopped.stderr
        assert stopped.returncode != 0
        assert (f"question_sets.gsm8k (openai/gsm8k, revision 'main'): the lock file {lock} pins commit "
                f"{built['gsm8k'][1]}, but the cache's 'main' is now {moved}") in out
        assert "relock=true" in out and "Job stats" not in out
        assert _run(wd, hub, "-n", "--configfile", str(study), "--config", "relock=true").returncode == 0
        relocked = _run(wd, hub, "fetch_datasets", "--configfile", str(study), "--config", "relock=true")
        assert relocked.returncode == 0, relocked.stderr[-3000:]
        assert yaml.safe_load(lock.read_text())["datasets"]["gsm8k"]["commit"] == moved
        assert yaml.safe_load(lock.read_text())["models"]["smol"]["commit"] == model_commit  # kept
        assert _run(wd, hub, "-n", "--configfile", str(study)).returncode == 0

        (light / "NOTES.md").write_text("new weights on main\n")
        _, model_moved = import_folder(light, HUB_ID, cache)
        stopped = _run(wd, hub, "-n", "--configfile", str(study))
        out = stopped.stdout + stopped.stderr
        assert stopped.returncode != 0
        assert (f"models.smol ({HUB_ID}, revision 'main'): the lock file {lock} pins commit {model_commit}, but "
                f"the cache's 'main' is now {model_moved}") in out and "Job stats" not in out


def test_a_locked_commit_missing_from_the_cache_is_an_error_naming_the_entry(tmp_path):
    """The lock (pulled with the config) pins a commit this cache does not hold: the study stops at parse
    naming the set and the fetch; the fetch, with the hub unreachable, fails naming the lock and the commit."""
    from thinkprobe.generate.lock import write_section

    cache = tmp_path / "cache"
    build_cache(corpus_path("benchmarks"), cache, tmp_path / "repos", sets=("gsm8k",))
    wd = make_workdir(tmp_path / "wd")
    study = _with_configfile(wd, _study(cache, {"gsm8k": {**paper_specs()["gsm8k"], "limit": 2}}, ["gsm8k"]))
    lock = wd / "study.lock.yaml"
    absent = "3" * 40
    write_section(lock, "datasets", {"gsm8k": {"hub_id": HUB_IDS["gsm8k"], "revision": "main", "commit": absent}})
    (cache / "datasets--openai--gsm8k" / "refs" / "main").unlink()  # a cache that never resolved `main`
    with FakeHub() as hub:
        dry = _run(wd, hub, "-n", "--configfile", str(study))
        out = dry.stdout + dry.stderr
        assert dry.returncode != 0
        assert (f"question set 'gsm8k' (question_sets.gsm8k.hub_id = 'openai/gsm8k', revision 'main'): the commit "
                f"{absent} that the lock file pins for it is not in the dataset cache {cache}") in out
        assert "`snakemake fetch_datasets`" in out and "Job stats" not in out
        fetch = _run(wd, hub, "fetch_datasets", "--configfile", str(study), offline=True)
        assert fetch.returncode != 0
        log = (wd / "results/logs/fetch_dataset/gsm8k.log").read_text()
        assert (f"question_sets.gsm8k: the lock file {lock} pins openai/gsm8k (revision 'main') to commit {absent}, "
                f"which is not in the cache {cache}") in log, log[-2000:]
        assert not (wd / "results/datasets/gsm8k.json").exists()
