"""Labelling: stored continuations -> canonical answer labels, one trajectory record per trace.

Split out of :mod:`thinkprobe.trajectories.sampling`: labelling is a separate, cheap step, so a parser
change never costs GPU time. Every text is first cut at the stop strings of the trace's prompt style
(:func:`thinkprobe.answers.cut_at_stop`). Then a continuation that *finished* (stop reason ``eos`` or
``stop_string``) is read as follows:

* full estimator, native reasoner: the text after ``</think>`` (found from the token ids where sampling
  recorded ``think_closed``), parsed normally; without ``</think>`` (weak prompted models forget the tag)
  the whole text strictly (an anchored answer such as "The answer is 12" only);
* full estimator, chain of thought: the whole continuation, parsed normally;
* forced estimator: ``cue + text`` (see :mod:`thinkprobe.trajectories.forced`), the cue being that of the
  trace's own task as its batch was sampled with it (:func:`stored_cue`): a label job reads the cue from the
  continuation batch it labels, and only under the forced estimator.

**Cut output.** A continuation whose stop reason is the budget, the context or an engine error did not
finish. The trajectory paper labels the *answer sequence* a continuation generates after its reasoning
(its section 3 and App. A.1: a deterministic parser maps each generated answer to one label, null for an
invalid output), so a cut continuation is labelled only from a complete answer statement written before
the cut (:func:`thinkprobe.trajectories.parsing.parse_cut_answer`: a box or an anchored answer, kept only
when nothing the text could have gone on with at the cut would change it), else null:

* native reasoner whose reasoning did not close (no ``</think>``): null, it never began its answer;
* native reasoner whose answer part was cut: the complete statement of the answer part, else null;
* chain of thought and forced answers: the complete anchored statement (the answer form the prompt or
  the cue asks for), else null. ``"... so 9 * 2 = 1"`` cut by the budget is null, never the answer 1.

We chose this reading over "every cut continuation is null" because a model that has written
``\\boxed{18}`` or "The answer is 18." and then runs on (an explanation after the answer, a weak model
repeating itself) has generated its answer sequence in full; the stricter reading would make such
continuations null and measure the budget instead of the model. A text whose stop string cut it
(``cut_at_stop`` found one) ended its answer there and counts as finished.

Per checkpoint the record counts the continuations cut by the budget and by the context (``n_cut_budget``,
``n_cut_context``), the cut ones that still got a label (``n_cut_labelled``) and the null labels
(``n_null``); :func:`trajectory_incomplete` is the one definition of an incomplete trajectory.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..answers import cut_at_stop
from .forced import forced_answer_text


def continuation_label(cont: Mapping[str, Any], task: str | None, cfg_or_estimator, native: bool,
                       cue: str | None = None, stop: Sequence[str] = (),
                       choices: Sequence[Sequence[str]] | None = None) -> str | None:
    """The canonical label of one continuation (rules in the module docstring); None is the null label.

    ``cue``: the forced estimator's answer cue (a :class:`~thinkprobe.trajectories.sampling.SamplingConfig`
    given as ``cfg_or_estimator`` gives its own ``answer_cue``; None: the task's default, ``Task.answer_cue``);
    a forced continuation of a task without one raises :class:`ValueError` naming the task
    (:func:`label_document` makes it a null label with a note).
    ``stop``: the stop strings of the trace's prompt style; the text is cut at the first one before parsing,
    so an invented follow-up question never decides the label (continuations sampled without them too).
    Where sampling recorded the reasoning end from the token ids (``think_closed``/``answer_text``, for a
    tokenizer with a ``</think>`` token) that decides; else ``</think>`` is searched in the text. A
    continuation that did not finish (:func:`finished` is False) keeps only a complete answer statement.

    >>> cut = {"text": "Half of 18 is 9, so 9 * 2 = 1", "finish_reason": "length", "stop": "budget"}
    >>> continuation_label(cut, "gsm8k", "full", native=False) is None
    True
    >>> continuation_label({**cut, "stop": "eos", "finish_reason": "stop"}, "gsm8k", "full", native=False)
    '1'
    """
    from .parsing import parse_answer, parse_cut_answer

    if task is None:
        return None
    estimator = getattr(cfg_or_estimator, "estimator", cfg_or_estimator)  # a SamplingConfig or a name
    if not isinstance(cfg_or_estimator, str):
        cue = cfg_or_estimator.answer_cue
    text = cont.get("text") or ""
    done = finished(cont)

    def label(answer: str, strict: bool = False) -> str | None:
        kept = cut_at_stop(answer, stop)
        if done or len(kept) < len(answer):  # finished, or a stop string ended the answer before the cut
            return parse_answer(kept, task, strict=strict, choices=choices)
        return parse_cut_answer(kept, task, choices=choices)

    if estimator == "forced":
        if cue is None:
            from .. import tasks

            cue = tasks.get(task).answer_cue
        if cue is None:
            raise ValueError(f"no answer cue for task {task!r}")
        return label(forced_answer_text(cue, text))
    if not native:
        return label(text)
    if "think_closed" in cont:
        if cont["think_closed"]:
            return label(cont.get("answer_text") or "")
        pos = -1
    else:
        pos = text.find("</think>")
    if pos >= 0:
        return label(text[pos + len("</think>"):])
    if not done:
        return None  # the reasoning never closed: no answer sequence began
    return label(text, strict=True)


def finished(cont: Mapping[str, Any]) -> bool:
    """Whether a continuation ended on its own (end of sequence or a stop string), not cut by the budget,
    the context or an engine error."""
    return _stop_reason(cont) in FINISHED


#: Stop reasons of a continuation that ended on its own; every other one (``budget``, ``context``,
#: ``error``) cut it.
FINISHED = ("eos", "stop_string")


def _stop_reason(cont: Mapping[str, Any]) -> str:
    """The recorded stop reason; continuations stored before it was recorded: from ``finish_reason``."""
    if cont.get("stop"):
        return cont["stop"]
    return {"stop": "eos", "length": "budget"}.get(cont.get("finish_reason"), "error")


def endpoint_label(reasoning_answer_text: str, task: str | None, native: bool, cut: bool = False,
                   choices: Sequence[Sequence[str]] | None = None) -> str | None:
    """The realized trace's own final answer, parsed (after ``</think>`` for native reasoners). A trace its
    collection cut at the token budget (``cut``) is labelled as a cut continuation is
    (:func:`~thinkprobe.trajectories.parsing.parse_cut_answer`): only from a complete answer statement, never
    from the last number it happened to write."""
    from .parsing import parse_answer, parse_cut_answer

    if task is None:
        return None
    text = reasoning_answer_text
    if native:
        pos = text.find("</think>")
        text = text[pos + len("</think>"):] if pos >= 0 else ""
    return parse_cut_answer(text, task, choices=choices) if cut else parse_answer(text, task, choices=choices)


def label_document(doc: Mapping[str, Any], task: str | None = None, gold: str | None = None,
                   cue: str | None = None, choices: Sequence[Sequence[str]] | None = None
                   ) -> dict[str, Any]:
    """A continuation document -> the trajectory record of :mod:`thinkprobe.trajectories` (labels parsed).

    ``cue`` is the forced answer cue (None: the one the document was sampled with, :func:`stored_cue`).
    ``choices`` are the item's ``(key, text)`` options (multiple-choice tasks, from the question set): a key
    outside them is the null label and an answer stating one option's text gets that option (issue 33).

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
    record["gold"] = (parse_answer(str(gold_raw), task, choices=choices) if (gold_raw not in (None, "") and task)
                      else None)
    if record["gold"] is None:
        record["notes"].append("no gold answer: no mechanism" if gold_raw in (None, "")
                               else f"gold answer {gold_raw!r} does not parse for task {task!r}")
    if doc.get("status") != "ok":
        return {**record, "endpoint_label": None, "checkpoints": []}
    r = doc["reasoning"]
    cue = cue if cue is not None else stored_cue(sampling, task)
    stop = doc.get("stop") or ()
    # "cut" is absent from documents sampled before it was recorded: read as not cut, as they were labelled
    record["endpoint_label"] = endpoint_label(cut_at_stop(r["answer_text"], stop), task, r["native"],
                                              cut=r.get("cut") is True, choices=choices)
    record["cot_tokens_realized"] = r["k"]
    record["reasoning_how"] = r["how"]
    cps = []
    for c in doc["checkpoints"]:
        ok = c["status"] == "ok"
        labels = []
        for i, x in enumerate(c["continuations"] if ok else []):
            try:
                labels.append(continuation_label(x, task, doc.get("estimator", "full"), r["native"], cue, stop,
                                                 choices))
            except Exception as err:  # noqa: BLE001 - one unreadable continuation is a null label, not a lost batch
                labels.append(None)
                record["notes"].append(f"checkpoint {c['checkpoint_index']} continuation {i}: no label "
                                       f"({type(err).__name__}: {err})"[:300])
        conts = c["continuations"] if ok else []
        reasons = [_stop_reason(x) for x in conts]
        cps.append({k: v for k, v in c.items() if k not in ("continuations", "seeds")} | {
            "labels": labels, "n_cut_budget": reasons.count("budget"), "n_cut_context": reasons.count("context"),
            "n_cut_labelled": sum(label is not None and not finished(x) for x, label in zip(conts, labels)),
            "n_null": sum(label is None for label in labels)})
        if not ok:
            record["notes"].append(f"checkpoint {c['checkpoint_index']} {c['status']}: {c.get('reason')}")
    record["checkpoints"] = cps
    record["incomplete"] = trajectory_incomplete(record)
    if record["incomplete"]:
        record["notes"].append(f"incomplete: the final checkpoint (K = {r['k']} reasoning tokens) has no labels; "
                               "K-dependent measures are not computed")
    if not any(c["labels"] for c in cps):
        record["status"], record["stage"] = "excluded", "trajectory_label"
        record["reason"] = "no checkpoint could be sampled: " + "; ".join(record["notes"][:3])
    return record


def stored_cue(sampling: Mapping[str, Any], task: str | None) -> str | None:
    """The answer cue a continuation document was sampled with, from its ``sampling`` settings: its own task's
    (``answer_cue``, a forced document of this release), else its task's entry of the every-task ``answer_cues``
    that documents sampled before it held; None when it holds neither (a full-estimator document).

    >>> stored_cue({"answer_cue": "\\nTherefore, the answer is ("}, "arc")
    '\\nTherefore, the answer is ('
    >>> stored_cue({"answer_cues": {"gsm8k": "\\nSo: "}}, "gsm8k"), stored_cue({}, "gsm8k")
    ('\\nSo: ', None)
    """
    if "answer_cue" in sampling:
        return sampling["answer_cue"]
    return (sampling.get("answer_cues") or {}).get(task)


def trajectory_incomplete(record: Mapping[str, Any]) -> bool:
    """Whether a trajectory record lacks its final state p_K: the one definition, used by the labeller (the
    record's ``incomplete`` flag), the trace rows and the disagreement table.

    The final checkpoint is the one at K reasoning tokens (``prefix_tokens == cot_tokens_realized``); for a
    record that gives no K or no positions (a hand-written one), the last checkpoint it lists (highest
    ``checkpoint_index``). The trajectory is incomplete when that checkpoint is missing or has no labels
    (the context ended before it, ``max_reasoning_tokens`` capped the positions, its sampling failed), or
    when the record says so itself (``incomplete: true``).

    >>> cps = [{"checkpoint_index": 0, "prefix_tokens": 0, "labels": ["7"]},
    ...        {"checkpoint_index": 1, "prefix_tokens": 16, "labels": []}]
    >>> trajectory_incomplete({"cot_tokens_realized": 16, "checkpoints": cps})
    True
    >>> trajectory_incomplete({"cot_tokens_realized": 16, "checkpoints": cps[:1]})
    True
    >>> trajectory_incomplete({"checkpoints": cps[:1]})  # no K given: the last checkpoint listed is final
    False
    """
    if record.get("incomplete"):
        return True
    cps = [c for c in record.get("checkpoints") or [] if isinstance(c, Mapping)]
    if not cps:
        return True
    k = record.get("cot_tokens_realized")
    if k is not None and all(c.get("prefix_tokens") is not None for c in cps):
        final = [c for c in cps if c["prefix_tokens"] == k]
    else:
        final = [max(cps, key=lambda c: c.get("checkpoint_index", -1))]
    return not any(c.get("labels") for c in final)
