"""Documentation that cannot go stale (issue 34, item 5): every code reference on the pages (docs/*.md, README.md,
bench/README.md) resolves against the code, and one that does not fails naming the page, the line and the
reference (scripts/doc_refs.py says what counts as a reference)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import doc_refs  # noqa: E402  (scripts/ is not a package)

sys.path.remove(str(REPO / "scripts"))


def test_every_code_reference_on_the_pages_resolves():
    problems = doc_refs.check()
    assert not problems, "stale references on the pages (fix the page or the code):\n" + "\n".join(map(str, problems))


def test_the_pages_are_the_documentation():
    names = {p.relative_to(REPO).as_posix() for p in doc_refs.pages()}
    assert {"README.md", "bench/README.md", "docs/index.md", "docs/development.md", "docs/metrics.md"} <= names
    assert "docs/changes.md" not in names  # a history: it names what was removed, on purpose


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """The checkout without its outputs, in a scratch folder (so the code can be edited), once per module."""
    repo = tmp_path_factory.mktemp("checkout") / "repo"
    top = {".git", ".venv", "site", "results", ".snakemake"}
    shutil.copytree(REPO, repo, ignore=lambda folder, names: [
        n for n in names if n in {"__pycache__", ".pytest_cache"} or (Path(folder) == REPO and n in top)])
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)  # what git ignores is written by a command
    return repo


def test_a_renamed_function_fails_naming_the_page_the_line_and_the_reference(copy):
    repo = copy
    joblog = repo / "thinkprobe" / "stages" / "joblog.py"
    assert doc_refs.check(repo) == []
    source = joblog.read_text()
    joblog.write_text(source.replace("def job_log(", "def job_log_renamed("))
    try:
        problems = doc_refs.check(repo)
    finally:
        joblog.write_text(source)
    assert problems, "renaming stages/joblog.py's job_log broke no reference"
    texts = [str(p) for p in problems]
    # the development page names it as `thinkprobe.stages.joblog.job_log(snakemake.log[0])`
    dev = [p for p in problems if p.page == "docs/development.md"]
    assert any(p.reference == "thinkprobe.stages.joblog.job_log(snakemake.log[0])" for p in dev), texts
    line = next(p.line for p in dev if p.reference == "thinkprobe.stages.joblog.job_log(snakemake.log[0])")
    page_line = (repo / "docs" / "development.md").read_text().splitlines()[line - 1]
    assert "thinkprobe.stages.joblog.job_log" in page_line
    assert all("defines no `job_log`" in p.why for p in problems if "job_log" in p.reference), texts
    assert f"docs/development.md:{line}: `thinkprobe.stages.joblog.job_log(snakemake.log[0])`: " \
           "thinkprobe/stages/joblog.py defines no `job_log`" in texts


PAGE = """# A page

Prose with code words that are no references: `metrics`, `none`, `n_complete`, `max_tokens`, `42`,
`\\boxed{}`, `<think>`, `Retry-After`, `results/tables/metrics.parquet`, `ablation.parquet`, `run.json`,
`{model}/{qset}`, `/dev/shm`, a rule's `params`, `snakemake.log[0]`, `np.sqrt`, `x.y`, `gpu` jobs, `OpenAI`.
1. Write `thinkprobe/tasks/yesno.py` (a file the reader makes), or create `thinkprobe/new_module.py`.

Paths: `thinkprobe/metrics.py` and `thinkprobe/nothere.py`; `stages/collect.py` and `stages/gone.py`;
`rules/*.smk` and `rules/*.smkx`; `thinkprobe/metrics.py:3` and `thinkprobe/metrics.py:999999`;
`stages/joblog.py: job_log` and `stages/joblog.py: no_such_function`; `tests/conftest.py: require/nope`.

Names: `thinkprobe.params.load_params` and `thinkprobe.params.load_parameters`; `thinkprobe.nomodule.x`;
`params.Params.from_dict` and `Params.from_dict` and `Params.from_dictionary`; `params.load_params` and
`params.unload`; `Params` and `ParamsGone`; `load_params()` and `unload_params()`.

Config keys: `stats.cycle_cap`, `stats.cycle_capp`, `stats.enabled: true`, `stats.enable: true`,
`texttiling.window`, `texttiling.windows`, `analysis.texttiling.window`, `models.<name>.engine.dtype`,
`models.smollm2.engine.dtypes`, `engine.dtype`, `grid.models`, `grid.model`.

Rules: rule `segment` and rule `segmentt`; rules `stats_kruskal`, `stats_pages` and `stats_nope`;
rules `stats_*` and `nope_*`.

Commands: `thinkprobe show --trace-id x --out y` and `thinkprobe show --trace-idd x`, `thinkprobe nocommand`,
`snakemake stats --cores 2` and `snakemake nostats --cores 2`; [a link](metrics.md) and [a dead one](gone.md).

```bash
.venv/bin/thinkprobe plan --help
.venv/bin/thinkprobe plan --no-such-option
.venv/bin/python bench/loop_bench.py --no-tests
.venv/bin/python bench/loop_bench.py --no-such-flag
```
"""

STALE = {
    "thinkprobe/nothere.py", "stages/gone.py", "rules/*.smkx", "thinkprobe/metrics.py:999999",
    "stages/joblog.py: no_such_function", "tests/conftest.py: require/nope",
    "thinkprobe.params.load_parameters", "thinkprobe.nomodule.x", "Params.from_dictionary", "params.unload",
    "ParamsGone", "unload_params()",
    "stats.cycle_capp", "stats.enable: true", "texttiling.windows", "models.smollm2.engine.dtypes", "grid.model",
    "segmentt", "stats_nope", "nope_*",
    "thinkprobe show --trace-idd", "thinkprobe nocommand", "snakemake nostats", "gone.md",
    "thinkprobe plan --no-such-option", "bench/loop_bench.py --no-such-flag",
}


def test_each_kind_of_reference_is_resolved_and_prose_is_not_one(copy):
    repo = copy
    page = repo / "docs" / "a-page.md"
    page.write_text(PAGE, encoding="utf-8")
    problems = doc_refs.check(repo, only=[page])
    found = {p.reference for p in problems}
    assert found == STALE, {"missed": sorted(STALE - found), "false positives": sorted(found - STALE)}
    lines = PAGE.splitlines()
    for p in problems:  # each problem names its page and the line the reference is on
        assert p.page == "docs/a-page.md"
        assert p.reference.split(" ")[-1].split(":")[0].rstrip("()") in lines[p.line - 1], p
    why = {p.reference: p.why for p in problems}
    assert why["thinkprobe/metrics.py:999999"].startswith("thinkprobe/metrics.py has ")
    assert why["stats.cycle_capp"].endswith("config/schema.yaml declares no `stats.cycle_capp`)")
    assert "thinkprobe.cli knows" in why["thinkprobe nocommand"] and "show" in why["thinkprobe nocommand"]


def test_a_written_file_is_named_on_its_page(copy):
    repo = copy
    page = repo / "docs" / "another-page.md"
    page.write_text("It writes `config/other.lock.yaml`.\n", encoding="utf-8")
    assert [p.reference for p in doc_refs.check(repo, only=[page])] == ["config/other.lock.yaml"]
    page.write_text("It writes `config/other.lock.yaml`. <!-- refs: written config/other.lock.yaml -->\n")
    assert doc_refs.check(repo, only=[page]) == []


def test_the_layout_names_only_modules_that_exist(copy):
    dev = copy / "docs" / "development.md"
    text = dev.read_text(encoding="utf-8")
    assert "collection_jobs (the collection jobs)" in text and "  generate/" in text
    dev.write_text(text.replace("collection_jobs (the collection jobs)", "plan (the collection jobs)"), encoding="utf-8")
    try:
        problems = doc_refs.check(copy, only=[dev])
    finally:
        dev.write_text(text, encoding="utf-8")
    assert [(p.reference, p.why) for p in problems] == [("plan", "the Layout names no module of thinkprobe/generate/")]
    line = dev.read_text(encoding="utf-8").splitlines()[problems[0].line - 1]
    assert "collection_jobs (the collection jobs)" in line  # the line the stale name was on
    assert doc_refs.check(copy, only=[dev]) == []
