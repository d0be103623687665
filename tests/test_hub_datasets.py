"""Question sets by hub id, read offline from a cache in the hub's dataset layout; the lock file; revisions.

The cache is built from the shared corpus's benchmark files (:mod:`tests.hub_data`): the paper config's
four hub specs must give the same questions as the path-based loaders on the same files. Bad inputs (a
split, a config or a shard missing from the snapshot, a record without its benchmark's fields, a dataset
not in the cache) are errors naming the key, or an exclusion with the rest of the set kept.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.hub_data import HUB_IDS, PATHS, build_cache, paper_specs, write_gsm8k
from tests.workflow_helpers import REPO

from .conftest import corpus_path


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory):
    root = tmp_path_factory.mktemp("hubdata")
    built = build_cache(corpus_path("benchmarks"), root / "cache", root / "work")
    return root / "cache", built


def _spec(name: str, cache: Path, **extra) -> dict:
    return {**paper_specs()[name], "name": name, "dataset_cache": str(cache), **extra}


@pytest.mark.parametrize("name", ["gsm8k", "svamp", "math", "arc"])
@pytest.mark.slow
def test_hub_sets_give_the_items_of_the_path_loaders(hub_cache, name):
    """The paper config's spec, read by hub id from the cache, lists the same questions (text, gold, choices,
    in the same order) as the path-based loader on the corpus's file; ids too, but for MATH, whose hub copy
    has no `idx` (its ids are content hashes there)."""
    from thinkprobe.generate.questions import read_question_set

    cache, _ = hub_cache
    spec = paper_specs()[name]
    hub = read_question_set(_spec(name, cache))
    local = read_question_set({"name": name, "source": spec["source"], "path": str(corpus_path("benchmarks", PATHS[name])),
                               **({"math_type": spec["math_type"]} if "math_type" in spec else {})})
    expected = {"gsm8k": 1319, "svamp": 1000, "math": 1187, "arc": 1172}[name]  # the comments of the config
    assert len(hub.questions) == len(local.questions) == expected
    assert not hub.skipped
    assert [(q.task, q.text, q.gold, q.choices) for q in hub.questions] == \
        [(q.task, q.text, q.gold, q.choices) for q in local.questions]
    if name == "math":
        assert all(q.id.startswith("math-h") for q in hub.questions)
        assert len({q.id for q in hub.questions}) == expected
    else:
        assert [q.id for q in hub.questions] == [q.id for q in local.questions]


@pytest.mark.slow
def test_split_list_config_alias_and_the_revision_of_a_commit(hub_cache):
    from thinkprobe.generate.questions import read_question_set

    cache, built = hub_cache
    test_only = read_question_set(_spec("svamp", cache, split="test"))
    assert len(test_only.questions) == 300
    both = read_question_set(_spec("svamp", cache))
    assert [q.id for q in both.questions][700:] == [q.id for q in test_only.questions]
    alias = read_question_set({**_spec("math", cache), "config": None, "subset": "algebra"})
    assert len(alias.questions) == 1187
    geometry = read_question_set({**_spec("math", cache), "config": "geometry", "math_type": "Geometry"})
    assert geometry.questions and all(q.task == "math" for q in geometry.questions)
    pinned = read_question_set(_spec("gsm8k", cache, revision=built["gsm8k"][1]))  # a commit as the revision
    assert len(pinned.questions) == 1319


@pytest.mark.fast
def test_a_missing_split_config_or_dataset_is_an_error_naming_the_key(hub_cache):
    from thinkprobe.generate.datasets import DatasetError, DatasetPending
    from thinkprobe.generate.questions import QuestionSetError, read_question_set

    cache, _ = hub_cache
    with pytest.raises(DatasetError, match=r"question_sets.gsm8k.split = 'validation': config 'main' of openai/gsm8k "
                                           r".* has no such split; it offers config 'main': splits test"):
        read_question_set(_spec("gsm8k", cache, split="validation"))
    with pytest.raises(DatasetError, match=r"question_sets.math.config = 'calculus': no such config \(subset\) in "
                                           r"EleutherAI/hendrycks_math .*config 'algebra': splits test"):
        read_question_set(_spec("math", cache, config="calculus"))
    with pytest.raises(DatasetError, match=r"question_sets.svamp.split = 'dev': no such split in ChilleD/SVAMP"):
        read_question_set(_spec("svamp", cache, split="dev"))
    with pytest.raises(DatasetError, match=r"question_sets.svamp.config = 'extra': no such config"):
        read_question_set(_spec("svamp", cache, config="extra"))
    with pytest.raises(DatasetPending, match=r"question_sets.absent.hub_id = 'org/absent'.*not in the dataset cache"
                                             r".*snakemake fetch_datasets"):
        read_question_set({"name": "absent", "source": "gsm8k", "hub_id": "org/absent", "dataset_cache": str(cache)})
    with pytest.raises(DatasetPending, match="revision 'v2'"):
        read_question_set(_spec("gsm8k", cache, revision="v2"))
    with pytest.raises(QuestionSetError, match="either path or hub_id"):
        read_question_set(_spec("gsm8k", cache, path="x.jsonl"))
    with pytest.raises(QuestionSetError, match=r"none of the 1172 records .* has what source 'gsm8k' needs "
                                               r"\(first: .*missing field 'answer'"):
        read_question_set({**_spec("arc", cache), "source": "gsm8k"})  # the wrong benchmark for the dataset


@pytest.mark.fast
def test_bad_records_are_left_out_and_an_incomplete_shard_series_is_refused(tmp_path):
    """A record without its benchmark's fields is a Skipped entry naming the file and row, the rest is read;
    a split whose shard series lacks a file is an incomplete snapshot."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from thinkprobe.generate.datasets import DatasetError
    from thinkprobe.generate.hub import import_folder
    from thinkprobe.generate.questions import read_question_set

    repo = tmp_path / "repo"
    write_gsm8k(corpus_path("benchmarks"), repo)
    part = repo / "main" / "test-00000-of-00001.parquet"
    rows = pq.read_table(part).to_pylist()[:5]
    rows[2] = {"question": rows[2]["question"], "answer": "no final line"}
    rows[3] = {"question": None, "answer": rows[3]["answer"]}
    pq.write_table(pa.Table.from_pylist(rows), part)
    cache = tmp_path / "cache"
    import_folder(repo, HUB_IDS["gsm8k"], cache, repo_type="dataset")
    found = read_question_set({"name": "g", "source": "gsm8k", "hub_id": HUB_IDS["gsm8k"], "config": "main",
                               "dataset_cache": str(cache)})
    assert len(found.questions) == 3
    assert [(Path(s.path).name, s.line) for s in found.skipped] == [(part.name, 3), (part.name, 4)]
    assert "answer has no '####' line" in found.skipped[0].reason
    assert "field 'question' is NoneType" in found.skipped[1].reason

    shutil.copy(part, repo / "main" / "test-00000-of-00002.parquet")  # a two-shard split with one shard
    part.unlink()
    (repo / "README.md").unlink()
    import_folder(repo, "org/half", cache, repo_type="dataset")
    with pytest.raises(DatasetError, match=r"incomplete: split 'test' lacks main/test-00001-of-00002.parquet"
                                           r".*snakemake fetch_datasets"):
        read_question_set({"name": "h", "source": "gsm8k", "hub_id": "org/half", "config": "main",
                           "dataset_cache": str(cache)})


@pytest.mark.fast
def test_skipped_records_become_exclusion_rows_of_the_collection_plan(tmp_path):
    from thinkprobe.config import load_schema, validate_config
    from thinkprobe.generate.collection_jobs import list_collection_jobs

    qfile = tmp_path / "q.jsonl"
    qfile.write_text('{"question": "1+1?", "answer": "#### 2"}\n{"question": "no gold", "answer": "x"}\nnot json\n')
    config = {"inputs": [], "models": {"m": {"backend": "vllm", "path": "smollm2"}},
              "question_sets": {"g": {"source": "gsm8k", "path": str(qfile)}},
              "collection": {"jobs": [{"model": "m", "question_set": "g"}], "runs": 1}}
    config = validate_config(config, load_schema(REPO / "config" / "schema.yaml"))  # defaults filled, as planned
    plan = list_collection_jobs(config)
    assert len(plan.questions["g"]) == 1
    rows = plan.skipped_rows()
    assert [(r["question_set"], r["stage"], r["source"]) for r in rows] == [("g", "questions", f"{qfile}:2"),
                                                                            ("g", "questions", f"{qfile}:3")]
    assert "no '####'" in rows[0]["reason"] and "not valid JSON" in rows[1]["reason"]


@pytest.mark.fast
def test_revision_is_a_branch_tag_or_commit_for_models_and_datasets(tmp_path):
    """`..`, a leading dash or slash, a `.lock` name or spaces: refused by the schema (naming the key) and by
    the code that reads a snapshot; branch, tag, refs/pr/N and a 40-hex commit pass."""
    from thinkprobe.config import ConfigError, load_schema, validate_config
    from thinkprobe.generate.datasets import DatasetError
    from thinkprobe.generate.hub import HubModelError, cached_snapshot
    from thinkprobe.generate.questions import read_question_set

    schema = load_schema(REPO / "config" / "schema.yaml")
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    good = ["main", "v1.0", "refs/pr/12", "refs/convert/parquet", "release_2024-01", "a" * 40]
    bad = ["..", "../../etc/passwd", "a..b", "-rf", "/abs", "a//b", "main.lock", "dir/", "has space", ".hidden",
           "x/.y", ""]
    for rev in good + bad:
        cfg = json.loads(json.dumps(base))
        cfg["models"]["hubm"] = {"backend": "vllm", "hub_id": "org/model", "revision": rev}
        cfg["question_sets"]["hubq"] = {"source": "gsm8k", "hub_id": "org/data", "revision": rev}
        if rev in good:
            validate_config(cfg, schema)
            continue
        with pytest.raises(ConfigError) as err:
            validate_config(cfg, schema)
        assert "models.hubm.revision" in str(err.value) and "question_sets.hubq.revision" in str(err.value), rev
        with pytest.raises(HubModelError, match=r"models.m.revision = .*not a branch, tag or commit"):
            cached_snapshot("m", "org/model", rev, tmp_path)
        with pytest.raises(DatasetError, match=r"question_sets.q.revision = .*not a branch, tag or commit"):
            read_question_set({"name": "q", "source": "gsm8k", "hub_id": "org/data", "revision": rev,
                               "dataset_cache": str(tmp_path)})


@pytest.mark.fast
def test_lock_file_round_trip_and_a_moved_revision(hub_cache, tmp_path):
    """write_section keeps the other section; a lock entry applies while hub id and revision match; a
    cache whose ref now names another commit is a problem naming the entry (unless relock)."""
    from thinkprobe.generate.datasets import prepare
    from thinkprobe.generate.lock import LockError, lock_path, locked_commit, read_lock, write_section

    cache, built = hub_cache
    lock = tmp_path / "study.lock.yaml"
    assert lock_path([tmp_path / "study.yaml"]) == lock
    write_section(lock, "models", {"m": {"hub_id": "org/m", "revision": "main", "commit": "1" * 40}})
    write_section(lock, "datasets", {"gsm8k": {"hub_id": HUB_IDS["gsm8k"], "revision": "main",
                                               "commit": built["gsm8k"][1]}})
    doc = read_lock(lock)
    assert doc["models"]["m"]["commit"] == "1" * 40 and doc["datasets"]["gsm8k"]["commit"] == built["gsm8k"][1]
    assert lock.read_text().startswith("# thinkprobe lock file")
    assert locked_commit(doc, "models", "m", "org/m", "main") == "1" * 40
    assert locked_commit(doc, "models", "m", "org/m", "v2") is None  # the config moved on: the entry no longer applies

    config = {"question_sets": {"gsm8k": {**paper_specs()["gsm8k"]}}, "resources": {"model_cache": str(cache)},
              "collection": {"jobs": [{"model": "x", "question_set": "gsm8k"}]}}
    problems, pending = prepare(config, doc, str(lock))
    assert (problems, pending) == ([], {})
    assert config["question_sets"]["gsm8k"]["locked_commit"] == built["gsm8k"][1]

    moved = dict(doc, datasets={"gsm8k": {**doc["datasets"]["gsm8k"], "commit": "2" * 40}})
    problems, _ = prepare(config, moved, str(lock))
    assert len(problems) == 1 and f"the lock file {lock} pins commit {'2' * 40}" in problems[0]
    assert f"the cache's 'main' is now {built['gsm8k'][1]}" in problems[0] and "relock=true" in problems[0]
    assert prepare(config, moved, str(lock), relock=True) == ([], {})

    lock.write_text("models: {m: {hub_id: org/m, revision: main, commit: abc}}\n")
    with pytest.raises(LockError, match=r"models.m needs hub_id, revision and a 40-hex commit"):
        read_lock(lock)


@pytest.mark.fast
def test_no_shipped_config_points_outside_the_repository():
    """No `../` and no absolute path (of a particular machine) in config/: a clone runs either paper as shipped."""
    import re

    for path in sorted((REPO / "config").glob("*.yaml")):
        text = path.read_text()
        assert "../" not in text, path
        for line in text.splitlines():
            value = line.split("#", 1)[0]  # comments may show a command with a placeholder folder
            assert not re.search(r"(?<![:\w/.~])/[A-Za-z0-9._-]+/", value), (path, line)
    paper = yaml.safe_load((REPO / "config" / "trajectories-paper.yaml").read_text())
    assert all("hub_id" in s and "path" not in s for s in paper["question_sets"].values())
    corpus = yaml.safe_load((REPO / "config" / "corpus-study.yaml").read_text())
    assert all("git" in e and "path" not in e for e in corpus["inputs"])
