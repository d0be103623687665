"""Models by Hugging Face hub id: a shared cache filled once on a login node, read offline by the GPU jobs.

A ``models:`` entry may name ``hub_id`` (``org/name``) and ``revision`` (a branch, a tag or a commit; default
``main``) instead of a local ``path``. The cache is the standard Hugging Face hub cache (``resources.model_cache``;
empty: ``$HF_HUB_CACHE``, i.e. ``$HF_HOME/hub``), in its own layout::

    models--{org}--{name}/snapshots/{commit}/...   the files (symlinks into blobs/)
    models--{org}--{name}/refs/{revision}          a text file holding the commit of a branch or tag

:func:`fetch` (rule ``fetch_model``, one job per model, on a machine with network) fills the cache with
``huggingface_hub.snapshot_download`` at the pinned revision and returns a small manifest: the resolved commit,
every file with its size, the sha256 of the config and tokenizer files, the model's own context length.
huggingface_hub downloads each file to ``*.incomplete`` and renames it into place (resumable, atomic per
file); the manifest is written only after the whole snapshot is there, and :func:`cached_snapshot` checks the
snapshot against it, so a half-downloaded model is never loaded. Files are written with the permissions the
umask allows (huggingface_hub's ``_chmod_and_move``), so a group can share the cache.

:func:`cached_snapshot` (every job that loads a model) resolves the revision from the cache alone, never
from the network. A gated model's token is read from the environment variable named by
``resources.hub_token_env`` (``HF_TOKEN``) and passed to huggingface_hub; it is never written to a file, a
log or a provenance record.

:func:`import_folder` puts a local model folder into a cache in the same layout (an air-gapped cluster
that receives weights by other means; the tests, which cannot reach the hub).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping

from ..outputs import current_umask, sha256_file

from .models import ModelNotFound

HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
# Files whose sha256 goes into the manifest (what decides how text becomes tokens and how the model is built).
HASHED = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
          "special_tokens_map.json", "chat_template.jinja", "chat_template.json", "tokenizer.model", "vocab.json",
          "merges.txt")
MANIFEST_VERSION = 1


class HubModelError(ModelNotFound):
    """A hub model cannot be used: not in the cache, unknown id or revision, incomplete, no chat template.

    The message names the config key (``models.<name>.hub_id`` / ``.revision``), the cache folder and what to
    do about it.
    """


def cache_dir(model_cache: str | os.PathLike | None = None) -> Path:
    """The hub cache folder: ``resources.model_cache`` when set, else huggingface_hub's (``$HF_HUB_CACHE``)."""
    if model_cache:
        return Path(model_cache).expanduser()
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def repo_folder(cache: Path, hub_id: str) -> Path:
    return Path(cache) / ("models--" + hub_id.replace("/", "--"))


def prefetch_hint(cache: Path) -> str:
    return (f"prefetch it on a machine with network (a login node): `snakemake fetch_models` with the same "
            f"--configfile (resources.model_cache = {str(cache)!r}), then rerun")


def cached_snapshot(name: str, hub_id: str, revision: str = "main", model_cache: str | os.PathLike | None = None,
                    manifest: Mapping[str, Any] | None = None) -> tuple[Path, str]:
    """The snapshot folder and commit of ``hub_id`` at ``revision``, from the cache alone (no network).

    With the ``manifest`` written by :func:`fetch`, the snapshot must hold every file it lists with the same
    size (a half-filled snapshot is refused). Raises :class:`HubModelError` naming the key and the command
    that prefetches the model.
    """
    cache = cache_dir(model_cache)
    repo = repo_folder(cache, hub_id)
    where = f"model {name!r} (models.{name}.hub_id = {hub_id!r}, revision {revision!r})"
    if COMMIT.match(revision):
        commit = revision
    else:
        ref = repo / "refs" / revision
        if not ref.is_file():
            known = sorted(p.name for p in (repo / "refs").glob("*")) if (repo / "refs").is_dir() else []
            what = (f"revision {revision!r} is not in the cache (cached: {', '.join(known)}; models.{name}.revision)"
                    if known else f"not in the model cache {cache}")
            raise HubModelError(f"{where}: {what}; {prefetch_hint(cache)}")
        commit = ref.read_text(encoding="utf-8").strip()
    folder = repo / "snapshots" / commit
    if not (folder / "config.json").is_file():
        raise HubModelError(f"{where}: commit {commit} has no complete snapshot in the model cache {cache} "
                            f"(no config.json); {prefetch_hint(cache)}")
    if manifest is not None:
        if manifest.get("commit") != commit:
            raise HubModelError(f"{where}: the cache resolves it to commit {commit}, but it was fetched as "
                                f"{manifest.get('commit')} (results/models/{name}.json); run `snakemake fetch_models`")
        bad = [f["path"] for f in manifest.get("files", [])
               if not (folder / f["path"]).is_file() or (folder / f["path"]).stat().st_size != f["size"]]
        if bad:
            raise HubModelError(f"{where}: the snapshot {folder} is incomplete or changed ({len(bad)} file(s), "
                                f"first {bad[0]!r}); {prefetch_hint(cache)}")
    return folder, commit


def fetch(name: str, hub_id: str, revision: str = "main", model_cache: str | os.PathLike | None = None,
          token_env: str = "HF_TOKEN") -> dict[str, Any]:
    """Download ``hub_id`` at ``revision`` into the cache (resumable) and return its manifest.

    Uses the network unless ``HF_HUB_OFFLINE`` is set; offline, or when the hub cannot be reached, a model
    already in the cache is used as it is. The token (``$token_env``) goes to huggingface_hub only.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (GatedRepoError, LocalEntryNotFoundError, RepositoryNotFoundError,
                                        RevisionNotFoundError)

    cache = cache_dir(model_cache)
    cache.mkdir(parents=True, exist_ok=True)
    token = os.environ.get(token_env) or None
    key = f"models.{name}.hub_id = {hub_id!r}"
    try:
        folder = Path(snapshot_download(repo_id=hub_id, revision=revision, cache_dir=str(cache), token=token))
    except GatedRepoError as exc:
        raise HubModelError(f"{key}: a gated model: accept its licence on the hub and export your token in "
                            f"${token_env} (resources.hub_token_env) ({type(exc).__name__})") from None
    except RevisionNotFoundError:
        raise HubModelError(f"models.{name}.revision = {revision!r}: no such branch, tag or commit of {hub_id}") from None
    except RepositoryNotFoundError:
        raise HubModelError(f"{key}: no such model on the hub (a typo? a private model needs its token in "
                            f"${token_env})") from None
    except LocalEntryNotFoundError:
        raise HubModelError(f"model {name!r} ({key}, revision {revision!r}): the hub cannot be reached "
                            f"(HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE', '')!r}) and it is not in the model "
                            f"cache {cache}; {prefetch_hint(cache)}") from None
    return snapshot_manifest(name, hub_id, revision, folder)


def snapshot_manifest(name: str, hub_id: str, revision: str, folder: Path) -> dict[str, Any]:
    """What was fetched: commit, files and sizes, sha256 of config and tokenizer files, context length.

    Raises :class:`HubModelError` when the tokenizer has no chat template (thinkprobe applies the model's
    chat template to every prompt of the offline engine).
    """
    folder = Path(folder)
    files = sorted((p for p in folder.rglob("*") if p.is_file()), key=lambda p: str(p.relative_to(folder)))
    listing = [{"path": str(p.relative_to(folder)), "size": p.stat().st_size} for p in files]
    hashes = {p.name: sha256_file(p) for p in files if p.parent == folder and p.name in HASHED}
    if not has_chat_template(folder):
        raise HubModelError(f"models.{name}.hub_id = {hub_id!r}: its tokenizer has no chat template "
                            "(tokenizer_config.json `chat_template` or chat_template.jinja); thinkprobe applies the "
                            "model's chat template to every prompt, so use the model's instruct/chat variant")
    return {"model": name, "hub_id": hub_id, "revision": revision, "commit": folder.name, "files": listing,
            "sha256": hashes, "context_length": context_length(folder), "manifest_version": MANIFEST_VERSION}


def has_chat_template(folder: Path) -> bool:
    folder = Path(folder)
    if (folder / "chat_template.jinja").is_file() or (folder / "chat_template.json").is_file():
        return True
    cfg = folder / "tokenizer_config.json"
    if cfg.is_file():
        try:
            return bool(json.loads(cfg.read_text(encoding="utf-8")).get("chat_template"))
        except ValueError:
            return False
    return False


def context_length(folder: Path) -> int | None:
    """The model's own context length from its ``config.json`` (``max_position_embeddings``, also inside
    ``text_config`` for multimodal models), or ``None`` when it does not say."""
    cfg_path = Path(folder) / "config.json"
    if not cfg_path.is_file():
        return None
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    for section in (cfg, cfg.get("text_config") or {}, cfg.get("llm_config") or {}):
        for key in ("max_position_embeddings", "max_sequence_length", "seq_length", "n_positions"):
            if isinstance(section.get(key), int) and section[key] > 0:
                return int(section[key])
    return None


def import_folder(source: str | os.PathLike, hub_id: str, model_cache: str | os.PathLike, revision: str = "main",
                  commit: str | None = None) -> tuple[Path, str]:
    """Copy a local model folder into a hub cache, in huggingface_hub's layout; return (snapshot, commit).

    Files go to ``blobs/<sha256>`` (written to a temporary name, then renamed), the snapshot links to them,
    and ``refs/<revision>`` names the commit (default: a hash of the files' hashes, stable for the same
    content). Permissions follow the umask.
    """
    source = Path(source)
    if not HUB_ID.match(hub_id):
        raise ValueError(f"{hub_id!r} is not a hub id (org/name)")
    repo = repo_folder(Path(model_cache), hub_id)
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    files = sorted(p for p in source.rglob("*") if p.is_file())
    blobs = {p: sha256_file(p) for p in files}
    commit = commit or hashlib.sha1("".join(f"{p.relative_to(source)}:{blobs[p]}\n"
                                            for p in files).encode()).hexdigest()
    umask = current_umask()
    snap = repo / "snapshots" / commit
    for p in files:
        blob = repo / "blobs" / blobs[p]
        if not blob.exists():
            fd, tmp = tempfile.mkstemp(dir=blob.parent, prefix=f".{blob.name}.", suffix=".incomplete")
            os.close(fd)
            shutil.copyfile(p, tmp)
            os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, blob)
        link = snap / p.relative_to(source)
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink() and not link.exists():
            os.symlink(os.path.relpath(blob, link.parent), link)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / revision).write_text(commit, encoding="utf-8")
    return snap, commit
