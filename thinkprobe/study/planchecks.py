"""Cross-section checks of a configuration at planning time, before any job: names that must exist elsewhere.

The schema checks each value on its own; these checks need what the inputs and the collection plan hold:

* every ``grid.models`` entry is a model of the inputs or a collected model (a typo would otherwise add a
  model whose every unit is ``missing``, silently, whenever collection supplies the rest of the grid);
* every ``trajectories.models`` x ``trajectories.question_sets`` pair is collected by ``collection.jobs``
  (its realized traces come from the collection rules; otherwise Snakemake stops later with a raw
  ``MissingInputException``).

And one check of the study's size (:func:`study_size`), run first: a study whose units, traces, checkpoints
or continuations exceed a stated limit is an error naming the keys and the number, before any list is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..traces import safe_id
from ..generate.modelspec import ModelSpec


def unknown_grid_models(configured: Iterable[str], found_models: Iterable[str], collected: Iterable[str]) -> str | None:
    """The error for ``grid.models`` entries that name no model of the inputs or the collection, or None."""
    have = {safe_id(str(m)) for m in found_models} | {safe_id(str(m)) for m in collected}
    unknown = [str(m) for m in configured if safe_id(str(m)) not in have]
    if not unknown:
        return None
    return (f"grid.models: {unknown} name no model of the inputs ({sorted(set(map(str, found_models))) or 'none'}) "
            f"and no collected model (collection.jobs: {sorted(set(map(str, collected))) or 'none'})")


def uncollected_trajectories(models: Iterable[str], question_sets: Iterable[str],
                             collected_pairs: Iterable[tuple[str, str]]) -> str | None:
    """The error for trajectory model x question set pairs that no collection job produces, or None."""
    pairs = set(collected_pairs)
    missing = [f"{m} x {q}" for m in models for q in question_sets if (m, q) not in pairs]
    if not missing:
        return None
    have = ", ".join(f"{m} x {q}" for m, q in sorted(pairs)) or "none"
    return (f"trajectories: {', '.join(missing)} is not collected (the realized traces come from collection.jobs, "
            f"which collects: {have}); add a collection job or remove it from trajectories.models/question_sets")


# ---- the size of a study, checked before any list of its units is built ------------------------------------
# A study states its size through a few multipliers (questions x runs x models; traces x checkpoints x N). Each
# key has an upper bound in config/schema.yaml, but their product can still be absurd, and planning builds one
# list entry per unit: `collection.runs: 1000000000` made planning reach 4.4 GB in 40 s before any error. The
# limits below are far above any study; `python -m thinkprobe.study.planchecks CONFIG...` prints a study's sizes
# beside them (config/trajectories-paper.yaml: 74,848 collected units, 85,400 sampled traces with its
# decodings, at most 257 checkpoints per trace, at most 3.5e8 continuations).

MAX_UNITS = 1_000_000
"""Collected units (model x question x run) of a study, and realized traces sampled by its trajectories (x
decodings): 11 times the largest shipped study (config/trajectories-paper.yaml); planning a study of this
size takes tens of minutes already (DESIGN: 75,000 units in about 2 minutes)."""

MAX_QUESTIONS = 100_000
"""Questions one question set may select (MMLU's test split has 14,042, MATH's 5,000); the schema bounds
``limit`` and ``trajectories.questions_limit`` by the same number, a question file without a limit by this."""

MAX_CHECKPOINTS = 100_000
"""Checkpoints of one trace (K / stride + 1): a 32,768-token trace has 2,049 at the paper's stride 16 and
32,769 at stride 1; more means a context above 100,000 tokens read at stride 1."""

MAX_CONTINUATIONS = 10**10
"""Continuations a study's trajectories may sample (traces x checkpoints x N, the checkpoints counted at the
longest trace the config allows): 28 times the paper's bound of 3.5e8; 10^10 continuations of a few hundred
tokens are decades of one GPU."""


def _n(x: float) -> str:
    return f"{x:,.0f}" if x < 1e15 else f"{x:.3g}"


@dataclass
class StudySize:
    """What a study's config asks for, counted without building a list of its units (:func:`measure`)."""

    questions: dict[str, int] = field(default_factory=dict)  # question set -> questions it selects
    units: int = 0  # collected units
    unit_terms: list[tuple[int, str]] = field(default_factory=list)  # (units, "model x set: q questions x r runs (key)")
    traces: int = 0  # realized traces the trajectories sample (x decodings)
    trace_terms: str = ""
    checkpoints: int = 0  # the most checkpoints one trace may have
    checkpoints_why: str = ""
    continuations: int = 0  # traces x checkpoints x N, at the longest trace each model x set allows
    n: int = 0

    def rows(self) -> list[tuple[str, int, int]]:
        """(what, this study, the limit)."""
        return [("questions in the largest set", max(self.questions.values(), default=0), MAX_QUESTIONS),
                ("collected units", self.units, MAX_UNITS), ("sampled realized traces", self.traces, MAX_UNITS),
                ("checkpoints of the longest trace", self.checkpoints, MAX_CHECKPOINTS),
                ("continuations (at most)", self.continuations, MAX_CONTINUATIONS)]


def _question_counts(config: Mapping[str, Any], base: str | Path, names: Iterable[str]) -> dict[str, int]:
    """Questions each named set selects (a set that cannot be read is left out: planning reports it)."""
    from ..generate.questions import load_question_set

    sets = config.get("question_sets") or {}
    counts: dict[str, int] = {}
    for name in dict.fromkeys(names):
        spec = sets.get(name) if isinstance(sets, Mapping) else None
        if not isinstance(spec, Mapping):
            continue
        try:
            counts[name] = len(load_question_set({**spec, "name": name}, Path(base)))
        except (ValueError, OSError):
            continue
    return counts


def measure(config: Mapping[str, Any], base: str | Path = ".") -> StudySize:
    """The sizes of a validated study (:class:`StudySize`); the cost is one read of each question set it names.

    Collected units are questions x ``runs`` per collection job; sampled traces are trajectory models x
    questions (``trajectories.questions_limit``) x ``trajectories.runs`` x the decodings that apply.
    Checkpoints are counted at the longest reasoning the config allows, so the bound holds before any trace
    exists: ``trajectories.max_reasoning_tokens`` when set, else the largest ``max_tokens`` a collection of
    that model and set may use (collection, model and job ``sampling``).
    """
    size = StudySize()
    collection = config.get("collection") or {}
    jobs = [j for j in collection.get("jobs") or [] if isinstance(j, Mapping)]
    traj = config.get("trajectories") or {}
    traj_sets = [str(q) for q in traj.get("question_sets") or []] if traj.get("models") else []
    size.questions = _question_counts(config, base, [str(j.get("question_set")) for j in jobs] + traj_sets)
    for i, job in enumerate(jobs):
        qset = str(job.get("question_set"))
        runs = int(job["runs"] if job.get("runs") is not None else collection["runs"])
        key = f"collection.jobs[{i}].runs" if "runs" in job else "collection.runs"
        units = size.questions.get(qset, 0) * runs
        size.units += units
        size.unit_terms.append((units, f"{job.get('model')} x {qset}: {_n(size.questions.get(qset, 0))} questions "
                                       f"x {_n(runs)} runs ({key})"))
    if not traj_sets:
        return size
    from ..trajectories.sampling import decoding_applies

    limit = int(traj.get("questions_limit") or 0)
    runs = len(traj.get("runs") or [1])
    size.n, stride = int(traj["n"]), max(1, int(traj["stride"]))
    decodings = [None, *(traj.get("decodings") or {}).values()]
    models_cfg = config.get("models") or {}
    for model in traj.get("models") or []:
        for qset in traj_sets:
            questions = min(size.questions.get(qset, 0), limit) if limit else size.questions.get(qset, 0)
            traces = questions * runs * sum(decoding_applies(d, str(model), qset) for d in decodings)
            overrides = (ModelSpec.from_config(str(model), models_cfg[model] or {}).sampling
                         if model in models_cfg else {})  # no entry: the trajectory plan names it
            k, why = _longest_reasoning(traj, collection, overrides, jobs, str(model), qset)
            cps = k // stride + 1 + (k % stride > 0)  # J = {0, s, 2s, ..., K} (checkpoint_positions)
            if cps > size.checkpoints:
                size.checkpoints = cps
                size.checkpoints_why = f"{model} x {qset}: {_n(k)} tokens ({why}) at stride {stride} (trajectories.stride)"
            size.traces += traces
            size.continuations += traces * cps * size.n
    size.trace_terms = (f"trajectories.models ({len(traj.get('models') or [])}) x the questions of "
                        f"trajectories.question_sets (trajectories.questions_limit: {limit or 'all'}) x "
                        f"trajectories.runs ({runs}) x the decodings that apply ({len(decodings)} in all)")
    return size


def _longest_reasoning(traj: Mapping[str, Any], collection: Mapping[str, Any], model_sampling: Mapping[str, Any],
                       jobs: list[Mapping[str, Any]], model: str, qset: str) -> tuple[int, str]:
    """The most reasoning tokens a realized trace of ``model`` x ``qset`` may have, and the key that says so."""
    cap = int(traj.get("max_reasoning_tokens") or 0)
    if cap:
        return cap, "trajectories.max_reasoning_tokens"
    found = [(int((collection.get("sampling") or {}).get("max_tokens") or 0), "collection.sampling.max_tokens"),
             (int(model_sampling.get("max_tokens") or 0), f"models.{model}.sampling.max_tokens")]
    found += [(int((j.get("sampling") or {}).get("max_tokens") or 0), f"collection.jobs[{i}].sampling.max_tokens")
              for i, j in enumerate(jobs) if str(j.get("model")) == model and str(j.get("question_set")) == qset]
    return max(found)


def study_size(config: Mapping[str, Any], base: str | Path = ".") -> list[str]:
    """Problems with the size of a validated study, found before any list of its units is built: each names
    the keys whose product is too large, the number it comes to and the limit (:func:`measure`)."""
    size = measure(config, base)
    problems = [f"question_sets.{name} selects {_n(count)} questions, above the limit of {_n(MAX_QUESTIONS)} per "
                f"set (thinkprobe.study.planchecks.MAX_QUESTIONS): set its `limit`"
                for name, count in size.questions.items() if count > MAX_QUESTIONS]
    if size.units > MAX_UNITS:
        terms = sorted(size.unit_terms, reverse=True)
        more = f"; and {len(terms) - 3} more job(s)" if len(terms) > 3 else ""
        problems.append(f"collection.jobs would collect {_n(size.units)} units, above the limit of {_n(MAX_UNITS)} "
                        f"a study may plan (thinkprobe.study.planchecks.MAX_UNITS): "
                        + "; ".join(t for _, t in terms[:3]) + more)
    if size.traces > MAX_UNITS:
        problems.append(f"trajectories would sample {_n(size.traces)} realized traces, above the limit of "
                        f"{_n(MAX_UNITS)} (thinkprobe.study.planchecks.MAX_UNITS): {size.trace_terms}")
    if size.checkpoints > MAX_CHECKPOINTS:
        problems.append(f"trajectories: a trace may have {_n(size.checkpoints)} checkpoints, above the limit of "
                        f"{_n(MAX_CHECKPOINTS)} (thinkprobe.study.planchecks.MAX_CHECKPOINTS): {size.checkpoints_why}")
    if size.continuations > MAX_CONTINUATIONS:
        problems.append(f"trajectories may sample up to {_n(size.continuations)} continuations, above the limit of "
                        f"{_n(MAX_CONTINUATIONS)} (thinkprobe.study.planchecks.MAX_CONTINUATIONS): {_n(size.traces)} "
                        f"traces x up to {_n(size.checkpoints)} checkpoints ({size.checkpoints_why}) x N = "
                        f"{size.n} (trajectories.n)")
    return problems


def main(argv: list[str] | None = None) -> int:
    """``python -m thinkprobe.study.planchecks [CONFIG...]``: a study's sizes beside the limits (config/config.yaml
    with each CONFIG merged over it, as ``thinkprobe plan --configfile``)."""
    import sys

    from .planner import study_config

    configfiles = list(sys.argv[1:] if argv is None else argv)
    size = measure(study_config(configfiles, "."), ".")
    print(f"{'size of ' + (', '.join(configfiles) or 'config/config.yaml'):<40} {'study':>16} {'limit':>16}")
    for what, value, limit in size.rows():
        print(f"{what:<40} {_n(value):>16} {_n(limit):>16}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
