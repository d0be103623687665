"""The corpus fetched by the workflow: an input named by a git repository and commit, cloned by fetch_corpus.

A real git repository is built from the shared corpus's steering-thinking-llms files, laid out as the public
repository holds them (the trace files under compare-base-reasoning/results/vars/, the prompts in
messages/messages.py, no prompts_for_rows file) with a later commit that changes a trace file; a bare clone
of it is the remote. The study's input names the first commit and a glob; the clone must be shallow, at that
commit, made once, and the adapter must rebuild each row's prompt and domain from messages/messages.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from tests.workflow_helpers import REPO, job_counts, make_workdir, snakemake

from .conftest import corpus_path, missing

pytestmark = pytest.mark.workflow
VARS = "compare-base-reasoning/results/vars"
MODELS = ["deepseek-r1-distill-qwen-1.5b", "deepseek-r1-distill-llama-8b"]


def _git(*args, cwd):
    proc = subprocess.run(["git", "-c", "user.email=t@example.org", "-c", "user.name=t", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def messages_py(messages: list[dict]) -> str:
    """messages/messages.py as the repository writes it: one list, a comment line above each category."""
    lines, category = ["messages = ["], None
    for m in messages:
        if m["category"] != category:
            category = m["category"]
            lines.append(f"    # {category}")
        lines.append("    " + json.dumps({"role": m["role"], "content": m["content"]}, ensure_ascii=False) + ",")
    return "\n".join(lines + ["]", ""])


@pytest.fixture
def remote(tmp_path):
    """A bare repository: commit 1 with two R1-distill trace files, one instruct model's and messages.py;
    commit 2 cuts one trace file to 10 records. Returns (bare path, commit 1, commit 2)."""
    if shutil.which("git") is None:
        missing("git is not installed")
    src = corpus_path("steering-thinking-llms")
    work = tmp_path / "upstream"
    (work / VARS).mkdir(parents=True)
    for name in [*MODELS, "qwen2.5-1.5b-instruct"]:
        shutil.copy(src / VARS / f"reasoning_comparison_{name}.json", work / VARS)
    (work / "messages").mkdir()
    (work / "messages" / "messages.py").write_text(messages_py(json.loads((src / "messages.json").read_text())))
    _git("init", "-q", cwd=work)
    _git("add", "-A", cwd=work)
    _git("commit", "-qm", "traces", cwd=work)
    first = _git("rev-parse", "HEAD", cwd=work)
    cut = work / VARS / f"reasoning_comparison_{MODELS[1]}.json"
    cut.write_text(json.dumps(json.loads(cut.read_text())[:10]))
    _git("commit", "-qam", "fewer traces", cwd=work)
    second = _git("rev-parse", "HEAD", cwd=work)
    bare = tmp_path / "remote.git"
    _git("clone", "-q", "--bare", str(work), str(bare), cwd=tmp_path)
    return bare, first, second


def _config(url: str, commit: str, cache) -> dict:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["inputs"] = [{"question_set": "stl", "adapter": "steering-thinking-llms",
                      "git": {"url": url, "commit": commit, "path": f"{VARS}/reasoning_comparison_deepseek-r1-distill-*.json"}}]
    cfg["collection"]["jobs"] = []
    cfg["trajectories"]["enabled"] = False
    cfg["resources"]["corpus_cache"] = str(cache)
    return cfg


def test_fetch_corpus_clones_once_at_the_pinned_commit(tmp_path, remote):
    bare, first, second = remote
    cache = tmp_path / "git-cache"
    wd = make_workdir(tmp_path / "wd", _config(str(bare), first, cache))
    before = snakemake(wd, "-n", check=False)
    assert before.returncode != 0
    out = before.stdout + before.stderr
    assert f"inputs[0].git ({bare} at {first}): not fetched yet" in out and "`snakemake fetch_corpus`" in out

    snakemake(wd, "fetch_corpus")
    clones = list(cache.glob(f"*/{first}"))
    assert len(clones) == 1
    clone = clones[0]
    assert _git("rev-parse", "HEAD", cwd=clone) == first
    assert (clone / ".git" / "shallow").read_text().split() == [first]  # shallow: only that commit
    assert len(json.loads((clone / VARS / f"reasoning_comparison_{MODELS[1]}.json").read_text())) == 100  # not commit 2's
    assert not (clone / VARS / "prompts_for_rows_seed42.json").exists()
    made = clone.stat().st_mtime_ns
    snakemake(wd, "fetch_corpus")
    assert clone.stat().st_mtime_ns == made and len(list(cache.glob("*/*"))) == 1  # cloned once

    dry = snakemake(wd, "-n")
    counts = job_counts(dry.stdout)
    # 100 rows; the glob leaves the instruct model out: one import job per analysis batch (issue 32, item 6)
    assert counts["import_traces"] == counts["segment"], counts
    unit = "results/traces/deepseek-r1-distill-qwen-1.5b/stl/row000/1.json"
    snakemake(wd, "results/batches/traces/deepseek-r1-distill-qwen-1.5b/stl/b0000.json")  # its import job
    doc = json.loads((wd / unit).read_text())
    rows = json.loads(corpus_path("steering-thinking-llms", VARS, "prompts_for_rows_seed42.json").read_text())
    # the prompt's category, rebuilt from messages/messages.py of the clone as compare_reasoning.py drew the rows
    assert doc["ids"]["domain"] == rows[0]["category"] == "Probabilistic Thinking", doc["ids"]
    assert str(clone) in doc["ids"]["source"]


def test_a_commit_not_in_the_repository_is_an_error_naming_the_key(tmp_path, remote):
    bare, first, _ = remote
    absent = "0123456789abcdef0123456789abcdef01234567"
    wd = make_workdir(tmp_path / "wd", _config(str(bare), absent, tmp_path / "cache"))
    proc = snakemake(wd, "fetch_corpus", check=False)
    assert proc.returncode != 0
    log = (wd / "results/logs/fetch_corpus.log").read_text()
    assert f"inputs[0].git.commit = '{absent}': not in the repository {bare}" in log, log[-2000:]
    assert not list((tmp_path / "cache").glob("*/*"))  # no half clone left that looks finished
    short = make_workdir(tmp_path / "wd2", _config(str(bare), first[:7], tmp_path / "cache"))
    proc = snakemake(short, "-n", check=False)
    assert proc.returncode != 0 and "inputs.0.git.commit" in proc.stdout + proc.stderr


def test_corpus_study_reads_a_local_copy_given_on_the_command_line(tmp_path):
    """config/corpus-study.yaml as shipped names the repository by git; a copy already on disk (here the
    shared corpus) is given as a user gives one, `--config inputs=[...]` with a glob, and plans the study's
    500 units (100 import shards, the segmentation agreement over the five files), no fetch needed."""
    from tests.workflow_helpers import default_config

    folder = corpus_path("steering-thinking-llms", VARS)
    cfg = default_config()
    cfg["resources"]["corpus_cache"] = str(tmp_path / "no-clones")  # the shipped entry is not fetched here
    wd = make_workdir(tmp_path / "wd", cfg)
    local = (f"inputs=[{{path: {folder}/reasoning_comparison_deepseek-r1-distill-*.json, question_set: stl, "
             "adapter: steering-thinking-llms}]")
    dry = snakemake(wd, "-n", "--configfile", str(REPO / "config" / "corpus-study.yaml"), "--config", local)
    counts = job_counts(dry.stdout)
    assert counts["import_traces"] == counts["segment"] and counts["stats_agreement"] == 1, counts
    # analysis batches (issue 32 item 6): one job per model and resources.batch_questions of its 100 prompts
    per_model = -(-100 // cfg["resources"]["batch_questions"])
    assert counts["segment"] == counts["graph"] == counts["metrics"] == 5 * per_model, counts
    assert "fetch_corpus" not in counts
    shipped = snakemake(wd, "-n", "--configfile", str(REPO / "config" / "corpus-study.yaml"), check=False)
    out = shipped.stdout + shipped.stderr
    assert shipped.returncode != 0 and "inputs[0].git (https://github.com/cvenhoff/steering-thinking-llms at " \
        "93259bc3410c99293351df41141cd16b4110422a): not fetched yet" in out
