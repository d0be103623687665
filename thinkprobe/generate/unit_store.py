"""The store of a collection job's finished units: where each lies, what decides it, the record written.

A collection job (:mod:`thinkprobe.stages.collect`) writes each unit that is final at once, one read-only
file per unit (``<store>/<question_id>/<run>.json``, atomically and sealed with its digest,
:func:`write_store_unit`); a unit whose store file exists and verifies (:func:`verified_store`) is never
generated again. :func:`unit_identity` is what decides a unit's sample (model, prompt,
sampling, seed), :func:`unit_settings` its digest kept in the record (a stored unit generated with other
settings is refused, never overwritten: :class:`StaleUnits`), and :func:`batch_digest` the collection rule's
identity param, and :func:`unit_lengths` is what the planner reads of it from the job's manifest. The analysis's
trace file of a stored unit (a unit file) is written by the collection stage
(:func:`thinkprobe.stages.collect.write_trace_file`): unit files are the rule bodies' format, above this package.
"""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from ..outputs import write_json
from ..tracefiles import trace_file
from ..units import UnitKey
from .defaults import COLLECTION_SAMPLING_DEFAULTS
from .engine import Engine, SamplingSpec
from .modelspec import ModelSpec
from .questions import Question, format_prompt

STORE_VERSION = 1


class StaleUnits(RuntimeError):
    """Stored units were generated with other settings than the config now asks for (never overwritten)."""


def unit_settings(u: Mapping[str, Any], params: Mapping[str, Any], model: dict[str, Any] | None = None) -> str:
    """sha256 of what determines a unit's sample (:func:`unit_identity`; ``model``: its :func:`model_identity`,
    when the caller has it for the batch)."""
    import hashlib

    return hashlib.sha256(json.dumps(unit_identity(u, params, model), sort_keys=True).encode()).hexdigest()


def model_identity(model: ModelSpec) -> dict[str, Any]:
    """What of a model decides its units' samples: the backend, the weights (a hub model: its id and pinned
    revision; else its path, served name or name), the endpoint and how it is prompted to reason."""
    key = {"backend": model.backend, "model": model.path or model.served_model or model.name,
           "base_url": model.base_url, "reasoning": model.reasoning, "think_prefill": model.think_prefill,
           "system_prompt": model.system_prompt}
    if model.hub_id:  # a hub model: its id and pinned revision decide the sample (path models: unchanged key)
        key.update(model=model.hub_id, revision=model.revision)
    return key


def unit_identity(u: Mapping[str, Any], params: Mapping[str, Any], model: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    """What determines a unit's sample: model (:func:`model_identity`), prompt, sampling, seed (not engine tuning
    knobs, not resources). The keys and their order are those every stored unit's ``settings_sha256`` was made
    of: a change here refuses every collected unit (``StaleUnits``)."""
    m = model_identity(ModelSpec.of(params["model"])) if model is None else model
    key = {**{k: m[k] for k in ("backend", "model", "base_url", "reasoning", "think_prefill", "system_prompt")},
           "prompt_variant": params["prompt_variant"],
           "question": u["question"]["text"], "choices": u["question"].get("choices") or [],
           "sampling": _sampling(params["sampling"], u["seed"]).as_dict()}
    if "revision" in m:
        key.update(model=m["model"], revision=m["revision"])
    return key


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def store_path(store: str | os.PathLike, unit: Mapping[str, str]) -> Path:
    return Path(store) / unit["question_id"] / f"{unit['run']}.json"


def verified_store(units: Sequence[Mapping[str, Any]], store: str | os.PathLike, traces: str | None,
                   log=None) -> dict[str, dict[str, Any]]:
    """The stored units of ``units`` that can be reused (unit path -> record, without its digest block).

    Each stored file is verified before reuse (issue 28, item 1): one that is not readable JSON, whose content
    no longer matches its digest or that was stored under another unit's name is moved aside
    (``<name>.altered-<time>-<pid>``, nothing deleted) with a warning, and its unit is generated again. A file
    without a digest (or with ``integrity: null``) is refused the same way (issue 37): files written before
    digests pass only through ``thinkprobe migrate``, which seals them and records that it did. When the unit's trace file exists already, that file holds the
    sample the analysis used: the job then stops (:class:`StaleUnits`) naming both files instead of
    generating a different sample behind the analysis's back; moving the trace file aside too and running
    again collects and analyses the unit anew.
    """
    from .. import integrity

    out: dict[str, dict[str, Any]] = {}
    kept: list[str] = []
    for u in units:
        path = store_path(store, u["unit"])
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as err:
            doc, why = None, f"it is not readable JSON ({type(err).__name__})"
        else:
            why = integrity.problem(doc, store_key(u["unit"]))
        if why is None:
            out[UnitKey(**u["unit"]).path] = integrity.unsealed(doc)
            continue
        trace = Path(trace_file(UnitKey(**u["unit"]).path, traces)) if traces is not None else None
        instead = ("its trace file holds the analysed sample: stopped (see below)" if trace and trace.exists()
                   else "the unit is generated again")
        message = integrity.refused(path, why, integrity.quarantine(path), instead)
        if log:
            log.write(message + "\n")
            log.flush()
        if trace and trace.exists():
            kept.append(f"{path} (trace file {trace})")
    if kept:
        raise StaleUnits(f"{len(kept)} stored unit(s) failed verification and were moved aside, but their trace "
                         "files hold the samples the analysis used; a new sample would not match them. Move each "
                         "trace file aside as well and run again to collect and analyse the unit anew: "
                         + "; ".join(kept[:3]))
    return out


def store_key(unit: Mapping[str, str]) -> str:
    """What a stored unit's digest binds it to (:mod:`thinkprobe.integrity`): the store and the unit, so a file
    copied under another unit's name is refused like an altered one."""
    return f"collect:{UnitKey(**unit).path}"


def write_store_unit(path: Path, doc: dict[str, Any], unit: Mapping[str, str]) -> None:
    """Write a finished unit atomically and sealed (its content and key digests), then make it read-only: it
    is never rewritten by thinkprobe."""
    from .. import integrity

    if path.exists():
        raise FileExistsError(f"{path}: a stored unit is never overwritten (delete it to regenerate it)")
    write_json(path, integrity.seal(doc, store_key(unit)))
    mode = stat.S_IMODE(path.stat().st_mode)
    os.chmod(path, mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def build_prompt(engine: Engine, question: Question, variant: str, model: ModelSpec) -> str:
    """The prompt sent for one question: the chat-templated user turn (offline engine) or the user message.

    For the offline engine the model's chat template is applied here (an optional ``system_prompt``; the
    paper's main study used none), and ``think_prefill`` opens the assistant turn with ``<think>`` (for
    prompted reasoning in a model that is not a native reasoner). An HTTP endpoint applies the chat
    template itself (``engine.chat`` is True): the prompt is the user message.
    """
    user = format_prompt(question, variant)
    if getattr(engine, "chat", False):
        return user
    messages = ([{"role": "system", "content": model.system_prompt}] if model.system_prompt
                else []) + [{"role": "user", "content": user}]
    text = engine.tokenizer().apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    if model.think_prefill:
        text += "<think>\n"
    return text


def _question(d: Mapping[str, Any]) -> Question:
    return Question(id=d["id"], question_set=d["question_set"], task=d["task"], text=d["text"], domain=d.get("domain"),
                    gold=d.get("gold"), choices=tuple(tuple(c) for c in d.get("choices") or ()))


def _sampling(sampling: Mapping[str, Any], seed: int) -> SamplingSpec:
    s = {**COLLECTION_SAMPLING_DEFAULTS, **sampling}  # one home of the defaults: generate.defaults
    return SamplingSpec(n=1, temperature=float(s["temperature"]), top_p=float(s["top_p"]),
                        max_tokens=int(s["max_tokens"]), seed=seed, stop=tuple(s["stop"] or ()))


def unit_lengths(doc: Mapping[str, Any]) -> dict[str, int | None]:
    """A stored unit's completion tokens and its reasoning tokens K (completion tokens x the reasoning's share of
    the response's characters): what the planner reads from the manifest instead of every unit file."""
    ids, response = doc.get("token_ids"), doc.get("response") or ""
    if doc.get("status") != "ok" or not isinstance(ids, list):
        return {"completion_tokens": None, "reasoning_tokens": None}
    share = min(1.0, len(doc.get("reasoning") or "") / len(response)) if response else 0.0
    return {"completion_tokens": len(ids), "reasoning_tokens": round(len(ids) * share)}


def batch_digest(params: Mapping[str, Any]) -> str:
    """What decides a collection job's outputs, as one short digest (the rule's only identity param): each of
    its units and the settings that decide the unit's sample (:func:`unit_settings`: model, prompt, sampling,
    seed). A run or a question added to the batch changes it; a resource (memory, wall time, threads,
    ``chunk_prompts``) does not, so raising a wall time reruns no collection job."""
    import hashlib

    h = hashlib.sha256()
    model = model_identity(ModelSpec.of(params["model"]))  # once per batch, not per unit (a parse-time param)
    for u in params["units"]:
        h.update(f"{UnitKey(**u['unit']).path}\t{unit_settings(u, params, model)}\n".encode())
    return h.hexdigest()[:16]
