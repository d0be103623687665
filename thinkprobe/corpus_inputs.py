"""Input adapters: published trace collections whose records do not name their model, question or domain.

An input entry of the configuration may name an ``adapter``; :func:`adapt` then completes each record of
that entry with the unit ids the collection keeps elsewhere (in the file name, in a side file), before the
records are mapped to units. The record's content hash is that of the original item, so the import step,
which finds records again by hash and reads the reasoning from the original record, is unchanged.

Adapters:

``steering-thinking-llms``
    ``reasoning_comparison_<model>.json`` of the steering-thinking-llms repository (compare-base-reasoning):
    a JSON list of 100 records (``response``, ``thinking_process``, ...), row ``i`` answering the prompt of
    row ``i`` of ``prompts_for_rows_seed42.json`` in the same folder (``row``, ``messages_index``,
    ``prompt``, ``category``). Each record gets ``model`` = ``<model>`` from the file name,
    ``question_id`` = ``row000``..``row099`` (shared by every model, so the models answer the same
    questions) and ``domain`` = the prompt's ``category``, read as its cognitive domain: the collection
    wrote its second batch of prompts as "New <category> problems" (e.g. "New Spatial Reasoning problems"),
    which is the same domain as "<category>", so that prefix and suffix are dropped (10 domains, as in the
    ThinkProbe paper's design, instead of 20 batch labels). A record whose row the prompts file does not
    list is excluded with a message naming both files.

    The repository itself has no prompts file: its ``compare_reasoning.py`` drew the rows with
    ``random.seed(42); random.sample(range(len(messages)), 100)`` from the 500-message list of
    ``messages/messages.py``, whose category is the comment line above each message. When the prompts file
    is absent (a clone fetched by rule ``fetch_corpus``), :func:`derive_steering_prompts` rebuilds it from
    that file of the same clone: the list read with ``ast.literal_eval`` (never executed), the categories
    from the comments, the rows drawn as the script drew them.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from .traces import Exclusion, RawRecord

_STEERING_FILE = re.compile(r"^reasoning_comparison_(?P<model>.+)\.json$")
_NEW_BATCH = re.compile(r"^New (?P<category>.+) problems$")
STEERING_PROMPTS = "prompts_for_rows_seed42.json"
STEERING_MESSAGES = Path("messages") / "messages.py"
STEERING_SEED = 42  # compare_reasoning.py --seed (default 42)
STEERING_ROWS = 100  # run.sh: --n_examples 100


@lru_cache(maxsize=16)
def _steering_prompts(path: str) -> dict[int, dict[str, Any]]:
    if not Path(path).is_file():
        messages = _find_messages(Path(path).parent)
        if messages is None:
            raise FileNotFoundError(f"neither {path} nor {STEERING_MESSAGES} of the repository (searched the "
                                    "folders above it) is there")
        return {int(r["row"]): r for r in derive_steering_prompts(messages)}
    rows = json.loads(Path(path).read_text(encoding="utf-8"))
    return {int(r["row"]): r for r in rows}


def _find_messages(folder: Path) -> Path | None:
    for parent in [folder, *folder.parents][:6]:
        if (parent / STEERING_MESSAGES).is_file():
            return parent / STEERING_MESSAGES
    return None


def read_messages(path: Path) -> list[dict[str, Any]]:
    """The ``messages`` list of ``messages/messages.py``: each message with the category of the last comment
    line above it (``# Spatial Reasoning``, ``# New Spatial Reasoning problems``). Parsed, never executed."""
    import ast
    import io
    import tokenize

    source = Path(path).read_text(encoding="utf-8")
    tree = ast.parse(source)
    target = next((n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == "messages" for t in n.targets)), None)
    if not isinstance(target, ast.List):
        raise ValueError(f"{path}: no `messages = [...]` list")
    comments = sorted((tok.start[0], tok.string.lstrip("#").strip())
                      for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                      if tok.type == tokenize.COMMENT and tok.string.lstrip("#").strip())
    out = []
    for node in target.elts:
        message = dict(ast.literal_eval(node))
        above = [text for line, text in comments if line < node.lineno]
        message["category"] = above[-1] if above else ""
        out.append(message)
    return out


def derive_steering_prompts(messages_py: Path, seed: int = STEERING_SEED, rows: int = STEERING_ROWS
                            ) -> list[dict[str, Any]]:
    """``prompts_for_rows_seed42.json`` rebuilt from the repository: row ``i`` is message
    ``random.Random(seed).sample(range(len(messages)), rows)[i]``, as ``compare_reasoning.py`` drew it."""
    import random

    messages = read_messages(messages_py)
    picks = random.Random(seed).sample(range(len(messages)), rows)
    return [{"row": i, "messages_index": k, "prompt": messages[k].get("content", ""),
             "category": messages[k].get("category", "")} for i, k in enumerate(picks)]


def steering_thinking_llms(raw: RawRecord, entry: dict[str, Any]) -> RawRecord | Exclusion:
    """Model from the file name, question id from the row, domain from the prompts file (see module doc)."""
    path_str, sep, index = raw.source.rpartition("#")
    path = Path(path_str)
    m = _STEERING_FILE.match(path.name)
    if not sep or not index.isdigit() or m is None or raw.record is None:
        return Exclusion(raw.default_id, f"adapter steering-thinking-llms: {raw.source} is not a record of a "
                         "reasoning_comparison_<model>.json list", raw.source)
    prompts_file = path.parent / STEERING_PROMPTS
    try:
        prompts = _steering_prompts(str(prompts_file))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Exclusion(raw.default_id, f"adapter steering-thinking-llms: cannot read {prompts_file}: {exc}",
                         raw.source)
    row = int(index) - 1
    prompt = prompts.get(row)
    if prompt is None:
        return Exclusion(raw.default_id, f"adapter steering-thinking-llms: row {row} of {path.name} has no prompt "
                         f"in {prompts_file}", raw.source)
    category = str(prompt.get("category") or "").strip()
    batch = _NEW_BATCH.match(category)
    record = {**raw.record, "model": m.group("model"), "question_id": f"row{row:03d}",
              "domain": batch.group("category") if batch else category}
    return replace(raw, record=record)


ADAPTERS: dict[str, Callable[[RawRecord, dict[str, Any]], RawRecord | Exclusion]] = {
    "steering-thinking-llms": steering_thinking_llms,
}


def adapt(raw: RawRecord, entry: dict[str, Any]) -> RawRecord | Exclusion:
    """``raw`` completed by the entry's ``adapter`` (unchanged when the entry names none)."""
    name = entry.get("adapter") or ""
    if not name:
        return raw
    if name not in ADAPTERS:
        raise ValueError(f"unknown input adapter {name!r}; known: {sorted(ADAPTERS)}")
    return ADAPTERS[name](raw, entry)
