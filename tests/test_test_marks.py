"""Explicit test categories (issue 27, item 5): tests/conftest.py refuses a test without a category mark, or one
marked fast together with a heavy category, naming its module, so no test joins or leaves the fast loop unseen."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

TESTS = Path(__file__).resolve().parent


def _collect(tmp_path: Path, modules: dict[str, str]) -> subprocess.CompletedProcess:
    """`pytest --collect-only -m fast` over a scratch test folder holding the project's conftest and ``modules``."""
    folder = tmp_path / "tests"
    folder.mkdir()
    shutil.copy(TESTS / "conftest.py", folder / "conftest.py")
    for name, body in modules.items():
        (folder / f"{name}.py").write_text("import pytest\n\n" + body)
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "fast", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), "-c", "/dev/null", str(folder)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)


def test_unmarked_tests_and_fast_with_a_heavy_category_stop_the_collection_naming_their_modules(tmp_path):
    out = _collect(tmp_path, {
        "test_plain": "def test_plain():\n    assert 1 + 1 == 2\n",
        "test_both": "pytestmark = pytest.mark.fast\n\n\n@pytest.mark.engine\ndef test_both():\n    pass\n",
        "test_fine": "pytestmark = pytest.mark.fast\n\n\ndef test_fine():\n    pass\n",
    })
    text = out.stdout + out.stderr
    assert out.returncode == 4, text  # pytest's usage error: nothing runs
    error = text[text.index("tests without a valid category mark"):]
    assert "tests/test_plain.py: test_plain has no category mark" in error
    assert "tests/test_both.py: test_both is marked fast and engine" in error
    assert "test_fine" not in error  # a marked module is not named


def test_marked_tests_are_selected_by_their_category(tmp_path):
    out = _collect(tmp_path, {"test_mixed": "@pytest.mark.fast\ndef test_quick():\n    pass\n\n\n"
                                            "@pytest.mark.workflow\ndef test_runs_snakemake():\n    pass\n"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "test_quick" in out.stdout and "test_runs_snakemake" not in out.stdout
    assert "1/2 tests collected (1 deselected)" in out.stdout
