"""Rule ``fetch_dataset``: download a question set's hub dataset into the shared cache and check that it reads.

The job downloads the snapshot (:func:`thinkprobe.generate.hub.download`), checks it is complete, reads the
set's questions from it as every later step will (:func:`thinkprobe.generate.questions.read_question_set`)
and returns the manifest ``results/datasets/<name>.json`` holds. It sits above both the dataset reader
(:mod:`thinkprobe.generate.datasets`) and the question loaders (:mod:`thinkprobe.generate.questions`),
which import each other in one direction only (questions reads hub records through datasets).
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from ..outputs import sha256_file
from .datasets import DEFAULT_SPLIT, MANIFEST_VERSION, DatasetError, check_rev, dataset_needs, spec_config
from .hub import HubModelError, check_complete, download, snapshot_files
from .questions import read_question_set


def fetch(name: str, spec: Mapping[str, Any], model_cache: str | os.PathLike | None = None,
          token_env: str = "HF_TOKEN", commit: str | None = None, lock: str = "") -> dict[str, Any]:
    """Rule ``fetch_dataset``: download the set's dataset snapshot (resumable) and return its manifest.

    ``commit`` (from the lock file ``lock``) pins what is fetched. Offline, or when the hub cannot be reached,
    a snapshot already in the cache is used if it is complete. Then the set's config and split must be in
    the snapshot and give at least one question; the manifest lists every file with its size and sha256.
    """
    hub_id = str(spec["hub_id"])
    revision = check_rev(name, spec)
    key = f"question_sets.{name}"
    try:
        folder = download(hub_id, revision, model_cache, token_env, commit=commit, key=key,
                          target="fetch_datasets", repo_type="dataset", lock=lock, needs=dataset_needs)
        check_complete(folder, hub_id, model_cache, token_env, key=key, target="fetch_datasets",
                       repo_type="dataset", needs=dataset_needs)
    except HubModelError as exc:
        raise DatasetError(str(exc)) from None
    found = read_question_set({**spec, "name": name, "dataset_cache": str(model_cache or ""),
                               "locked_commit": folder.name})
    files = snapshot_files(folder)
    return {"question_set": name, "hub_id": hub_id, "revision": revision, "commit": folder.name,
            "config": spec_config(name, spec), "split": spec.get("split", DEFAULT_SPLIT),
            "questions": len(found.questions), "skipped": len(found.skipped),
            "files": [{"path": p, "size": size, "sha256": sha256_file(folder / p)} for p, size in files.items()],
            "manifest_version": MANIFEST_VERSION}
