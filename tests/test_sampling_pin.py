"""The sampling code's hash is pinned in the documentation (docs/sampling-store.md).

Stored continuations are keyed by the hash of the sampling code (:func:`thinkprobe.trajectories.sampling.
sampling_code_sha256`): any edit of one of its modules, a refactor or a docstring included, makes every batch
sampled before it unusable (planning refuses to overwrite it). That must be a decision, written where users
read it, not a side effect of a cleanup: this test fails until the documented hashes are the code's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from thinkprobe.trajectories.sampling import sampling_code, sampling_code_sha256

pytestmark = pytest.mark.fast

PAGE = Path(__file__).resolve().parents[1] / "docs" / "sampling-store.md"


def _documented() -> dict[str, str]:
    text = PAGE.read_text(encoding="utf-8")
    block = re.search(r"<!-- sampling-code -->(.*?)<!-- /sampling-code -->", text, re.S)
    assert block, f"{PAGE}: no <!-- sampling-code --> table"
    return dict(re.findall(r"^\| (off|on) \| `([0-9a-f]{64})` \|$", block.group(1), re.M))


def test_the_sampling_code_hash_is_the_documented_one():
    documented = _documented()
    assert set(documented) == {"off", "on"}, documented
    for stopping, key in ((False, "off"), (True, "on")):
        assert sampling_code_sha256(stopping) == documented[key], (
            f"the sampling code (sequential stopping {key}: {', '.join(sampling_code(stopping))}) changed: "
            "every continuation sampled before is refused. If that is intended, update the table in "
            f"{PAGE.name} and write it in docs/changes.md; otherwise undo the edit of the sampling modules")

