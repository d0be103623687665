"""Collection jobs: sample M runs per question from one engine, keep every finished unit, never lose one.

A collection job (one model x question set x batch of questions) works through its units in chunks of
``chunk_prompts`` prompts, each chunk ONE engine call. Each unit that is final is written at once to the
job's resumable store, one read-only file per unit (``<store>/<question_id>/<run>.json``, atomically). A
unit whose store file exists is never generated again: a job killed midway (even SIGKILL) and rerun
generates only the missing units, and so does a job rerun because a run or a question was added. When
every unit is stored the job does not even start the engine.

What a unit's outcome can be
    * ``ok``: the reasoning (verbatim), the final answer (stored separately), the completion's token ids.
    * ``excluded``: a property of the unit itself, which the same request would hit again: a prompt that
      does not fit the context, a refused request (HTTP 4xx), a response with no reasoning after the
      retries. Stored, so the analysis lists it with its reason (stage ``collect``).
    * transient failure (the engine or endpoint failed for that request after its own retries): NOT
      stored. The job finishes every other unit, then fails with a message naming the units, so that the
      rerun retries only those.

Looping (paper section 4.3): a response whose reasoning loops (:func:`~thinkprobe.generate.reasoning.find_loop`)
is sampled again with a new seed, up to ``loop_detection.max_retries`` times (a response with no reasoning
too); if it still loops, the last attempt is truncated at its first repeated segment and marked
``looping.truncated``. Every attempt's seed is recorded.
"""

from __future__ import annotations

import json
import os
import stat
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .. import __version__
from ..codedeps import code_modules
from ..outputs import source_hash
from ..tracefiles import trace_file
from ..units import UnitKey
from ..generate.engine import Engine, Generation
from ..generate.faults import TransientFailures  # noqa: F401 - raised here, and part of this module's API
from ..generate.faults import is_transient, transient_failures
from ..generate.collection_jobs import unit_seed
from ..generate.reasoning import find_loop, split_reasoning
from ..generate.modelspec import ModelSpec
from ..generate.unit_store import (STORE_VERSION, StaleUnits, _question, _sampling, build_prompt, model_identity, now,
                                   store_path, unit_lengths, unit_settings, verified_store, write_store_unit)
from .unitfiles import absent_doc, unit_doc, write_unit


def collect_batch(open_engine: Callable[[Mapping[str, Any]], Engine], params: Mapping[str, Any], store: str | os.PathLike,
                  log=None, traces: str | None = None, chunk_prompts: int | None = None) -> dict[str, Any]:
    """Generate every unit of a job that is not yet in ``store``, write the trace file of every stored unit
    that has none (under ``traces``); return the job's manifest.

    Parameters
    ----------
    open_engine
        Opens the engine (called only when a unit is missing; the engine is closed at the end).
    params
        :meth:`~thinkprobe.generate.collection_jobs.CollectionJobs.batch_params`: model config, prompt variant,
        sampling, base seed, loop detection, ``chunk_prompts`` and the units (unit, question, seed).
    store
        The job's store folder.
    traces
        The folder of the analysis's trace files (the workflow: ``results/traces``, :data:`~thinkprobe.tracefiles.TRACES`):
        each stored unit's file is written there once (:func:`write_trace_file`); None writes none.
    chunk_prompts
        Prompts per engine call (a resource of the job, not a parameter); None: ``params["chunk_prompts"]``,
        else every pending prompt in one call.

    Raises
    ------
    TransientFailures
        After every other unit is stored, when some units failed for a reason outside them.
    EngineError
        The engine cannot start (a fault of the job).
    """
    spec = ModelSpec.of(params["model"])  # the job's param: the filled entry, parsed once
    model_key = model_identity(spec)
    units = list(params["units"])
    stored = verified_store(units, store, traces, log)
    pending = [u for u in units if UnitKey(**u["unit"]).path not in stored]
    stale = [str(store_path(store, u["unit"])) for u in units
             if (doc := stored.get(UnitKey(**u["unit"]).path)) is not None
             and doc.get("settings_sha256") != unit_settings(u, params, model_key)]
    if stale:
        raise StaleUnits(f"{len(stale)} stored unit(s) were generated with other settings (model, prompt, sampling or "
                         "seed) than the config now asks for; stored units are never overwritten. Delete them "
                         "(and their results/traces files) to regenerate them, or collect under a new model or "
                         f"question set name. First: {', '.join(stale[:3])}")
    stats: dict[str, Any] = {"units": len(units), "generated": 0, "already_stored": len(units) - len(pending),
                             "engine_start_s": None, "generate_s": 0.0, "completion_tokens": 0, "prompt_tokens": 0,
                             "cached_tokens": 0, "calls": 0}
    failures: dict[str, str] = {}
    if pending:
        started = time.perf_counter()
        engine = open_engine(params["model"])
        stats["engine_start_s"] = round(time.perf_counter() - started, 3)
        try:
            prompts = {}
            for u in pending:
                qid = u["question"]["id"]
                if qid not in prompts:
                    prompts[qid] = build_prompt(engine, _question(u["question"]), params["prompt_variant"], spec)
            size = max(1, int(chunk_prompts or params.get("chunk_prompts") or len(pending)))
            for k in range(0, len(pending), size):
                chunk = pending[k:k + size]
                done = _generate_chunk(engine, chunk, prompts, params, stats, failures)
                for u, doc in done:
                    write_store_unit(store_path(store, u["unit"]), doc, u["unit"])
                    stored[UnitKey(**u["unit"]).path] = doc
                    stats["generated"] += 1
                if log:
                    log.write(f"collect: {k + len(chunk)}/{len(pending)} units generated or tried\n")
                    log.flush()
        finally:
            engine.close()
    manifest = {"units": {}, "stats": stats, "thinkprobe_version": __version__}
    written = 0
    for u in units:
        key = UnitKey(**u["unit"])
        path = store_path(store, u["unit"])
        doc = stored.get(key.path)
        if doc is not None:
            trace = trace_file(key.path, traces) if traces is not None else None
            written += trace is not None and write_trace_file(key.as_dict(), path, trace, doc)
            manifest["units"][key.path] = {"store": str(path), "status": doc["status"], "reason": doc.get("reason"),
                                           "trace": trace, **unit_lengths(doc)}
        else:
            manifest["units"][key.path] = {"store": None, "status": "failed", "reason": failures.get(key.path, "?")}
    stats["traces_written"] = written
    if failures:  # every stored unit has its trace file: the rerun generates only the failed ones
        raise transient_failures(failures, len(units), "units")
    return manifest


def collection_job(config: Mapping[str, Any], model: str, question_set: str, batch: str,
                   base: str | os.PathLike = ".") -> dict[str, Any]:
    """A collection job's parameters (:meth:`~thinkprobe.generate.collection_jobs.CollectionJobs.batch_params`), planned
    again from the workflow's config inside the job: the question texts never pass through Snakemake's
    params (they would be stored, compared and printed for every job)."""
    from ..generate.collection_jobs import list_collection_jobs

    plan = list_collection_jobs(config, base)
    return plan.batch_params(model, question_set, batch, config["collection"])


def _generate_chunk(engine: Engine, chunk: Sequence[Mapping[str, Any]], prompts: Mapping[str, str],
                    params: Mapping[str, Any], stats: dict[str, Any], failures: dict[str, str]
                    ) -> list[tuple[Mapping[str, Any], dict[str, Any]]]:
    """Sample a chunk of units in one engine call, then resample the looping ones (new seeds), in rounds."""
    loop_cfg = params["loop_detection"]
    opened = ModelSpec.of(params["model"]).think_prefill
    attempts: dict[str, list[dict[str, Any]]] = {UnitKey(**u["unit"]).path: [] for u in chunk}
    final: dict[str, tuple[dict[str, Any], Generation, Any, Any]] = {}
    todo = list(chunk)
    for attempt in range(int(loop_cfg["max_retries"]) + 1):
        if not todo:
            break
        seeds = [u["seed"] if attempt == 0 else unit_seed(params["seed"], UnitKey(**u["unit"]), attempt) for u in todo]
        specs = [_sampling(params["sampling"], s) for s in seeds]
        t0 = time.perf_counter()
        gens = engine.generate([prompts[u["question"]["id"]] for u in todo], specs)
        stats["generate_s"] += time.perf_counter() - t0
        stats["calls"] += 1
        again = []
        for u, seed, spec, gen in zip(todo, seeds, specs, gens):
            path = UnitKey(**u["unit"]).path
            stats["prompt_tokens"] += gen.prompt_tokens
            stats["cached_tokens"] += gen.cached_tokens or 0
            comp = gen.completions[0] if gen.completions else None
            if comp is not None:
                stats["completion_tokens"] += len(comp.token_ids)
            if gen.error is not None or comp is None or comp.finish_reason == "error":
                reason = gen.error or "the engine returned no completion"
                if is_transient(gen):  # not stored, retried next run
                    failures[path] = reason
                else:
                    final[path] = (u, gen, None, {"seed": seed, "error": reason})
                continue
            split = split_reasoning(comp.text, opened=opened, reasoning_field=comp.reasoning)
            loop = find_loop(split.reasoning, loop_cfg["window"], loop_cfg["min_repeats"],
                             loop_cfg["min_line_chars"]) if split.reasoning else None
            attempts[path].append({"seed": seed, "finish_reason": comp.finish_reason,
                                   "completion_tokens": len(comp.token_ids),
                                   "looping": loop is not None, "no_reasoning": split.reasoning is None})
            final[path] = (u, gen, split, {"seed": seed, "spec": spec, "loop": loop, "completion": comp})
            if loop is not None or split.reasoning is None:
                again.append(u)
        todo = again
    out = []
    for u in chunk:
        path = UnitKey(**u["unit"]).path
        if path in failures or path not in final:
            continue
        out.append((u, unit_store_doc(u, params, engine, prompts[u["question"]["id"]], *final[path][1:],
                                      attempts[path])))
    return out


@lru_cache(maxsize=None)
def collection_code_sha256() -> str:
    """sha256 of the collection job's code (the job, its plan and the engine factory; :mod:`thinkprobe.codedeps`),
    recorded in every stored unit's provenance; derived once per process."""
    from ..generate.engine import open_engine

    return source_hash(code_modules(collect_batch, collection_job, open_engine))


def unit_store_doc(u: Mapping[str, Any], params: Mapping[str, Any], engine: Engine, prompt: str, gen: Generation,
                   split, extra: Mapping[str, Any], attempts: list[dict[str, Any]]) -> dict[str, Any]:
    """The stored record of one finished unit: reasoning, answer, token ids, and full provenance."""
    spec = ModelSpec.of(params["model"])
    seed = extra["seed"]
    prov = {
        "thinkprobe_version": __version__,
        "source_sha256": collection_code_sha256(),
        "model": spec.name,
        "model_path": spec.weights,
        # where the weights came from: {hub_id, revision, commit} (the resolved sha) or {path}
        "model_source": getattr(engine, "source", None),
        "backend": engine.backend,
        **({"endpoint": spec.base_url} if spec.base_url else {}),
        "engine_version": engine.version,
        "engine_args": dict(getattr(engine, "args", None) or spec.engine.thaw()),
        "reasoning_mode": spec.reasoning,  # filled by ModelSpec.from_config (generate.defaults)
        "think_prefill": spec.think_prefill,
        "system_prompt": spec.system_prompt,
        "prompt_variant": params["prompt_variant"],
        "sampling": {**_sampling(params["sampling"], seed).as_dict(), **({"max_tokens_used": gen.info["max_tokens"]}
                                                                        if "max_tokens" in gen.info else {})},
        "seed": seed,
        "base_seed": params["seed"],
        "attempts": attempts,
        "timings": {"finished_utc": now(), "call_seconds": round(gen.seconds, 3)},
        "tokens": {"prompt": gen.prompt_tokens, "cached": gen.cached_tokens,
                   "completion": len(extra["completion"].token_ids) if "completion" in extra else 0},
        "tokenizer_sha256": getattr(engine, "tokenizer_sha256", None),
        "store_version": STORE_VERSION,
    }
    base = {"unit": dict(u["unit"]), "question": dict(u["question"]), "prompt": prompt,
            "settings_sha256": unit_settings(u, params, model_identity(spec)), "provenance": prov}
    if split is None:
        return {**base, "status": "excluded", "reason": f"collect: {extra['error']}"}
    comp = extra["completion"]
    doc = {**base, "status": "ok", "reason": None, "reasoning": split.reasoning, "answer": split.answer,
           "response": comp.text, "reasoning_closed": split.closed, "finish_reason": comp.finish_reason,
           "token_ids": list(comp.token_ids), "prompt_token_ids": gen.info.get("prompt_token_ids"), "looping": None}
    if split.reasoning is None:
        doc.update(status="excluded", reason=f"collect: no reasoning in the response after {len(attempts)} "
                                             "attempt(s) (no <think> block or reasoning field)")
    elif extra["loop"] is not None:
        loop = extra["loop"]
        doc["looping"] = {"truncated": True, "cut": loop.cut, "repeats": loop.count, "segment": loop.segment[:200],
                          "original_chars": len(split.reasoning)}
        doc["reasoning"] = split.reasoning[:loop.cut].rstrip()
    return doc


def write_trace_file(unit: Mapping[str, str], store_file: str | os.PathLike, out: str | os.PathLike,
                     record: Mapping[str, Any] | None = None) -> bool:
    """Write a collected unit's trace file from its stored record, unless it exists; True when written.

    A trace file is written once, atomically, then made read-only like the store: a rerun of the batch
    (an added run or question, a killed job resumed) writes only the missing files and never rewrites one.
    """
    out = Path(out)
    if out.exists():
        return False
    write_unit(out, trace_unit_doc(unit, store_file, record=record))
    mode = stat.S_IMODE(out.stat().st_mode)
    os.chmod(out, mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return True


def trace_unit_doc(unit: Mapping[str, str], store_file: str | os.PathLike | None, reason: str | None = None,
                   record: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The analysis's unit file (``results/traces/...``) for a collected unit, from its stored record.

    The same document the import stage writes (``trace.text`` is the reasoning, verbatim), plus
    ``origin: collected``, the answer, the generation record (token ids, finish reason, looping) and the
    collection provenance. A unit that no collection job asks for (a model or run of other question sets)
    is ``absent``: outside the question set's grid, no unit of the study.
    """
    unit = dict(unit)
    upath = UnitKey(**unit).path
    if store_file is None:
        return absent_doc(unit, reason)
    if record is None:
        from ..integrity import unsealed

        record = unsealed(json.loads(Path(store_file).read_text(encoding="utf-8")))
    rec = record
    ids = {**unit, "domain": rec["question"].get("domain") or "", "record_id": upath, "source": str(store_file)}
    common = {"trace_id": upath, "ids": ids, "origin": "collected", "question": rec["question"]}
    prov = {**rec["provenance"], "store": str(store_file)}
    if rec["status"] != "ok":
        return unit_doc(unit, "excluded", prov, rec["reason"], "collect", **common)
    return unit_doc(unit, "ok", prov, **common,
                    trace={"text": rec["reasoning"], "source": str(store_file),
                           "truncated": bool(rec["looping"]) or not rec["reasoning_closed"], "offset": 0},
                    answer=rec["answer"],
                    generation={"prompt": rec["prompt"], "prompt_token_ids": rec.get("prompt_token_ids"),
                                "token_ids": rec["token_ids"],
                                "finish_reason": rec["finish_reason"], "reasoning_closed": rec["reasoning_closed"],
                                "looping": rec["looping"], "response": rec["response"]})
