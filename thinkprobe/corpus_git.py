"""Trace collections fetched by the workflow: an ``inputs`` entry may name a git repository at a commit.

    inputs:
      - {git: {url: https://github.com/org/repo, commit: <40 hex>, path: results/traces/*.json},
         question_set: stl, adapter: steering-thinking-llms}

Rule ``fetch_corpus`` (:func:`fetch`, a local rule: the machine that runs Snakemake has the network) clones
each repository once into the corpus cache (``resources.corpus_cache``; empty: ``$THINKPROBE_CACHE/git``,
i.e. ``~/.cache/thinkprobe/git``), shallow, at the commit: ``<cache>/<host>--<owner>--<repo>/<commit>/``.
It fetches only that commit (``git fetch --depth 1 <url> <commit>``), falls back to fetching the branches
when a server refuses a fetch by commit, checks out the commit detached and checks that ``HEAD`` is it; the
clone is built under a temporary name and renamed into place, so a killed fetch leaves no half clone that
looks finished. The import then reads ``<clone>/<path>`` (a file, a folder or a glob pattern) like a local
input. Nothing else touches the network.

The workflow plans its units from the records, so a repository must be cloned when Snakemake parses the
config: :func:`resolve_inputs` (every parse) turns git entries into paths inside their clones and lists the
entries not yet fetched, which stop every study target with a message naming the entry and the command
(``snakemake fetch_corpus``), while the fetch itself can run.

A local folder stays possible: ``path:`` (absolute, or relative to the working directory, i.e. the
checkout), for instance a copy given on the command line (``--config 'inputs=[{path: /data/stl/vars, ...}]'``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterable, Mapping

COMMIT = re.compile(r"^[0-9a-f]{40}\Z")
GIT_TIMEOUT_S = 1800


class CorpusError(ValueError):
    """A git input cannot be fetched or read: the message names the ``inputs[i].git`` key and the repository."""


def corpus_cache(setting: str | os.PathLike | None = None) -> Path:
    """``resources.corpus_cache``, else ``$THINKPROBE_CACHE/git`` (default ``~/.cache/thinkprobe/git``)."""
    if setting:
        return Path(setting).expanduser()
    from .cache import cache_root

    return cache_root() / "git"


def repo_key(url: str) -> str:
    """A folder name for a repository URL: host and path joined by ``--``.

    >>> repo_key("https://github.com/cvenhoff/steering-thinking-llms.git")
    'github.com--cvenhoff--steering-thinking-llms'
    >>> repo_key("/srv/git/traces.git")
    'local--srv--git--traces'
    """
    text = re.sub(r"^[a-z+]+://", "", url.strip()).rstrip("/")
    text = re.sub(r"^[^@/]+@([^:/]+):", r"\1/", text)  # git@host:org/repo
    text = re.sub(r"\.git$", "", text)
    parts = [p for p in re.split(r"[/:]", text) if p and p not in (".", "..")]
    if url.strip().startswith(("/", "file://", ".")):
        parts = ["local", *parts]
    return "--".join(re.sub(r"[^A-Za-z0-9._-]", "_", p) for p in parts) or "repo"


def clone_dir(cache: Path, url: str, commit: str) -> Path:
    return Path(cache) / repo_key(url) / commit


def check_git_entry(i: int, entry: Mapping[str, Any]) -> tuple[str, str, str]:
    """(url, commit, path) of ``inputs[i].git``, or :class:`CorpusError` naming the key."""
    git = entry.get("git") or {}
    key = f"inputs[{i}].git"
    url, commit, path = str(git.get("url") or ""), str(git.get("commit") or ""), str(git.get("path") or "")
    if not url:
        raise CorpusError(f"{key}.url: the repository's URL is missing")
    if not COMMIT.match(commit):
        raise CorpusError(f"{key}.commit = {commit!r}: a git input is pinned by its full 40-hex commit (a branch "
                          "moves; `git rev-parse <branch>` gives the commit)")
    if not path or Path(path).is_absolute() or ".." in Path(path).parts:
        raise CorpusError(f"{key}.path = {path!r}: a path inside the repository (a file, a folder or a glob "
                          "pattern), without '..'")
    return url, commit, path


def git_entries(inputs: Iterable[Mapping[str, Any]]) -> list[tuple[int, str, str, str]]:
    """(index, url, commit, path) of every git input."""
    return [(i, *check_git_entry(i, e)) for i, e in enumerate(inputs) if e.get("git")]


def resolve_inputs(inputs: list[Mapping[str, Any]], cache: Path
                   ) -> tuple[list[dict[str, Any]], dict[str, str], list[str]]:
    """(inputs with each git entry as a path inside its clone, pending entries, problems).

    A git entry whose clone is not in the cache yet is left out and listed in ``pending`` (its key ->
    message); a malformed entry is a problem naming its key.
    """
    out: list[dict[str, Any]] = []
    pending: dict[str, str] = {}
    problems: list[str] = []
    for i, entry in enumerate(inputs):
        if not entry.get("git"):
            if not entry.get("path"):
                problems.append(f"inputs[{i}]: give a path (a file, folder or glob) or a git repository")
                continue
            out.append(dict(entry))
            continue
        if entry.get("path"):
            problems.append(f"inputs[{i}]: give either path or git, not both")
            continue
        try:
            url, commit, path = check_git_entry(i, entry)
        except CorpusError as exc:
            problems.append(str(exc))
            continue
        clone = clone_dir(cache, url, commit)
        if not (clone / ".git").is_dir():
            pending[f"inputs[{i}]"] = (f"inputs[{i}].git ({url} at {commit}): not fetched yet (no clone in the "
                                       f"corpus cache {cache}); run `snakemake fetch_corpus` with the same "
                                       "--configfile on a machine with network, then rerun")
            continue
        resolved = {k: v for k, v in entry.items() if k != "git"}
        resolved["path"] = str(clone / path)
        out.append(resolved)
    return out, pending, problems


def _git(*args: str, cwd: Path | None = None, timeout: int = GIT_TIMEOUT_S) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def head_commit(clone: Path) -> str | None:
    if not (Path(clone) / ".git").is_dir():
        return None
    proc = _git("rev-parse", "HEAD", cwd=clone)
    return proc.stdout.strip() if proc.returncode == 0 else None


def fetch(url: str, commit: str, cache: Path, key: str = "inputs[?].git") -> Path:
    """Clone ``url`` at ``commit`` into the corpus cache (once), shallow; return the clone.

    Raises :class:`CorpusError` naming ``key`` when git is missing, the repository cannot be reached, or the
    commit is not in it.
    """
    if shutil.which("git") is None:
        raise CorpusError(f"{key}: git is not installed on this machine (rule fetch_corpus clones with git)")
    dest = clone_dir(cache, url, commit)
    if head_commit(dest) == commit:
        return dest
    if dest.exists():  # not a clone at the commit: a leftover by hand; keep it aside, never delete it silently
        raise CorpusError(f"{key}: {dest} exists but is not a clone of {url} at {commit}; move it away and rerun")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{commit}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for step in (("init", "-q", str(tmp)), ("-C", str(tmp), "remote", "add", "origin", url)):
            proc = _git(*step)
            if proc.returncode != 0:
                raise CorpusError(f"{key}: git {step[0]} failed: {proc.stderr.strip()}")
        shallow = _git("-C", str(tmp), "fetch", "--depth", "1", "--no-tags", "origin", commit)
        if shallow.returncode != 0:
            full = _git("-C", str(tmp), "fetch", "--no-tags", "origin", "+refs/heads/*:refs/remotes/origin/*",
                        "+refs/tags/*:refs/tags/*")
            if full.returncode != 0:
                lines = (full.stderr or shallow.stderr).strip().splitlines() or ["no message"]
                why = next((ln for ln in lines if ln.startswith("fatal:")), lines[-1])
                raise CorpusError(f"{key}.url = {url!r}: the repository cannot be fetched ({why})")
            if _git("-C", str(tmp), "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
                raise CorpusError(f"{key}.commit = {commit!r}: not in the repository {url} (neither fetchable by "
                                  "commit nor on any of its branches or tags)")
        checkout = _git("-C", str(tmp), "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", commit)
        if checkout.returncode != 0:
            raise CorpusError(f"{key}.commit = {commit!r}: cannot check it out of {url}: {checkout.stderr.strip()}")
        if head_commit(tmp) != commit:
            raise CorpusError(f"{key}: the clone of {url} is at {head_commit(tmp)}, not {commit}")
        os.replace(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def fetch_all(inputs: list[Mapping[str, Any]], cache: Path) -> dict[str, Any]:
    """Rule ``fetch_corpus``: every git input's repository, cloned once; the manifest of what is there."""
    done: dict[tuple[str, str], Path] = {}
    entries = []
    for i, url, commit, path in git_entries(inputs):
        if (url, commit) not in done:
            done[(url, commit)] = fetch(url, commit, cache, key=f"inputs[{i}].git")
        clone = done[(url, commit)]
        matches = sorted(clone.glob(path)) if any(c in path for c in "*?[") else [clone / path]
        if not any(m.exists() for m in matches):
            raise CorpusError(f"inputs[{i}].git.path = {path!r}: nothing at that path in {url} at {commit}")
        entries.append({"input": i, "url": url, "commit": commit, "path": path, "clone": str(clone),
                        "files": sum(1 for m in matches for f in ([m] if m.is_file() else m.rglob("*")) if f.is_file())})
    return {"repositories": entries}
