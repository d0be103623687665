"""The ``replay`` backend: completions recorded in a JSONL file, served as if sampled (tests; rollouts sampled elsewhere).

The model entry's ``path`` names a JSONL file, one record per line::

    {"prompt": "What is 2 + 3?", "completion": "<think>2 + 3 = 5.</think> The answer is 5."}

``prompt`` is the user message exactly as thinkprobe sends it (the question under the entry's
``prompt_variant``: with ``plain``, the question's text), ``completion`` the generated text (reasoning and
answer, split as every engine's text is: :mod:`thinkprobe.generate.reasoning`). Optional: ``reasoning`` (the
reasoning, when the source separated it from the answer, as an endpoint's ``reasoning_content``),
``token_ids`` (the completion's token ids) and ``finish_reason`` (``stop``, the default, or ``length``).

Replaying is not sampling, and the engine says so: its version names the file and its sha256, so every stored
unit's provenance records where its text came from; the sampling settings the collection asks for (recorded
as asked) do not change a replayed text; each prompt has one completion, served to every request of that prompt
(a ``grid.runs`` of several runs gets it once per run), and a request for ``n`` > 1 is that prompt's error. A
line that is not a record (bad JSON, a missing or mistyped field) and a prompt recorded twice are excluded,
each with its line number and the reason (logged when the engine opens); a request whose prompt the file does
not hold, or holds only on an excluded line, gets that reason as its error, so the collection stores the unit as
excluded and the other units go on. No GPU, no weights, no tokenizer (prompts are sent as text, as to an
endpoint: ``chat``); it samples no continuations (:attr:`Backend.continuations` is False: the trajectories'
prefixes are token ids the file cannot hold). Written as the worked example of docs/adding-a-backend.md.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..interface import Completion, EngineError, Generation, SamplingSpec
from ._backend import Backend

FINISH_REASONS = ("stop", "length")


def read_records(path: str | Path) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The records of a replay file by prompt, and the reason of every prompt (or line) excluded.

    Raises :class:`EngineError` when the file itself cannot be read.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise EngineError(f"replay file {path}: cannot be read ({exc})") from exc
    records: dict[str, dict[str, Any]] = {}
    first: dict[str, int] = {}
    excluded: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            rec = json.loads(line)
        except ValueError as exc:
            excluded[where] = f"{where}: not JSON ({exc})"
            continue
        problem = _problem(rec)
        if problem:
            excluded[rec["prompt"] if isinstance(rec, dict) and isinstance(rec.get("prompt"), str) else where] = \
                f"{where}: {problem}"
            continue
        prompt = rec["prompt"]
        if prompt in first:
            records.pop(prompt, None)
            excluded[prompt] = f"{path}: lines {first[prompt]} and {number} both record this prompt"
            continue
        first[prompt] = number
        if prompt not in excluded:
            records[prompt] = rec
    return records, excluded


def _problem(rec: Any) -> str | None:
    if not isinstance(rec, dict):
        return f"a record is a JSON object, not {type(rec).__name__}"
    for key in ("prompt", "completion"):
        if not isinstance(rec.get(key), str):
            return f"{key!r} must be a string"
    if rec.get("reasoning") is not None and not isinstance(rec["reasoning"], str):
        return "'reasoning' must be a string"
    ids = rec.get("token_ids")
    if ids is not None and not (isinstance(ids, list) and all(type(t) is int and t >= 0 for t in ids)):
        return "'token_ids' must be a list of non-negative integers"
    if rec.get("finish_reason", "stop") not in FINISH_REASONS:
        return f"'finish_reason' must be one of {', '.join(FINISH_REASONS)}"
    return None


class ReplayEngine:
    """A replay file behind the :class:`~thinkprobe.generate.engine.Engine` interface."""

    backend = "replay"
    chat = True  # the prompt is the user message (no chat template: there is no tokenizer)
    max_model_len = 0  # unknown: the file has no context

    def __init__(self, model_cfg: Mapping[str, Any]):
        from ...outputs import sha256_file

        self.model = str(model_cfg.get("name"))
        if not model_cfg.get("path"):
            raise EngineError(f"model {self.model!r}: backend 'replay' needs a path (the JSONL file of completions)")
        self.path = Path(str(model_cfg["path"]))
        self._records, self._excluded = read_records(self.path)
        self.version = f"replay {self.path} sha256:{sha256_file(self.path)[:16]}"
        self.source = {"path": str(self.path)}
        for reason in self._excluded.values():
            print(f"model {self.model!r}: excluded: {reason}", file=sys.stderr, flush=True)

    def tokenizer(self):
        raise EngineError(f"model {self.model!r}: backend 'replay' has no tokenizer")

    def generate(self, prompts: Sequence[str | Sequence[int]], sampling: Sequence[SamplingSpec]) -> list[Generation]:
        started = time.perf_counter()
        out = [self._one(p, s) for p, s in zip(prompts, sampling)]
        for gen in out:
            gen.seconds = time.perf_counter() - started
        return out

    def _one(self, prompt: str | Sequence[int], spec: SamplingSpec) -> Generation:
        def error(reason: str) -> Generation:
            return Generation([], 0, None, 0.0, error=reason)

        if not isinstance(prompt, str):
            return error("backend 'replay' serves text prompts only (the file holds no token ids of prompts)")
        if spec.n != 1:
            return error(f"backend 'replay' holds one completion per prompt; n = {spec.n} was asked")
        rec = self._records.get(prompt)
        if rec is None:
            return error(self._excluded.get(prompt) or f"{self.path}: no record of this prompt")
        ids = rec.get("token_ids")
        return Generation([Completion(rec["completion"], list(ids or []), rec.get("finish_reason", "stop"),
                                      reasoning=rec.get("reasoning"), has_token_ids=ids is not None)], 0, None, 0.0)

    def close(self) -> None:
        pass


def _open(spec: Any) -> ReplayEngine:
    """The engine of a replay model's spec (it reads the filled entry: a backend file may)."""
    return ReplayEngine(spec.as_dict())


def problems(name: str, entry: Mapping[str, Any], base: str) -> list[str]:
    """The replay file must exist (relative paths: to the working directory), before any job starts."""
    if not entry.get("path"):
        return [f"models.{name}: backend replay needs a path (the JSONL file of recorded completions)"]
    path = Path(str(entry["path"]))
    full = path if path.is_absolute() else Path(base) / path
    return [] if full.is_file() else [f"models.{name}.path = {str(path)!r}: no such replay file"]


BACKEND = Backend(
    name="replay",
    description="completions recorded in a JSONL file (path), served as if sampled",
    open=_open,
    keys=("path",),
    problems=problems,
)
