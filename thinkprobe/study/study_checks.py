"""Checks of a study's models before any GPU job starts (run at parse time by rules/models.smk and by
``thinkprobe plan``): each problem is a sentence naming its config key.

The schema checks keys and types; these need the models and question sets together: a model given twice
(path and hub_id), a hub model on an HTTP backend, a model split over more GPUs than a node has, a tokenizer
without a chat template, a context too small for the study. A hub model that is not yet in the cache is
checked by ``fetch_model`` instead (:mod:`thinkprobe.generate.hub`), which runs before any job loading it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

from .planner import generation_models, local_folder
from ..generate import backends, modelsize
from ..generate.collection_jobs import CollectionJobs, list_collection_jobs
from ..generate.modelspec import ModelSpec, model_specs


def check_study(config: Mapping[str, Any], base: str | Path = ".", collect: CollectionJobs | None = None) -> list[str]:
    """Problems that would stop a GPU job, found before any starts; each names its config key.

    A model with both ``path`` and ``hub_id``; ``hub_id`` on an ``openai`` backend; ``tensor_parallel_size``
    above ``resources.gpus_per_node``; weights that do not fit a node's GPUs (``gpus_per_node`` x
    ``resources.gpu_mem_gb``) or the model's own ``tensor_parallel_size`` GPUs; a model on this machine whose
    tokenizer has no chat template; a ``max_model_len`` (the engine's, else the model's own context length when
    its config is on this machine) that cannot hold the longest prompt plus ``max_tokens`` of a collection job,
    or a realized trace plus a continuation of the trajectories (``trajectories.sampling.max_tokens`` null:
    the continuation takes the room left in the context, which must hold at least an answer). ``collect``: the
    collection plan when the caller has built it already (the workflow's parse), else it is planned here.
    """
    from ..generate.hub import context_length, has_chat_template

    problems: list[str] = []
    res = config["resources"]
    per_node, gpu_mem = int(res["gpus_per_node"]), float(res["gpu_mem_gb"])
    cache = res["model_cache"] or None
    specs = model_specs(config)
    for name, m in specs.items():
        if m.hub_id and m.path:
            problems.append(f"models.{name}: give either path or hub_id, not both")
        if m.hub_id and not m.kind.hub:
            problems.append(f"models.{name}.hub_id: backend {m.backend} loads no hub models (only "
                            f"{', '.join(n for n in backends.names() if backends.get(n).hub)} does; an openai "
                            "endpoint serves its own: name it with served_model)")
        if m.gpus() > per_node:
            problems.append(f"models.{name}.engine.tensor_parallel_size = {m.gpus()} is more than the "
                            f"{per_node} GPUs of a node (resources.gpus_per_node)")
    if collect is None:
        try:
            collect = list_collection_jobs(config, base)
        except ValueError as exc:
            return problems + [str(exc)]
    traj = config["trajectories"]
    for name in sorted(generation_models(config, collect)):
        if name not in specs:  # a name no models: entry defines: the trajectory plan names it (PlanError)
            continue
        m = specs[name]
        if not m.kind.loads_weights:  # an endpoint or a file: no weights, no context of its own here
            continue
        folder = local_folder(m, cache)
        problems += _memory_problems(name, m, folder, per_node, gpu_mem)
        if folder is not None and not has_chat_template(folder):
            problems.append(f"models.{name}: the tokenizer in {folder} has no chat template (thinkprobe applies "
                            "the model's chat template to every prompt)")
        window = m.max_model_len or (context_length(folder) if folder else None)
        if not window:
            continue
        key = (f"models.{name}.engine.max_model_len = {window}" if m.max_model_len
               else f"the context length of models.{name} ({window}, its config.json)")
        for (model, qset), job in collect.jobs.items():
            if model != name:
                continue
            longest = max((len(q.text) for q in collect.questions[qset]), default=0) // 3 + 64
            cap = int(job["sampling"]["max_tokens"])
            if longest + cap > window:
                problems.append(f"collection {name} x {qset}: a prompt of up to ~{longest} tokens plus max_tokens "
                                f"{cap} (collection.sampling.max_tokens) does not fit {key}")
        if name in traj["models"]:
            problems += _continuation_problems(name, config, collect, window, key)
    return problems


def _memory_problems(name: str, m: ModelSpec, folder, per_node: int, gpu_mem: float) -> list[str]:
    """Weights that no node can hold, or that the model's tensor_parallel_size GPUs cannot."""
    if m.device == "cpu":
        return []
    weights, source = modelsize.weights(m, modelsize.read_size(folder))
    if weights is None:
        return []
    if weights > per_node * gpu_mem:
        return [f"models.{name}: weights of {weights:,.0f} GB ({source}) do not fit the {per_node} x {gpu_mem:g} GB "
                "GPUs of a node (resources.gpus_per_node, resources.gpu_mem_gb)"]
    tp = m.gpus()
    usable = tp * gpu_mem * float(m.settings["gpu_memory_utilization"])  # defaults merged once: the spec
    if weights > usable:
        need = math.ceil(weights / (usable / tp))
        return [f"models.{name}: weights of {weights:,.0f} GB ({source}) do not fit its {tp} GPU(s) of "
                f"{gpu_mem:g} GB (models.{name}.engine.tensor_parallel_size = {tp}; resources.gpu_mem_gb): set "
                f"tensor_parallel_size to at least {need}"]
    return []


def _continuation_problems(name: str, config: Mapping[str, Any], collect: CollectionJobs, window: int,
                           key: str) -> list[str]:
    """A realized trace plus a continuation that does not fit the context, for every decoding sampled."""
    from ..trajectories.sampling import decoded_sampling, decoding_applies

    traj, answer = config["trajectories"], int(config["planning"]["answer_tokens_prior"])
    out = []
    decodings = {"default": None, **(traj.get("decodings") or {})}
    for qset in traj["question_sets"]:
        job = collect.jobs.get((name, qset))
        trace = int(job["sampling"]["max_tokens"]) if job else 0
        limit = int(traj["max_reasoning_tokens"])
        trace = min(trace, limit) if limit else trace
        if not trace:
            continue
        for decoding, spec in decodings.items():
            if decoding != "default" and not decoding_applies(spec, name, qset):
                continue
            where = "trajectories.sampling.max_tokens" if decoding == "default" else \
                f"trajectories.decodings.{decoding}.max_tokens"
            if traj["estimator"] == "forced":
                new, where = int(traj["forced"]["max_tokens"]), "trajectories.forced.max_tokens"
            else:
                new = decoded_sampling(traj, decoding)["max_tokens"]
            if new is None:  # the room left in the context: it must hold at least an answer
                if trace + answer > window:
                    out.append(f"trajectories {name} x {qset}: a realized trace of up to {trace} tokens leaves less "
                               f"than an answer's {answer} tokens (planning.answer_tokens_prior) for a continuation "
                               f"in {key} ({where} null: the room left in the context)")
            elif trace + int(new) > window:
                out.append(f"trajectories {name} x {qset}: a realized trace of up to {trace} tokens plus a "
                           f"continuation of {new} ({where}) does not fit {key}")
            if traj["estimator"] == "forced":
                break
    return out
