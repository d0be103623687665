"""Labelling: stored continuations -> canonical answer labels, one trajectory record per trace.

Split out of :mod:`thinkprobe.trajectories.sampling`: labelling is a separate, cheap step, so a parser
change never costs GPU time. Labels read:

* full estimator, native reasoner: the text after ``</think>`` (found from the token ids where sampling
  recorded ``think_closed``); without it, a continuation that ended on its own (weak prompted models
  forget the tag) is parsed strictly (an anchored answer such as "The answer is 12" only), one cut by the
  budget or the context is null (it never finished its reasoning);
* full estimator, chain of thought: the whole continuation; one cut (``length``) is parsed strictly (an
  anchored answer only, else null), one that ended on its own non-strictly;
* forced estimator: ``cue + text`` (see :mod:`thinkprobe.trajectories.forced`).

Every text is first cut at the stop strings of the trace's prompt style (:func:`thinkprobe.answers.cut_at_stop`).
Per checkpoint the record counts the continuations cut by the budget and by the context apart from the
null labels, and a record whose final checkpoint (K) has no labels is ``incomplete``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..answers import cut_at_stop
from .forced import forced_answer_text


def continuation_label(cont: Mapping[str, Any], task: str | None, cfg_or_estimator, native: bool,
                       cues: Mapping[str, str] | None = None, stop: Sequence[str] = ()) -> str | None:
    """The canonical label of one continuation (rules in the module docstring); None is the null label.

    ``stop``: the stop strings of the trace's prompt style; the text is cut at the first one before parsing,
    so an invented follow-up question never decides the label (continuations sampled without them too).
    Where sampling recorded the reasoning end from the token ids (``think_closed``/``answer_text``, for a
    tokenizer with a ``</think>`` token) that decides; else ``</think>`` is searched in the text.
    """
    from .parsing import parse_answer

    if task is None:
        return None
    estimator = getattr(cfg_or_estimator, "estimator", cfg_or_estimator)  # a SamplingConfig or a name
    if not isinstance(cfg_or_estimator, str):
        cues = cfg_or_estimator.answer_cues
    text = cont.get("text") or ""
    if estimator == "forced":
        return parse_answer(cut_at_stop(forced_answer_text(task, text, cues), stop), task)
    if native:
        if "think_closed" in cont:
            if cont["think_closed"]:
                return parse_answer(cut_at_stop(cont.get("answer_text") or "", stop), task)
            pos = -1
        else:
            pos = text.find("</think>")
        if pos >= 0:
            return parse_answer(cut_at_stop(text[pos + len("</think>"):], stop), task)
        if cont.get("finish_reason") != "stop":
            return None
        return parse_answer(cut_at_stop(text, stop), task, strict=True)
    return parse_answer(cut_at_stop(text, stop), task, strict=cont.get("finish_reason") == "length")


def _stop_reason(cont: Mapping[str, Any]) -> str:
    """The recorded stop reason; continuations stored before it was recorded: from ``finish_reason``."""
    if cont.get("stop"):
        return cont["stop"]
    return {"stop": "eos", "length": "budget"}.get(cont.get("finish_reason"), "error")


def endpoint_label(reasoning_answer_text: str, task: str | None, native: bool) -> str | None:
    """The realized trace's own final answer, parsed (after ``</think>`` for native reasoners)."""
    from .parsing import parse_answer

    if task is None:
        return None
    text = reasoning_answer_text
    if native:
        pos = text.find("</think>")
        text = text[pos + len("</think>"):] if pos >= 0 else ""
    return parse_answer(text, task)


def label_document(doc: Mapping[str, Any], task: str | None = None, gold: str | None = None,
                   cues: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A continuation document -> the trajectory record of :mod:`thinkprobe.trajectories` (labels parsed).

    ``gold`` (raw) is canonicalised with the task's parser; a question without gold keeps ``gold: None``
    (no mechanism) and says so in ``notes``. Excluded documents give a record with ``status: excluded``
    and no checkpoints.
    """
    from .parsing import parse_answer

    task = task or doc.get("task")
    gold_raw = gold if gold is not None else doc.get("gold")
    unit = doc["unit"]
    sampling = doc.get("sampling") or {}
    record: dict[str, Any] = {**unit, "task": task, "estimator": doc.get("estimator"),
                              "decoding": doc.get("decoding", "default"), "temperature": sampling.get("temperature"),
                              "top_p": sampling.get("top_p"), "max_tokens": sampling.get("max_tokens"),
                              "status": doc.get("status"), "stage": doc.get("stage"), "reason": doc.get("reason"),
                              "notes": []}
    record["gold"] = parse_answer(str(gold_raw), task) if (gold_raw not in (None, "") and task) else None
    if record["gold"] is None:
        record["notes"].append("no gold answer: no mechanism" if gold_raw in (None, "")
                               else f"gold answer {gold_raw!r} does not parse for task {task!r}")
    if doc.get("status") != "ok":
        return {**record, "endpoint_label": None, "checkpoints": []}
    r = doc["reasoning"]
    cues = cues or sampling.get("answer_cues")
    stop = doc.get("stop") or ()
    record["endpoint_label"] = endpoint_label(cut_at_stop(r["answer_text"], stop), task, r["native"])
    record["cot_tokens_realized"] = r["k"]
    record["reasoning_how"] = r["how"]
    cps = []
    for c in doc["checkpoints"]:
        ok = c["status"] == "ok"
        labels = [continuation_label(x, task, doc.get("estimator", "full"), r["native"], cues, stop)
                  for x in c["continuations"]] if ok else []
        reasons = [_stop_reason(x) for x in c["continuations"]] if ok else []
        cps.append({k: v for k, v in c.items() if k not in ("continuations", "seeds")} | {
            "labels": labels, "n_cut_budget": reasons.count("budget"), "n_cut_context": reasons.count("context"),
            "n_null": sum(label is None for label in labels)})
        if not ok:
            record["notes"].append(f"checkpoint {c['checkpoint_index']} {c['status']}: {c.get('reason')}")
    record["checkpoints"] = cps
    final = [c for c in cps if c.get("prefix_tokens") == r["k"] and c["labels"]]
    record["incomplete"] = not final
    if record["incomplete"]:
        record["notes"].append(f"incomplete: the final checkpoint (K = {r['k']} reasoning tokens) has no labels; "
                               "K-dependent measures are not computed")
    if not any(c["labels"] for c in cps):
        record["status"], record["stage"] = "excluded", "trajectory_label"
        record["reason"] = "no checkpoint could be sampled: " + "; ".join(record["notes"][:3])
    return record
