"""Protection of expensive outputs that holds for root: the project refuses, not only the file mode.

Snakemake's ``protected()`` makes a file read-only and refuses to overwrite a file it cannot write; root
can write every file, so as root (CI, containers, many clusters) a changed sampling parameter silently
re-sampled and replaced a continuation batch. The workflow therefore checks, at planning time and before any
job starts, every continuation batch that exists against the settings that would produce it now:

* each batch records its **identity** (:func:`identity`: the sampling configuration's digest, the model it
  was sampled from, the engine settings that change which continuations are sampled or cut, and the hash
  of the sampling code) in a small sidecar beside it (``.{batch}.identity.json``, written by the sampling
  job; older batches are read for the same fields);
* a batch whose identity differs from the current config would be re-sampled: planning stops with a message
  naming every such file and the two explicit ways to regenerate them (delete the named files, or run once
  with ``--config overwrite_protected=True``). The continuation store keeps the old samples either way (it is
  keyed by the sampling digest).

Changes that re-sample nothing (an added question, an engine performance knob, resources, code outside
the sampling code) pass: the rerun takes every stored continuation from the store. The same identity keys
the continuation store's parts (:func:`thinkprobe.trajectories.sampling.store_digest`) and the finished
documents (:class:`thinkprobe.trajectories.store.FinishedDocuments`), so what protection lets through
never reuses a sample taken under other settings. Collection stores are protected by the collection job itself (a
stored unit is never rewritten; a unit stored with other settings stops the job: ``StaleUnits``); collected
trace files are re-derived from the store, so they hold the same reasoning whoever rewrites them.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

# what names the weights and tokenizer (a hub model: its id and pinned revision); tuning knobs are not here
MODEL_KEYS = ("backend", "path", "hub_id", "revision", "served_model", "base_url", "tokenizer")

# Engine settings that change which continuations are sampled, cut or recorded (issue 25, item 5) are each
# backend's ``identity_keys`` (thinkprobe/generate/backends/<name>.py): for vLLM the context length (it decides
# which continuations the context cuts, and which prefixes fit at all) and the dtype (it changes the numbers
# every sample is drawn from), for an endpoint the context length and its token ids (they decide how the
# reasoning end is read). Not there: performance knobs (block size, batch sizes, prefix caching, memory, eager
# mode), resources and the engine's own seed (every request carries its own, from sampling.seed); none changes
# what a request asks for.

# what each part of an identity is called in messages
PARTS = {"sampling_sha256": "the sampling settings", "model": "the model", "engine": "the engine settings",
         "code_sha256": "the sampling code"}


def engine_settings(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The engine settings of a stated model entry (or of a stored record of one) that enter its batches'
    identity (its backend's ``identity_keys``), defaults filled in from their one home (the backend's
    ``settings``), so stating a default and leaving it out are the same setting; none for a backend no file
    registers (an old record): :func:`thinkprobe.generate.backends.identity_settings`.

    >>> engine_settings({"backend": "vllm", "engine": {"max_model_len": 4096, "block_size": 16}})
    {'max_model_len': 4096, 'dtype': 'auto'}
    """
    from .generate import backends

    return backends.identity_settings(entry)


def identity(sampling: Mapping[str, Any], entry: Mapping[str, Any],
             code_sha256: str | None = None) -> dict[str, Any]:
    """What decides a batch's continuations: the sampling digest, the model's identity, the engine settings
    that change what is sampled (:func:`engine_settings`) and the hash of the sampling code
    (:func:`thinkprobe.trajectories.sampling.sampling_code_sha256`); not performance knobs or resources.

    ``entry`` is the model's entry as stated (:meth:`thinkprobe.generate.modelspec.ModelSpec.as_stated`, as the
    sampling job's params carry it) or a stored record of one (a batch's provenance): the identity of a batch
    is read from what was recorded, whatever thinkprobe recorded it."""
    blob = json.dumps(dict(sampling), sort_keys=True, default=str).encode()
    return {"sampling_sha256": hashlib.sha256(blob).hexdigest(),
            "model": {k: entry[k] for k in ("name", *MODEL_KEYS) if entry.get(k) is not None},
            "engine": engine_settings(entry), "code_sha256": code_sha256}


def sidecar(path: str | os.PathLike) -> Path:
    p = Path(path)
    return p.with_name(f".{p.stem}.identity.json")


def record(path: str | os.PathLike, ident: Mapping[str, Any]) -> None:
    """Store ``ident`` beside the protected output ``path`` (atomically)."""
    from .outputs import write_json

    write_json(sidecar(path), dict(ident))


def recorded(path: str | os.PathLike) -> dict[str, Any] | None:
    """The identity recorded for an existing output: its sidecar, else read from the batch's own provenance."""
    side = sidecar(path)
    try:
        return json.loads(side.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    try:
        with open(path, encoding="utf-8") as fh:
            prov = json.load(fh).get("provenance") or {}
        found = identity(prov.get("params") or {}, prov.get("model") or {}, prov.get("sampling_code_sha256"))
        return found if "sampling_code_sha256" in prov else {**found, "engine": None}  # older: not recorded
    except (OSError, ValueError, AttributeError):
        return None  # unreadable: Snakemake's own rules decide (an incomplete file is rerun anyway)


def changed(expected: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``(path, what changed)`` for every existing output whose recorded identity differs from ``expected``."""
    out = []
    for path, want in expected.items():
        if not os.path.exists(path):
            continue
        have = recorded(path)
        if have is None:
            continue
        what = [k for k in PARTS if have.get(k) != want.get(k)]
        if what:
            unrecorded = any(have.get(k) is None for k in what)
            note = ", which the batch does not record (an older thinkprobe wrote it)," if unrecorded else ""
            out.append((str(path), " and ".join(PARTS[k] for k in what) + note))
    return out


def refusal(changes: list[tuple[str, str]]) -> str:
    """The planning error: the files that would be overwritten, why, and how to regenerate them on purpose."""
    files = "\n".join(f"  {p} ({why} changed)" for p, why in changes[:20])
    more = f"\n  ... and {len(changes) - 20} more" if len(changes) > 20 else ""
    return (f"refusing to overwrite {len(changes)} protected continuation batch(es): the config now asks for "
            f"other samples than they hold, and re-sampling costs GPU time.\n{files}{more}\n"
            "Restore the previous settings, or regenerate them on purpose: delete the files named above, or run "
            "once with --config overwrite_protected=True (the samples already taken stay in "
            "results/continuations/_store either way).")
