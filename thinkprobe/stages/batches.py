"""Analysis batches: the Thought Graph analysis (segment, graph, metrics) runs one job per batch of units, and
each job writes its units' files itself (issue 32, item 6; DESIGN.md section 4, rules 6 and 7).

A batch is one model's units (every run) of ``resources.batch_questions`` consecutive questions of a question set,
in the set's own order, named ``b0000``, ``b0001``, ... like a collection batch
(:mod:`thinkprobe.generate.collection_jobs`). The DAG therefore grows with batches, not with questions: a
study of one model on 75,000 questions plans as many analysis jobs as 16 models on 4,700 questions.

Snakemake tracks a batch through its *manifest* (``results/batches/<stage>/<model>/<question_set>/<batch>.json``,
the job's only output), which lists every unit file the job wrote with its status and sha256; the unit files
themselves (``results/<stage>/<model>/<question_set>/<question_id>/<run>.json``, one per unit and stage, as
before) are written atomically by the job. A rule that reads unit files takes the manifests as its input and
finds the files with :func:`listed_files`.

The batch size is a resource, not a parameter: a job's params name its units (so a different batching reruns the
jobs whose unit lists changed), and a rerun job keeps every unit file that is already *current*
(:func:`current_doc`: written by the same thinkprobe version and code, from the same parameters and the same
input files, and intact), so a re-batching recomputes nothing: each job verifies its units and writes its
manifest again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

BATCHES = "results/batches"
IDENTITY = ("thinkprobe_version", "modules", "source_sha256", "params", "inputs")
"""The provenance fields that decide whether a unit file is current (device and timing fields do not)."""


def question_batches(questions: Mapping[str, Sequence[str]], models: Mapping[str, Iterable[str]],
                     size: int) -> dict[tuple[str, str, str], list[str]]:
    """(model, question set, batch) -> the batch's question ids: ``size`` questions per batch, for each model of
    the question set (``models``: question set -> models; a collected set's models are those collected on it).

    >>> question_batches({"qs": ["a", "b", "c"]}, {"qs": ["m"]}, 2)
    {('m', 'qs', 'b0000'): ['a', 'b'], ('m', 'qs', 'b0001'): ['c']}
    """
    return {(model, qset, f"b{k // size:04d}"): list(qids[k:k + size])
            for qset, qids in questions.items() for model in models[qset] for k in range(0, len(qids), size)}


def batch_count(n_questions: int, size: int) -> int:
    """Batches of one model and question set (the planner's count of analysis jobs per stage)."""
    return -(-n_questions // size)


def manifest(stage: str, model: str, question_set: str, batch: str) -> str:
    """The manifest of one batch of ``stage`` (``segments``, ``graphs``, ``metrics``): the job's output.

    >>> manifest("graphs", "m", "qs", "b0001")
    'results/batches/graphs/m/qs/b0001.json'
    """
    return f"{BATCHES}/{stage}/{model}/{question_set}/{batch}.json"


def listed_files(manifests: Iterable[str | os.PathLike]) -> list[str]:
    """The unit files the manifests list, in their order (question, then run, within each batch)."""
    files: list[str] = []
    for path in manifests:
        with open(path, encoding="utf-8") as fh:
            files.extend(u["file"] for u in json.load(fh)["units"])
    return files


def _normal(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples as lists, numpy scalars as numbers)."""
    from ..outputs import _json_default

    return json.loads(json.dumps(value, default=_json_default))


def current_doc(out_path: str | os.PathLike, prov: Mapping[str, Any],
                embeddings: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """The unit file at ``out_path`` when it is current for the provenance ``prov`` that its job would write now
    (the :data:`IDENTITY` fields: version, code, parameters, each input's sha256) and intact (its digest
    verifies; with ``embeddings``, an ``ok`` unit's embeddings file verifies too); else None: the job computes it.
    An altered file is not an error here: it is simply computed again."""
    from .unitfiles import UnitFileError, load_embeddings, read_unit

    if not os.path.exists(out_path):
        return None
    try:
        doc = read_unit(out_path)
    except UnitFileError:
        return None
    have = doc.get("provenance") or {}
    want = _normal({k: prov.get(k) for k in IDENTITY})
    if {k: have.get(k) for k in IDENTITY} != want:
        return None
    if embeddings is not None and doc["status"] == "ok":
        try:
            load_embeddings(embeddings, outdate=False)
        except UnitFileError:
            return None
    return doc


def outdate_stale(manifests: Iterable[str | os.PathLike]) -> list[str]:
    """Mark out of date every input manifest that lists a unit file a stage refused in this job (its time set
    to the epoch by :func:`thinkprobe.integrity.outdate`), so that the next run reruns the batch job that wrote
    it (which then recomputes that unit alone: the others are current). Returns the manifests marked."""
    from .. import integrity

    marked = []
    for path in manifests:
        try:
            stale = any(Path(f).stat().st_mtime < 10 for f in listed_files([path]))
        except (OSError, ValueError, KeyError):
            stale = True
        if stale and integrity.outdate(path):
            marked.append(str(path))
    return marked


def write_manifest(unit_files: Sequence[str], out_path: str | os.PathLike) -> dict[str, int]:
    """A batch's manifest, written last by its job: every unit file with its status and sha256, and the counts.
    A unit file that does not read back (a fault of the job: it has just written it) stops the job, naming it."""
    from ..codedeps import code_modules
    from ..outputs import provenance, sha256_file, write_json
    from .unitfiles import STATUSES, read_unit

    units, counts = [], {status: 0 for status in STATUSES}
    for path in unit_files:
        doc = read_unit(path)
        counts[doc["status"]] += 1
        units.append({"file": str(path), "status": doc["status"], "sha256": sha256_file(path)})
    write_json(out_path, {"units": units, "counts": counts,
                          "provenance": provenance(code_modules(write_manifest), {}, [])})
    return counts


def unit_files(stage: str, units: Iterable[str], ext: str = "json") -> list[str]:
    """The files of ``stage`` of the units ``model/question_set/question_id/run``.

    >>> unit_files("graphs", ["m/qs/q1/1"])
    ['results/graphs/m/qs/q1/1.json']
    """
    return [f"results/{stage}/{u}.{ext}" for u in units]


def transform_batch(in_paths: Sequence[str], emb_paths: Sequence[str], out_paths: Sequence[str], modules: list[str],
                    analysis: dict[str, Any], build, stage: str) -> dict[str, int]:
    """:func:`.unitfiles.transform_units` for the units whose output is not current (:func:`current_doc`); the
    others are kept as they are, counted by their status."""
    from .unitfiles import STATUSES, transform_units, unit_provenance

    counts = {status: 0 for status in STATUSES}
    todo = []
    for i, (in_path, emb_path, out_path) in enumerate(zip(in_paths, emb_paths, out_paths)):
        kept = current_doc(out_path, unit_provenance(modules, analysis, [in_path, emb_path]))
        if kept is None:
            todo.append(i)
        else:
            counts[kept["status"]] += 1
    done = transform_units([in_paths[i] for i in todo], [emb_paths[i] for i in todo], [out_paths[i] for i in todo],
                           modules, analysis, build, stage=stage)
    return {status: counts[status] + done[status] for status in STATUSES}
