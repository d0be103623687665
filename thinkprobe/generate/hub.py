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
file); the manifest is written only for a complete snapshot (:func:`check_complete`: against the repository's
file list when the hub answers, else against what a usable model needs: its config, its tokenizer and every
weight shard its index names), and :func:`cached_snapshot` checks the snapshot against the manifest, so a
half-downloaded model is never loaded. Files are written with the permissions the umask allows (huggingface_hub's ``_chmod_and_move``), so a group can share the cache.

:func:`cached_snapshot` (every job that loads a model) reads the commit its fetch manifest names (with a lock
file, the locked commit: :mod:`thinkprobe.generate.lock`), or resolves the revision from the cache alone,
never from the network. A gated model's token is read from the environment variable named by
``resources.hub_token_env`` (``HF_TOKEN``) and passed to huggingface_hub; it is never written to a file, a
log or a provenance record.

:func:`import_folder` puts a local model folder into a cache in the same layout (an air-gapped cluster
that receives weights by other means; the tests, which cannot reach the hub). Datasets use the same cache
and the same functions with ``repo_type="dataset"`` (``datasets--{org}--{name}/``;
:mod:`thinkprobe.generate.datasets`).

A ``revision`` is a branch, a tag or a 40-hex commit (:func:`check_revision`): a name git would refuse (``..``,
a leading ``-`` or ``/``, spaces) is an error naming its key before anything is fetched or read.
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

HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*\Z")
COMMIT = re.compile(r"^[0-9a-f]{40}\Z")
# A branch or tag name as the hub (and git) allow it, slashes included (refs/pr/1, refs/convert/parquet): no
# "..", no empty or dot-led component, no ".lock" ending, nothing but letters, digits and . _ - /. The schema
# holds the same pattern (config/schema.yaml `revision`).
REVISION = re.compile(r"^(?!.*\.\.)(?!.*//)(?!.*\.lock(?:/|$))(?![-/.])(?!.*/[.-])(?!.*/$)[A-Za-z0-9._/-]{1,255}\Z")
# Files whose sha256 goes into the manifest (what decides how text becomes tokens and how the model is built).
HASHED = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
          "special_tokens_map.json", "chat_template.jinja", "chat_template.json", "tokenizer.model", "vocab.json",
          "merges.txt")
MANIFEST_VERSION = 1


class ModelNotFound(FileNotFoundError):
    """A model's weights are not on this machine: not a built-in model, not a local folder with a config.json,
    not (completely) in the hub cache; the message says what was tried.

    Raised by :mod:`thinkprobe.generate.models` and, as :class:`HubModelError`, here: it lives in this module,
    which :mod:`.models` imports, so that the two share it without an import circle.
    """


class HubModelError(ModelNotFound):
    """A hub model cannot be used: not in the cache, unknown id or revision, incomplete, no chat template.

    The message names the config key (``models.<name>.hub_id`` / ``.revision``), the cache folder and what to
    do about it.
    """


def check_revision(revision: str, key: str) -> str:
    """``revision`` when it is a branch, a tag or a 40-hex commit; else :class:`HubModelError` naming ``key``.

    >>> check_revision("main", "models.m.revision"), check_revision("refs/pr/1", "k"), check_revision("v1.0", "k")
    ('main', 'refs/pr/1', 'v1.0')
    >>> check_revision("../../etc", "models.m.revision")
    Traceback (most recent call last):
    ...
    thinkprobe.generate.hub.HubModelError: models.m.revision = '../../etc': not a branch, tag or commit (a name of letters, digits and . _ - /, without '..', or a 40-hex commit)
    """
    if not isinstance(revision, str) or not REVISION.match(revision):
        raise HubModelError(f"{key} = {revision!r}: not a branch, tag or commit (a name of letters, digits and "
                            ". _ - /, without '..', or a 40-hex commit)")
    return revision


def cache_dir(model_cache: str | os.PathLike | None = None) -> Path:
    """The hub cache folder: ``resources.model_cache`` when set, else huggingface_hub's (``$HF_HUB_CACHE``)."""
    if model_cache:
        return Path(model_cache).expanduser()
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def repo_folder(cache: Path, hub_id: str, repo_type: str = "model") -> Path:
    """``models--org--name`` (or ``datasets--org--name``) inside the cache, huggingface_hub's layout."""
    return Path(cache) / (f"{repo_type}s--" + hub_id.replace("/", "--"))


def prefetch_hint(cache: Path, target: str = "fetch_models") -> str:
    return (f"prefetch it on a machine with network (a login node): `snakemake {target}` with the same "
            f"--configfile (resources.model_cache = {str(cache)!r}), then rerun")


def resolve_commit(repo: Path, revision: str) -> str | None:
    """The commit ``revision`` names in a cached repository (a 40-hex revision is its own), or None."""
    if COMMIT.match(revision):
        return revision
    ref = Path(repo) / "refs" / revision
    return ref.read_text(encoding="utf-8").strip() if ref.is_file() else None


def cached_snapshot(name: str, hub_id: str, revision: str = "main", model_cache: str | os.PathLike | None = None,
                    manifest: Mapping[str, Any] | None = None) -> tuple[Path, str]:
    """The snapshot folder and commit of ``hub_id`` at ``revision``, from the cache alone (no network).

    With the ``manifest`` written by :func:`fetch`, the snapshot is the commit that fetch resolved (and, with
    a lock file, pinned), whatever the cache's ref says now, and it must hold every file the manifest lists
    with the same size (a half-filled snapshot is refused). Raises :class:`HubModelError` naming the key and
    the command that prefetches the model.
    """
    check_revision(revision, f"models.{name}.revision")
    cache = cache_dir(model_cache)
    repo = repo_folder(cache, hub_id)
    where = f"model {name!r} (models.{name}.hub_id = {hub_id!r}, revision {revision!r})"
    commit = str(manifest["commit"]) if manifest is not None and manifest.get("commit") else resolve_commit(repo, revision)
    if commit is None:
        known = sorted(p.name for p in (repo / "refs").glob("*")) if (repo / "refs").is_dir() else []
        what = (f"revision {revision!r} is not in the cache (cached: {', '.join(known)}; models.{name}.revision)"
                if known else f"not in the model cache {cache}")
        raise HubModelError(f"{where}: {what}; {prefetch_hint(cache)}")
    folder = repo / "snapshots" / commit
    if not (folder / "config.json").is_file():
        raise HubModelError(f"{where}: commit {commit} has no complete snapshot in the model cache {cache} "
                            f"(no config.json); {prefetch_hint(cache)}")
    if manifest is not None:
        bad = [f["path"] for f in manifest.get("files", [])
               if not (folder / f["path"]).is_file() or (folder / f["path"]).stat().st_size != f["size"]]
        if bad:
            raise HubModelError(f"{where}: the snapshot {folder} is incomplete or changed ({len(bad)} file(s), "
                                f"first {bad[0]!r}); {prefetch_hint(cache)}")
    return folder, commit


def fetch(name: str, hub_id: str, revision: str = "main", model_cache: str | os.PathLike | None = None,
          token_env: str = "HF_TOKEN", commit: str | None = None, lock: str = "") -> dict[str, Any]:
    """Download ``hub_id`` at ``revision`` into the cache (resumable) and return its manifest.

    ``commit`` (from the lock file ``lock``) pins what is fetched: the manifest then holds that commit. Uses
    the network unless ``HF_HUB_OFFLINE`` is set; offline, or when the hub cannot be reached, a model already
    in the cache is used as it is, if it is complete (:func:`check_complete`). The token (``$token_env``) goes
    to huggingface_hub only.
    """
    check_revision(revision, f"models.{name}.revision")
    folder = download(hub_id, revision, model_cache, token_env, commit=commit, key=f"models.{name}",
                      target="fetch_models", lock=lock)
    check_complete(folder, hub_id, model_cache, token_env, key=f"models.{name}", target="fetch_models")
    return snapshot_manifest(name, hub_id, revision, folder)


def download(hub_id: str, revision: str, model_cache: str | os.PathLike | None, token_env: str,
             commit: str | None = None, key: str = "models.?", target: str = "fetch_models",
             repo_type: str = "model", lock: str = "", needs=None) -> Path:
    """``snapshot_download`` into the cache, each hub error turned into a message naming ``key`` (the config
    entry: ``models.<name>`` or ``question_sets.<name>``) and what to do. A snapshot that huggingface_hub
    refuses offline because files are missing is named file by file (:func:`check_complete`)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (GatedRepoError, LocalEntryNotFoundError, RepositoryNotFoundError,
                                        RevisionNotFoundError)

    cache = cache_dir(model_cache)
    cache.mkdir(parents=True, exist_ok=True)
    token = os.environ.get(token_env) or None
    what = "dataset" if repo_type == "dataset" else "model"
    hub_key = f"{key}.hub_id = {hub_id!r}"
    if commit:  # a commit never changes: complete in the cache, there is nothing to download
        folder = repo_folder(cache, hub_id, repo_type) / "snapshots" / commit
        if folder.is_dir():
            try:
                check_complete(folder, hub_id, model_cache, token_env, key=key, target=target,
                               repo_type=repo_type, needs=needs)
                return folder
            except HubModelError:
                pass  # fetch what is missing
    try:
        return Path(snapshot_download(repo_id=hub_id, revision=commit or revision, cache_dir=str(cache),
                                      token=token, repo_type=repo_type))
    except GatedRepoError as exc:
        raise HubModelError(f"{hub_key}: a gated {what}: accept its licence on the hub and export your token in "
                            f"${token_env} (resources.hub_token_env) ({type(exc).__name__})") from None
    except RevisionNotFoundError:
        if commit:
            raise HubModelError(f"{key}: the commit {commit} that the lock file {lock} pins for revision "
                                f"{revision!r} is not in {hub_id} (rewritten history?); move the lock on purpose "
                                f"with `snakemake {target} --config relock=true`") from None
        raise HubModelError(f"{key}.revision = {revision!r}: no such branch, tag or commit of {hub_id}") from None
    except RepositoryNotFoundError:
        raise HubModelError(f"{hub_key}: no such {what} on the hub (a typo? a private {what} needs its token in "
                            f"${token_env})") from None
    except LocalEntryNotFoundError as exc:  # the hub unreachable and the cache cannot serve it (incomplete too)
        sha = commit or resolve_commit(repo_folder(cache, hub_id, repo_type), revision)
        folder = repo_folder(cache, hub_id, repo_type) / "snapshots" / sha if sha else None
        if folder is not None and folder.is_dir():
            check_complete(folder, hub_id, model_cache, token_env, key=key, target=target, repo_type=repo_type,
                           needs=needs)  # raises, naming the missing files
            raise HubModelError(f"{key} ({hub_id}, revision {revision!r}): the hub cannot be reached and "
                                f"huggingface_hub cannot use the cached snapshot {folder} ({exc}); "
                                f"{prefetch_hint(cache, target)}") from None
        if commit:
            raise HubModelError(f"{key}: the lock file {lock} pins {hub_id} (revision {revision!r}) to commit "
                                f"{commit}, which is not in the cache {cache}, and the hub cannot be reached "
                                f"(HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE', '')!r}); "
                                f"{prefetch_hint(cache, target)}") from None
        raise HubModelError(f"{what} {key.split('.', 1)[-1]!r} ({hub_key}, revision {revision!r}): the hub cannot "
                            f"be reached (HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE', '')!r}) and it is not in "
                            f"the {what} cache {cache}; {prefetch_hint(cache, target)}") from None


def snapshot_files(folder: Path) -> dict[str, int]:
    """Every file of a snapshot folder (relative POSIX path -> size), links followed."""
    folder = Path(folder)
    return {p.relative_to(folder).as_posix(): p.stat().st_size
            for p in sorted(folder.rglob("*")) if p.is_file()}


def repository_listing(hub_id: str, commit: str, model_cache: str | os.PathLike | None, token_env: str,
                       repo_type: str = "model") -> dict[str, int] | None:
    """The repository's own file list at ``commit`` (path -> size), or None when it cannot be known.

    A huggingface_hub with a tree cache (the 2.4 we test with has ``huggingface_hub._tree_cache``) writes
    that list into the repository's cache folder (``trees/<commit>.json``) when a download reaches the hub,
    before the files come: it is there after an online fetch and after one killed midway, and absent only
    when the hub was never reached for this commit (then None: the offline check). A huggingface_hub without
    one keeps no list: then the hub's tree endpoint is asked once, unless ``HF_HUB_OFFLINE`` is set.
    """
    storage = repo_folder(cache_dir(model_cache), hub_id, repo_type)
    try:
        from huggingface_hub._tree_cache import read_tree_cache
    except ImportError:
        read_tree_cache = None
    if read_tree_cache is not None:
        try:
            tree = read_tree_cache(str(storage), commit)
        except (OSError, ValueError, AttributeError):
            tree = None
        return {path: int(entry.size) for path, entry in tree.items()} if tree else None
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return None
    try:
        from huggingface_hub import HfApi
        from huggingface_hub.hf_api import RepoFile

        api = HfApi(token=os.environ.get(token_env) or None)
        return {f.path: int(f.size) for f in api.list_repo_tree(hub_id, revision=commit, recursive=True,
                                                                 repo_type=repo_type) if isinstance(f, RepoFile)}
    except Exception:  # noqa: BLE001 - the hub is down or refuses: fall back to what a usable snapshot needs
        return None


SHARD = re.compile(r"^(?P<stem>.*?)-(?P<i>\d{5})-of-(?P<n>\d{5})(?P<ext>\.[^/]*)$")


def missing_shards(files: Mapping[str, Any]) -> list[str]:
    """Shards of a ``name-00001-of-00004.ext`` series that are not among ``files``.

    Model weights count from 1 (``-00001-of-00003`` to ``-00003-of-00003``), dataset files from 0
    (``-00000-of-00002``, ``-00001-of-00002``): a series holding its shard 0 counts from 0, one holding
    shard ``n`` counts from 1, and otherwise weights count from 1 and data files from 0.

    >>> missing_shards({"model-00001-of-00003.safetensors": 1, "model-00003-of-00003.safetensors": 1})
    ['model-00002-of-00003.safetensors']
    >>> missing_shards({"data/test-00000-of-00002.parquet": 1, "main/test-00000-of-00001.parquet": 1})
    ['data/test-00001-of-00002.parquet']
    """
    series: dict[tuple[str, str, str], set[int]] = {}
    for path in files:
        m = SHARD.match(path)
        if m:
            series.setdefault((m["stem"], m["n"], m["ext"]), set()).add(int(m["i"]))
    out = []
    for (stem, n, ext), have in sorted(series.items()):
        first = 0 if 0 in have else 1 if int(n) in have else 1 if ext.endswith(WEIGHT_SUFFIXES) else 0
        out += [f"{stem}-{i:05d}-of-{n}{ext}" for i in range(first, first + int(n)) if i not in have]
    return out


TOKENIZER_FILES = (("tokenizer.json",), ("tokenizer.model",), ("vocab.json", "merges.txt"), ("vocab.txt",),
                   ("tiktoken.model",), ("qwen.tiktoken",))
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".msgpack", ".h5")


def model_needs(folder: Path) -> list[str]:
    """What a usable model folder lacks: ``config.json``, a tokenizer, and every weight file its index names
    (``*.index.json``), or at least one weight file when it has no index; shard series must be complete."""
    folder = Path(folder)
    files = snapshot_files(folder)
    missing = [] if "config.json" in files else ["config.json"]
    if not any(all(f in files for f in group) for group in TOKENIZER_FILES):
        missing.append("tokenizer.json (or tokenizer.model, or vocab.json + merges.txt)")
    indexes = [p for p in files if p.endswith((".safetensors.index.json", ".bin.index.json"))]
    named: set[str] = set()
    for index in indexes:
        try:
            weight_map = json.loads((folder / index).read_text(encoding="utf-8")).get("weight_map") or {}
        except ValueError:
            missing.append(f"{index} (not valid JSON)")
            continue
        parent = Path(index).parent
        named |= {(parent / str(shard)).as_posix() for shard in weight_map.values()}
    missing += sorted(p for p in named if p not in files)
    if not indexes and not any(p.endswith(WEIGHT_SUFFIXES) for p in files):
        missing.append("the weights (no *.safetensors, *.bin or *.gguf file)")
    missing += [s for s in missing_shards(files) if s not in missing]
    return missing


def check_complete(folder: Path, hub_id: str, model_cache: str | os.PathLike | None, token_env: str,
                   key: str, target: str = "fetch_models", repo_type: str = "model",
                   needs=None) -> str:
    """Raise :class:`HubModelError` when the snapshot ``folder`` is incomplete; return how it was checked.

    Against the repository's file list (:func:`repository_listing`) when it is known: every file, with its
    size. Otherwise (offline, no cached listing) against ``needs(folder)`` (default :func:`model_needs`).
    The message names the missing files and the command that resumes the download.
    """
    folder = Path(folder)
    listing = repository_listing(hub_id, folder.name, model_cache, token_env, repo_type)
    present = snapshot_files(folder)
    if listing is not None:
        how = "the repository's file list"
        missing = sorted(p for p, size in listing.items() if present.get(p) != size)
    else:
        how = "what a usable snapshot needs (offline: the repository's file list is not known)"
        missing = (needs or model_needs)(folder)
    if missing:
        partial = list((repo_folder(cache_dir(model_cache), hub_id, repo_type) / "blobs").glob("*.incomplete"))
        raise HubModelError(
            f"{key}.hub_id = {hub_id!r}: the snapshot {folder} is incomplete (checked against {how}): "
            f"{len(missing)} file(s) missing or cut short: {', '.join(missing[:8])}"
            + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
            + (f" ({len(partial)} partial download(s) in blobs/)" if partial else "")
            + f"; resume it with `snakemake {target}` (same --configfile) on a machine with network: "
              "huggingface_hub keeps the files it has and fetches the rest; no manifest is written until then")
    return how


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
                  commit: str | None = None, repo_type: str = "model") -> tuple[Path, str]:
    """Copy a local model (or dataset, ``repo_type="dataset"``) folder into a hub cache, in huggingface_hub's
    layout; return (snapshot, commit).

    Files go to ``blobs/<sha256>`` (written to a temporary name, then renamed), the snapshot links to them,
    and ``refs/<revision>`` names the commit (default: a hash of the files' hashes, stable for the same
    content). Permissions follow the umask.
    """
    source = Path(source)
    if not HUB_ID.match(hub_id):
        raise ValueError(f"{hub_id!r} is not a hub id (org/name)")
    repo = repo_folder(Path(model_cache), hub_id, repo_type)
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
