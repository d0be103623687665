"""The lock file: the commit every hub model and dataset of a study resolved to, so a rerun reads the same bytes.

``snakemake fetch_models`` and ``snakemake fetch_datasets`` write ``<config>.lock.yaml`` beside the study's
config (the first ``--configfile``; ``config/config.lock.yaml`` for the embedded default)::

    models:
      qwen2.5-7b-it: {commit: a09a354..., hub_id: Qwen/Qwen2.5-7B-Instruct, revision: main}
    datasets:
      gsm8k: {commit: e53f048..., hub_id: openai/gsm8k, revision: main}

Commit it with the config. A run with a lock fetches and loads the locked commits (an entry applies while
the config names the same hub id and revision; change either and the next fetch rewrites it). A run whose
cache resolves a locked revision to another commit (the branch moved on the hub, or another study fetched it
into a shared cache) stops at parse time, before any job, naming the entry; ``--config relock=true`` moves
the lock on purpose (the fetch then resolves the revision again and rewrites the entry).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from .hub import COMMIT

SECTIONS = ("models", "datasets")
SUFFIX = ".lock.yaml"
HEADER = """\
# thinkprobe lock file: the commit each hub model and dataset of {config} resolved to.
# Written by `snakemake fetch_models` / `snakemake fetch_datasets`; commit it with the config. A run loads
# these commits and stops if the cache holds another commit for a locked revision; `--config relock=true`
# moves the lock on purpose (docs/data.md).
"""


class LockError(ValueError):
    """The lock file is not readable as a lock: the message names the file and the entry."""


def relock_requested(value: Any) -> bool:
    """The config's ``relock``: true, or the string ``"true"`` that ``--config relock=true`` passes.

    >>> relock_requested(True), relock_requested("true"), relock_requested(False), relock_requested("false")
    (True, True, False, False)
    """
    return value is True or value == "true"


def lock_path(configfiles: Iterable[str | os.PathLike]) -> Path:
    """``<dir>/<stem>.lock.yaml`` of the first config file (the study's), or ``config/config.lock.yaml``.

    >>> str(lock_path(["config/trajectories-paper.yaml", "extra.yaml"]))
    'config/trajectories-paper.lock.yaml'
    """
    files = [Path(p) for p in configfiles]
    first = files[0] if files else Path("config/config.yaml")
    return first.with_name(first.name[: -len(first.suffix)] + SUFFIX if first.suffix else first.name + SUFFIX)


def read_lock(path: str | os.PathLike) -> dict[str, dict[str, dict[str, str]]]:
    """The lock's entries (``{"models": {name: entry}, "datasets": {...}}``); empty when there is no file."""
    import yaml

    from ..yamlread import read_yaml

    path = Path(path)
    if not path.is_file():
        return {s: {} for s in SECTIONS}
    try:
        doc = read_yaml(path) or {}
    except (yaml.YAMLError, ValueError) as exc:
        raise LockError(f"lock file {path}: not valid YAML ({exc})") from None
    if not isinstance(doc, dict) or set(doc) - set(SECTIONS):
        raise LockError(f"lock file {path}: expected the sections {', '.join(SECTIONS)}, got "
                        f"{sorted(doc) if isinstance(doc, dict) else type(doc).__name__}")
    out: dict[str, dict[str, dict[str, str]]] = {}
    for section in SECTIONS:
        entries = doc.get(section) or {}
        if not isinstance(entries, dict):
            raise LockError(f"lock file {path}: {section} must be a mapping of names to entries")
        for name, entry in entries.items():
            if (not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("hub_id", "revision"))
                    or not COMMIT.match(str(entry.get("commit", "")))):
                raise LockError(f"lock file {path}: {section}.{name} needs hub_id, revision and a 40-hex commit, "
                                f"got {entry!r}")
        out[section] = {str(k): dict(v) for k, v in entries.items()}
    return out


def locked_commit(lock: Mapping[str, Any], section: str, name: str, hub_id: str, revision: str) -> str | None:
    """The commit the lock pins for ``section.name`` when the config still names the same hub id and revision."""
    entry = (lock.get(section) or {}).get(name)
    if entry and entry.get("hub_id") == hub_id and entry.get("revision") == revision:
        return str(entry["commit"])
    return None


def pinned(lock_file: str | os.PathLike, section: str, name: str, hub_id: str, revision: str,
           relock: bool = False) -> str | None:
    """The commit a fetch job must fetch: the lock's, read when the job runs (None: resolve the revision)."""
    return None if relock else locked_commit(read_lock(lock_file), section, name, hub_id, revision)


def stale_pin(commit: str | None, manifest: str | os.PathLike) -> str:
    """A fetch rule's ``pin`` param: the locked ``commit`` when the fetch manifest names another one (the
    lock changed since the fetch: rerun it), else "" (so writing a lock from the manifests reruns nothing)."""
    import json

    path = Path(manifest)
    if not commit or not path.is_file():
        return ""
    try:
        fetched = json.loads(path.read_text(encoding="utf-8")).get("commit")
    except ValueError:
        return commit
    return "" if fetched == commit else commit


def moved(repo: Path, revision: str, commit: str) -> str | None:
    """The commit the cache's ref names for ``revision`` when it is not ``commit`` (None: same, or no ref)."""
    if COMMIT.match(revision):
        return None
    ref = Path(repo) / "refs" / revision
    if not ref.is_file():
        return None
    cached = ref.read_text(encoding="utf-8").strip()
    return cached if cached != commit else None


def check_models(config: Mapping[str, Any], names: Iterable[str], lock: Mapping[str, Any], lock_file: str,
                 relock: bool = False) -> tuple[list[str], dict[str, str]]:
    """(problems, model -> locked commit) for the study's hub models: a locked revision the cache now resolves
    to another commit is a problem naming the entry (unless ``relock``)."""
    from .hub import cache_dir, repo_folder

    problems: list[str] = []
    commits: dict[str, str] = {}
    if relock:
        return problems, commits
    cache = cache_dir((config.get("resources") or {}).get("model_cache") or None)
    for name in names:
        m = (config.get("models") or {}).get(name) or {}
        revision = str(m.get("revision") or "main")
        commit = locked_commit(lock, "models", name, str(m.get("hub_id")), revision)
        if not commit:
            continue
        clash = moved(repo_folder(cache, str(m["hub_id"])), revision, commit)
        if clash:
            problems.append(f"models.{name} ({m['hub_id']}, revision {revision!r}): the lock file {lock_file} pins "
                            f"commit {commit}, but the cache's {revision!r} is now {clash}; stopping before any "
                            f"job. Move the lock on purpose with `--config relock=true` (then `snakemake "
                            f"fetch_models`), or pin revision: {commit} in the config")
            continue
        commits[name] = commit
    return problems, commits


def write_section(path: str | os.PathLike, section: str, entries: Mapping[str, Mapping[str, Any]],
                  config_name: str = "") -> dict[str, dict[str, dict[str, str]]]:
    """Replace one section of the lock file with ``entries`` (name -> manifest with hub_id, revision, commit),
    keeping the other section; atomic, and serialised against a concurrent writer (a lock on the folder)."""
    import yaml

    from ..outputs import atomic_write_text

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        doc = read_lock(path)
        doc[section] = {name: {"hub_id": str(e["hub_id"]), "revision": str(e["revision"]), "commit": str(e["commit"])}
                        for name, e in sorted(entries.items())}
        body = {s: doc[s] for s in SECTIONS if doc.get(s)}
        if not body and not path.exists():  # a study without hub models or datasets: no lock to write
            return doc
        atomic_write_text(path, HEADER.format(config=config_name or path.name.replace(SUFFIX, ".yaml"))
                          + yaml.safe_dump(body, sort_keys=True, default_flow_style=False))
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    return doc
