"""Question sets by Hugging Face hub id: dataset snapshots in the shared hub cache, read offline with pyarrow.

A ``question_sets:`` entry may name ``hub_id`` (a dataset repository), ``revision`` (branch, tag or commit;
default ``main``), ``config`` (alias ``subset``) and ``split`` (default ``test``; a list reads several splits in
order) instead of a ``path``. Rule ``fetch_dataset`` (:func:`thinkprobe.generate.dataset_fetch.fetch`, on a machine with network; ``snakemake
fetch_datasets`` fetches every set a study uses) downloads the whole snapshot into the same cache as the
models (``resources.model_cache``, huggingface_hub's layout ``datasets--{org}--{name}/snapshots/{commit}/``,
``refs/{revision}``) and writes ``results/datasets/{name}.json``: the resolved commit and every file with its
size and sha256. Every other step reads the snapshot from the cache alone (:func:`hub_records`), never the
network, so a GPU job never waits on the hub.

Which files hold a config's split: the ``configs:`` block of the snapshot's ``README.md`` (its
``data_files``, as the hub's dataset viewer reads them) when it has one, else the hub's usual layouts
(``{config}/{split}-*.parquet``, ``data/{split}-*``, ``{split}.jsonl``, ...; see :func:`split_files`).
Parquet is read with pyarrow, JSONL and JSON arrays with the same reader as a question file; the ``datasets``
library is not needed.

The workflow plans its jobs from the questions, so a set must be in the cache when Snakemake parses the
config. :func:`prepare` (every parse, and ``thinkprobe plan``) annotates each hub set with the cache and
the commit a lock file pins (:mod:`thinkprobe.generate.lock`), refuses a revision the lock pins to another
commit than the cache holds, and lists the sets not yet fetched: those stop every study target with a
message naming the set and the command (``snakemake fetch_datasets``), while the fetch itself can run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterator, Mapping

from .hub import HubModelError, cache_dir, check_revision, missing_shards, repo_folder, resolve_commit, snapshot_files
from .records import QuestionSetError, _BadRecord, _iter_records

DATA_SUFFIXES = (".parquet", ".jsonl", ".json")
DEFAULT_SPLIT = "test"
MANIFEST_VERSION = 1


class DatasetError(QuestionSetError):
    """A hub dataset cannot be read as configured: unknown config or split, an incomplete snapshot, an
    unreadable file. The message names the ``question_sets.<name>`` key."""


class DatasetPending(DatasetError):
    """The dataset is not in the cache yet (or not at the commit its lock pins): run ``snakemake
    fetch_datasets``. The workflow plans without the set and stops every study target with this message."""


def spec_config(name: str, spec: Mapping[str, Any]) -> str | None:
    """The dataset configuration a spec names (``config`` or its alias ``subset``; None: the default one)."""
    if spec.get("config") and spec.get("subset") and spec["config"] != spec["subset"]:
        raise DatasetError(f"question_sets.{name}: config = {spec['config']!r} and subset = {spec['subset']!r} "
                           "name the same thing; give one")
    value = spec.get("config") or spec.get("subset")
    return str(value) if value else None


def spec_splits(name: str, spec: Mapping[str, Any]) -> list[str]:
    value = spec.get("split", DEFAULT_SPLIT)
    splits = [value] if isinstance(value, str) else list(value or [])
    if not splits or not all(isinstance(s, str) and re.match(r"^[A-Za-z0-9._-]+\Z", s) for s in splits):
        raise DatasetError(f"question_sets.{name}.split = {value!r}: a split name (letters, digits, . _ -) or a "
                           "list of them")
    return splits


# ------------------------------------------------------------------------------------ finding the files


def readme_configs(snapshot: Path) -> list[dict[str, Any]] | None:
    """The ``configs:`` block of the dataset card's YAML header (None when the card has none)."""
    card = Path(snapshot) / "README.md"
    if not card.is_file():
        return None
    text = card.read_text(encoding="utf-8", errors="replace")
    m = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", text, re.S)
    if not m:
        return None
    import yaml

    from ..yamlread import load_yaml

    try:
        header = load_yaml(m.group(1), str(card)) or {}
    except (yaml.YAMLError, ValueError):
        return None
    configs = header.get("configs") if isinstance(header, dict) else None
    return [c for c in configs if isinstance(c, dict)] if isinstance(configs, list) else None


def _card_splits(entry: Mapping[str, Any]) -> dict[str, list[str]]:
    """split -> glob patterns of one ``configs:`` entry (``data_files`` as a string, a list or split dicts)."""
    files = entry.get("data_files")
    if isinstance(files, str):
        return {"train": [files]}
    out: dict[str, list[str]] = {}
    for item in files if isinstance(files, list) else []:
        if isinstance(item, str):
            out.setdefault("train", []).append(item)
        elif isinstance(item, dict) and item.get("split"):
            paths = item.get("path")
            out.setdefault(str(item["split"]), []).extend([paths] if isinstance(paths, str) else list(paths or []))
    return out


def _glob(files: list[str], pattern: str) -> list[str]:
    """Files matching a data_files pattern (``*`` stays inside one folder, ``**`` crosses folders)."""
    rx = re.escape(pattern.lstrip("./")).replace(r"\*\*", "\0").replace(r"\*", "[^/]*").replace("\0", ".*")
    rx = rx.replace(r"\?", "[^/]")
    return [f for f in files if re.fullmatch(rx, f)]


def _data_files(snapshot: Path) -> list[str]:
    return sorted(p for p in snapshot_files(snapshot) if p.endswith(DATA_SUFFIXES) and not p.startswith("."))


def _conventional(files: list[str], config: str | None, split: str) -> list[str]:
    """The hub's usual layouts when the card has no ``configs:`` block."""
    folders = [config, f"data/{config}", f"{config}/data"] if config else ["data", ""]
    for folder in folders:
        prefix = f"{folder}/" if folder else ""
        for ext in DATA_SUFFIXES:
            for pattern in (f"{prefix}{split}{ext}", f"{prefix}{split}-*{ext}", f"{prefix}{split}_*{ext}",
                            f"{prefix}{split}/*{ext}"):
                hits = _glob(files, pattern)
                if hits:
                    return hits
    return []


def layout(snapshot: Path) -> dict[str, list[str]]:
    """config -> splits the snapshot offers (for messages): from the card, else from the folder names."""
    card = readme_configs(snapshot)
    if card is not None:
        return {str(c.get("config_name", "default")): sorted(_card_splits(c)) for c in card}
    out: dict[str, set[str]] = {}
    for f in _data_files(snapshot):
        parts = f.split("/")
        split = re.split(r"[-_.]", parts[-1], maxsplit=1)[0]
        folder = "/".join(parts[:-1])
        config = folder[5:] if folder.startswith("data/") else ("" if folder == "data" else folder)
        out.setdefault(config or "default", set()).add(split)
    return {k: sorted(v) for k, v in sorted(out.items())}


def split_files(snapshot: Path, name: str, spec: Mapping[str, Any]) -> list[Path]:
    """The data files of the spec's config and split(s), in split order then file order.

    Raises :class:`DatasetError` naming ``question_sets.<name>.config`` when the snapshot has no such
    config, ``.split`` when the config has no such split, and an incomplete shard series
    (``test-00001-of-00002.parquet`` without its second shard) as an incomplete snapshot.
    """
    snapshot = Path(snapshot)
    config, splits = spec_config(name, spec), spec_splits(name, spec)
    files = _data_files(snapshot)
    card = readme_configs(snapshot)
    offered = layout(snapshot)
    where = f"{spec.get('hub_id')} (commit {snapshot.name})"
    out: list[Path] = []
    for split in splits:
        if card is not None:
            entries = ([c for c in card if str(c.get("config_name")) == config] if config else
                       [c for c in card if c.get("default")] or [c for c in card if c.get("config_name") == "default"]
                       or (card if len(card) == 1 else []))
            if not entries:
                what = (f"question_sets.{name}.config = {config!r}: no such config (subset) in {where}"
                        if config else f"question_sets.{name}: {where} has several configs and none is the default; "
                        "name one with config")
                raise DatasetError(f"{what}; it offers {_offer(offered)}")
            patterns = _card_splits(entries[0]).get(split)
            if patterns is None:
                raise DatasetError(f"question_sets.{name}.split = {split!r}: config "
                                   f"{entries[0].get('config_name')!r} of {where} has no such split; it offers "
                                   f"{_offer(offered)}")
            hits = sorted({f for pat in patterns for f in _glob(files, pat)})
            if not hits:
                raise DatasetError(f"question_sets.{name}: split {split!r} of config {entries[0].get('config_name')!r} "
                                   f"names {patterns}, but no such file is in the snapshot {snapshot}: an incomplete "
                                   "download? run `snakemake fetch_datasets` on a machine with network")
        else:
            hits = _conventional(files, config, split)
            if not hits:
                if config and not any(f.startswith((f"{config}/", f"data/{config}/")) for f in files):
                    raise DatasetError(f"question_sets.{name}.config = {config!r}: no such config (subset) in "
                                       f"{where}; it offers {_offer(offered)}")
                raise DatasetError(f"question_sets.{name}.split = {split!r}: no such split in {where}"
                                   + (f" (config {config!r})" if config else "") + f"; it offers {_offer(offered)}")
        gaps = missing_shards({h: 1 for h in hits})
        if gaps:
            raise DatasetError(f"question_sets.{name}: the snapshot {snapshot} is incomplete: split {split!r} lacks "
                               f"{', '.join(gaps)}; resume it with `snakemake fetch_datasets` on a machine with network")
        out += [snapshot / h for h in hits]
    return out


def _offer(offered: Mapping[str, list[str]]) -> str:
    return "; ".join(f"config {c!r}: splits {', '.join(s)}" for c, s in offered.items()) or "no data file"


def dataset_needs(snapshot: Path) -> list[str]:
    """What a usable dataset snapshot lacks (offline, when the repository's file list is not known): a data
    file at all, every shard of a ``-NNNNN-of-NNNNN`` series, a file for every pattern of its card."""
    files = _data_files(snapshot)
    if not files:
        return ["any data file (*.parquet, *.jsonl, *.json)"]
    missing = missing_shards({f: 1 for f in files})
    for entry in readme_configs(snapshot) or []:
        for split, patterns in _card_splits(entry).items():
            missing += [f"{p} (config {entry.get('config_name')!r}, split {split!r})"
                        for p in patterns if not _glob(files, p)]
    return missing


# ------------------------------------------------------------------------------------- reading records


def iter_records(files: list[Path]) -> Iterator[tuple[str, int, Any]]:
    """(file, line or 1-based row, record) of every record of the split's files, in order.

    Parquet rows come as plain Python objects (pyarrow ``to_pylist``); a file that cannot be read at all is
    a :class:`DatasetError` (a fault of the snapshot, not of one record).
    """
    for path in files:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            try:
                table = pq.read_table(path)
            except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a damaged file
                raise DatasetError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc}); run "
                                   "`snakemake fetch_datasets` to fetch it again") from None
            for row, rec in enumerate(table.to_pylist(), 1):
                yield str(path), row, rec
        else:
            try:
                for line, rec in _iter_records(path):
                    yield str(path), line, rec
            except QuestionSetError as exc:
                raise DatasetError(str(exc)) from None


def snapshot_of(name: str, spec: Mapping[str, Any]) -> tuple[Path, str]:
    """The cached snapshot folder and commit of a hub question set, offline.

    The commit is the one the lock pins (``locked_commit``, filled in by :func:`prepare`), else the one the
    cache's ref names for ``revision``. Raises :class:`DatasetPending` when it is not in the cache.
    """
    hub_id = str(spec["hub_id"])
    revision = check_rev(name, spec)
    cache = cache_dir(spec.get("dataset_cache") or None)
    repo = repo_folder(cache, hub_id, "dataset")
    locked = spec.get("locked_commit") or None
    commit = locked or resolve_commit(repo, revision)
    if commit is None or not (repo / "snapshots" / commit).is_dir():
        what = (f"the commit {locked} that the lock file pins for it is not in the dataset cache {cache}" if locked
                else f"not in the dataset cache {cache}")
        raise DatasetPending(f"question set {name!r} (question_sets.{name}.hub_id = {hub_id!r}, revision "
                             f"{revision!r}): {what}; fetch it on a machine with network (a login node): "
                             f"`snakemake fetch_datasets` with the same --configfile, then rerun")
    return repo / "snapshots" / commit, commit


def check_rev(name: str, spec: Mapping[str, Any]) -> str:
    try:
        return check_revision(spec["revision"] if "revision" in spec else "main", f"question_sets.{name}.revision")
    except HubModelError as exc:
        raise DatasetError(str(exc)) from None


def hub_records(name: str, spec: Mapping[str, Any]) -> tuple[Iterator[tuple[str, int, Any]], str]:
    """The records of a hub question set from the cache (no network), and a label for messages."""
    folder, commit = snapshot_of(name, spec)
    files = split_files(folder, name, spec)
    config = spec_config(name, spec)
    where = (f"{spec['hub_id']}@{commit[:12]}" + (f" config {config!r}" if config else "")
             + f" split {spec.get('split', DEFAULT_SPLIT)!r}")
    return iter_records(files), where


def check_manifest(name: str, folder: Path, manifest: Mapping[str, Any]) -> None:
    """The snapshot still holds every file its fetch listed, with the same size (a cheap stat per file)."""
    bad = [f["path"] for f in manifest.get("files", [])
           if not (folder / f["path"]).is_file() or (folder / f["path"]).stat().st_size != f["size"]]
    if bad:
        raise DatasetError(f"question_sets.{name}: the snapshot {folder} is incomplete or changed since it was "
                           f"fetched ({len(bad)} file(s), first {bad[0]!r}); run `snakemake fetch_datasets` again")


# ---------------------------------------------------------------------------------------- the workflow


def hub_sets(config: Mapping[str, Any]) -> list[str]:
    """The question sets named by hub id that the study uses (collection jobs and trajectory sets)."""
    qsets = config.get("question_sets") or {}
    used = {str(j["question_set"]) for j in (config.get("collection") or {}).get("jobs") or []}
    traj = config.get("trajectories") or {}
    if traj.get("models"):
        used |= {str(q) for q in traj.get("question_sets") or []}
    return sorted(q for q in used if isinstance(qsets.get(q), Mapping) and qsets[q].get("hub_id"))


def prepare(config: dict[str, Any], lock: Mapping[str, Any], lock_file: str = "", relock: bool = False,
            results: str | os.PathLike = "results") -> tuple[list[str], dict[str, str]]:
    """Make the config's hub question sets readable offline; return (problems, pending).

    Each hub set's spec gets ``dataset_cache`` (``resources.model_cache``) and, when the lock pins its
    revision (and ``relock`` is false), ``locked_commit``. ``problems``: a lock entry whose revision the
    cache resolves to another commit (the revision moved), a bad revision, a snapshot changed since its fetch
    (``results/datasets/<name>.json``). ``pending``: set -> why it cannot be read yet (not fetched).
    """
    from .lock import locked_commit, moved

    problems: list[str] = []
    pending: dict[str, str] = {}
    cache = (config.get("resources") or {}).get("model_cache") or ""
    for name in hub_sets(config):
        spec = config["question_sets"][name]
        spec["dataset_cache"] = cache
        try:
            revision = check_rev(name, spec)
        except DatasetError as exc:
            problems.append(str(exc))
            continue
        commit = None if relock else locked_commit(lock, "datasets", name, str(spec["hub_id"]), revision)
        spec["locked_commit"] = commit or ""
        if commit:
            repo = repo_folder(cache_dir(cache or None), str(spec["hub_id"]), "dataset")
            clash = moved(repo, revision, commit)
            if clash:
                problems.append(f"question_sets.{name} ({spec['hub_id']}, revision {revision!r}): the lock file "
                                f"{lock_file} pins commit {commit}, but the cache's {revision!r} is now {clash}; "
                                f"stopping before any job. Move the lock on purpose with `--config relock=true` "
                                f"(then `snakemake fetch_datasets`), or pin revision: {commit} in the config")
                continue
        try:
            folder, _ = snapshot_of(name, spec)
        except DatasetPending as exc:
            pending[name] = str(exc)
            continue
        manifest = Path(results) / "datasets" / f"{name}.json"
        if manifest.is_file():
            import json

            doc = json.loads(manifest.read_text(encoding="utf-8"))
            if doc.get("commit") == folder.name:
                try:
                    check_manifest(name, folder, doc)
                except DatasetError as exc:
                    problems.append(str(exc))
    return problems, pending


def prepare_study(config: dict[str, Any], configfiles: list[str | os.PathLike], base: str | os.PathLike = "."
                  ) -> tuple[list[str], dict[str, str]]:
    """:func:`prepare` for a config read outside Snakemake (``thinkprobe plan``): the lock of the first
    config file, the results of ``base``."""
    from .lock import lock_path, read_lock, relock_requested

    lock_file = lock_path(configfiles or [Path(base) / "config" / "config.yaml"])
    return prepare(config, read_lock(lock_file), str(lock_file), relock_requested(config.get("relock")),
                   Path(base) / "results")
