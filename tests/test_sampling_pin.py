"""The sampling code's hashes are pinned in the documentation (docs/sampling-store.md).

Stored continuations are keyed by the hash of the sampling code that made them (:func:`thinkprobe.trajectories.
sampling.sampling_code_sha256`, one per backend, estimator and sequential-stopping setting): any edit of one of
its modules, a refactor or a docstring included, makes every batch sampled before with that combination
unusable (planning refuses to overwrite it). That must be a decision, written where users read it, not a side
effect of a cleanup: this test fails until the documented table is the code's, one row per combination."""

from __future__ import annotations

import re
from itertools import product
from pathlib import Path

import pytest

from thinkprobe.generate.defaults import ESTIMATORS
from thinkprobe.generate.backends import continuation_names
from thinkprobe.trajectories.sampling import sampling_code, sampling_code_sha256

pytestmark = pytest.mark.fast

PAGE = Path(__file__).resolve().parents[1] / "docs" / "sampling-store.md"
STOPPING = {False: "off", True: "on"}


def _documented() -> dict[tuple[str, str, str], str]:
    text = PAGE.read_text(encoding="utf-8")
    block = re.search(r"<!-- sampling-code -->(.*?)<!-- /sampling-code -->", text, re.S)
    assert block, f"{PAGE}: no <!-- sampling-code --> table"
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \| (off|on) \| `([0-9a-f]{64})` \|$", block.group(1), re.M)
    table = {(b, e, s): h for b, e, s, h in rows}
    assert len(table) == len(rows), f"{PAGE}: a combination appears twice in the sampling-code table"
    return table


def test_the_sampling_code_hashes_are_the_documented_ones():
    documented = _documented()
    combos = {(b, e, STOPPING[s]): (b, e, s) for b, e, s in product(continuation_names(), ESTIMATORS, STOPPING)}
    assert set(documented) == set(combos), (
        f"{PAGE.name}: the sampling-code table must have one row per (backend, estimator, stopping) the code "
        f"supports; missing {sorted(set(combos) - set(documented))}, unknown {sorted(set(documented) - set(combos))}")
    for row, (backend, estimator, stopping) in combos.items():
        assert sampling_code_sha256(stopping, backend, estimator) == documented[row], (
            f"the sampling code of {row} ({', '.join(sampling_code(stopping, backend, estimator))}) changed: "
            "every continuation sampled before with it is refused. If that is intended, update the table in "
            f"{PAGE.name} and write it in docs/changes.md; otherwise undo the edit of the sampling modules")
