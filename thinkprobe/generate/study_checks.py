"""Checks of a study's models before any GPU job starts (run at parse time by rules/models.smk and by
``thinkprobe plan``): each problem is a sentence naming its config key.

The schema checks keys and types; these need the models and question sets together: a model given twice
(path and hub_id), a hub model on an HTTP backend, a model split over more GPUs than a node has, a tokenizer
without a chat template, a context too small for the study. A hub model that is not yet in the cache is
checked by ``fetch_model`` instead (:mod:`thinkprobe.generate.hub`), which runs before any job loading it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .budget import generation_models, local_folder
from .plan import CollectionPlan, gpus, model_settings, plan_collection


def check_study(config: Mapping[str, Any], base: str | Path = ".", collect: CollectionPlan | None = None) -> list[str]:
    """Problems that would stop a GPU job, found before any starts; each names its config key.

    A model with both ``path`` and ``hub_id``; ``hub_id`` on an ``openai`` backend; ``tensor_parallel_size``
    above ``resources.gpus_per_node``; a model on this machine whose tokenizer has no chat template; a
    ``max_model_len`` (the engine's, else the model's own context length when its config is on this machine)
    that cannot hold the longest prompt plus ``max_tokens`` of a collection job, or a realized trace plus a
    continuation of the trajectories. ``collect``: the collection plan when the caller has built it already
    (the workflow's parse), else it is planned here.
    """
    from .hub import context_length, has_chat_template

    problems: list[str] = []
    models_cfg = config.get("models") or {}
    res = config.get("resources") or {}
    per_node = int(res.get("gpus_per_node", 8))
    cache = res.get("model_cache") or None
    for name, raw in models_cfg.items():
        m = model_settings(name, raw or {})
        if m.get("hub_id") and m.get("path"):
            problems.append(f"models.{name}: give either path or hub_id, not both")
        if m.get("hub_id") and m.get("backend") != "vllm":
            problems.append(f"models.{name}.hub_id: only the vllm backend loads hub models (an openai endpoint "
                            "serves its own; name it with served_model)")
        if gpus(m) > per_node:
            problems.append(f"models.{name}.engine.tensor_parallel_size = {gpus(m)} is more than the "
                            f"{per_node} GPUs of a node (resources.gpus_per_node)")
    if collect is None:
        try:
            collect = plan_collection(config, base)
        except ValueError as exc:
            return problems + [str(exc)]
    for name in sorted(generation_models(config, collect)):
        m = model_settings(name, models_cfg.get(name) or {})
        if m.get("backend") != "vllm":
            continue
        folder = local_folder(m, cache)
        if folder is not None and not has_chat_template(folder):
            problems.append(f"models.{name}: the tokenizer in {folder} has no chat template (thinkprobe applies "
                            "the model's chat template to every prompt)")
        window = (m.get("engine") or {}).get("max_model_len") or (context_length(folder) if folder else None)
        if not window:
            continue
        key = (f"models.{name}.engine.max_model_len = {window}" if (m.get("engine") or {}).get("max_model_len")
               else f"the context length of models.{name} ({window}, its config.json)")
        for (model, qset), job in collect.jobs.items():
            if model != name:
                continue
            longest = max((len(q.text) for q in collect.questions[qset]), default=0) // 3 + 64
            cap = int(job["sampling"].get("max_tokens", 8192))
            if longest + cap > window:
                problems.append(f"collection {name} x {qset}: a prompt of up to ~{longest} tokens plus max_tokens "
                                f"{cap} (collection.sampling.max_tokens) does not fit {key}")
        traj = config.get("trajectories") or {}
        if name in (traj.get("models") or []):
            s = traj.get("sampling") or {}
            new = int((traj.get("forced") or {}).get("max_tokens", 16)) if traj.get("estimator") == "forced" \
                else int(s.get("max_tokens", 512))
            for qset in traj.get("question_sets") or []:
                job = collect.jobs.get((name, qset))
                trace = int(job["sampling"].get("max_tokens", 8192)) if job else 0
                limit = int(traj.get("max_reasoning_tokens") or 0)
                trace = min(trace, limit) if limit else trace
                if trace and trace + new > window:
                    problems.append(f"trajectories {name} x {qset}: a realized trace of up to {trace} tokens plus a "
                                    f"continuation of {new} (trajectories.sampling.max_tokens) does not fit {key}")
    return problems
