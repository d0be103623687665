"""The study planner: what a config will cost before an allocation is asked for (``thinkprobe plan``, rule ``plan``),
and what each generation job will ask SLURM for (:mod:`thinkprobe.generate.jobres`).

Per job, per model x question set, per rule and in total: units, jobs, SLURM jobs, GPUs per job, generated
tokens expected, the wall time each job asks for, job hours and GPU hours. The jobs are those the workflow plans
(:class:`~thinkprobe.generate.collection_jobs.CollectionJobs`, :class:`~thinkprobe.trajectories.batches.TrajectoryJobs`),
so the planner and Snakemake cannot disagree on what a job is, and the workflow takes each generation job's
resources from this same estimate.

Expected generated tokens
    * collection: units x the expected completion length of the model x question set: the mean completion
      length of its units already collected (read from the collection jobs' manifests, which list each unit's
      token counts, not from every unit file), else the prior: ``models.<m>.trace_tokens.<task>`` when the
      model states it, else ``planning.trace_tokens_prior.<task>`` (a native reasoner's reasoning) times
      ``planning.prompted_trace_share`` for a model whose chain of thought is prompted (instruct models write
      several times less than reasoning models), plus ``planning.answer_tokens_prior``, capped by the job's
      ``max_tokens``.
    * trajectories (answer-distribution trajectories, App. A.1 and A.5 of the trajectories paper): per sampling
      job (one decoding of one batch), the sum over its realized traces of sum over checkpoints j in J of N x
      the expected continuation length. J = {0, s, 2s, ..., K} (stride s, K the trace's reasoning tokens, capped
      by ``max_reasoning_tokens``); a full continuation from prefix j runs to its answer, about K - j + A
      tokens (A: the collected trace's own answer tokens, its completion less K, so about 0 for a prompted
      chain of thought whose answer is inside its reasoning; ``planning.answer_tokens_prior`` before collection): the expected length, not the budget, bounded by the decoding's ``max_tokens`` when it sets one and
      by the room left in the context (``max_model_len`` less the prompt and the prefix) when it is null; a
      forced answer costs ``forced.max_tokens``. K is the collected trace's (its manifest), else the prior's.
      Every decoding (``trajectories.decodings``) counts with its own budget, so the cost grows with K squared.

GPU hours
    job hours = tokens / throughput + the start-up allowance (``planning.job_overhead_s`` + ``planning.load_s_per_gb``
    x the weights' GB: :func:`thinkprobe.generate.jobres.startup_s`), GPU hours = job hours x GPUs per job.
    Throughput is output tokens/s of ONE job (all its tensor-parallel GPUs) from ``planning.throughput``, by GPU
    type (``planning.gpu_type``; a ``device: cpu`` model uses the row ``cpu``) and size class of the model's
    active parameters (``models.<name>.params_b``, else the built-in's size, else what the model's own files say
    when they are on this machine: :mod:`thinkprobe.generate.modelsize`; the plan names the witness).

Not counted: loop retries (at most ``loop_detection.max_retries`` more samples of a looping trace), prompt
prefill (vLLM's prefix cache serves most of it for continuations), sequential stopping (fewer continuations).
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..units import UnitKey
from ..generate import jobres, modelsize
from ..generate.collection_jobs import CollectionJobs, gpus, list_collection_jobs
from ..generate.modelspec import ModelSpec, model_specs

COLUMNS = ("rule", "units", "jobs", "slurm_jobs", "gpus_per_job", "tokens", "runtime_min", "over_cap", "job_hours",
           "gpu_hours")
PROMPT_TEMPLATE_TOKENS = 64  # chat template and instructions around a question (planning only)
CHARS_PER_TOKEN = 3.5


class PlanError(ValueError):
    """The study cannot run as configured (a model too large for a node, a context too small, ...): names the key."""


@dataclass
class Job:
    """One generation job: its expected tokens and hours, and the resources it asks SLURM for."""

    rule: str
    model: str
    question_set: str
    batch: str
    units: int
    tokens: float
    hours: float
    resources: dict[str, Any]

    @property
    def over_cap(self) -> bool:
        return bool(self.resources.get("over_cap"))

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "model": self.model, "question_set": self.question_set, "batch": self.batch,
                "units": self.units, "tokens": self.tokens, "job_hours": self.hours,
                "resources": {k: v for k, v in self.resources.items() if k != "over_cap"},
                "over_cap": self.over_cap}


@dataclass
class Row:
    """One line of the plan: a rule (or one model x question set of it)."""

    rule: str
    units: int = 0
    jobs: int = 0
    slurm_jobs: int = 0
    gpus_per_job: int = 0
    tokens: float = 0.0
    runtime_min: int = 0  # the longest wall time one of its jobs asks for
    over_cap: int = 0  # its jobs asking more than resources.max_runtime
    job_hours: float = 0.0
    gpu_hours: float = 0.0
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (*COLUMNS, "detail")}


@dataclass
class StudyPlan:
    rows: list[Row] = field(default_factory=list)  # per model x question set where it matters
    sources: dict[str, str] = field(default_factory=dict)  # model x question set -> where its lengths came from
    sizes: dict[str, str] = field(default_factory=dict)  # model -> its parameters and weights, and their witnesses
    study_jobs: dict[str, bool] = field(default_factory=dict)  # study-wide rule -> a SLURM job (else local)
    jobs: list[Job] = field(default_factory=list)  # every generation job
    max_runtime: int = 0

    def by_rule(self) -> list[Row]:
        out: dict[str, Row] = {}
        for r in self.rows:
            _accumulate(out.setdefault(r.rule, Row(r.rule)), r)
        return list(out.values())

    def total(self) -> Row:
        t = Row("total")
        for r in self.rows:
            _accumulate(t, r)
        return t

    def tokens(self, rule: str) -> float:
        return sum(r.tokens for r in self.rows if r.rule == rule)

    def table(self) -> list[dict[str, Any]]:
        return [r.as_dict() for r in (*self.rows, *self.by_rule(), self.total())]

    def job(self, rule: str, model: str, question_set: str, batch: str) -> Job:
        return self._index()[(rule, model, question_set, batch)]

    def _index(self) -> dict[tuple[str, str, str, str], Job]:
        if getattr(self, "_by_key", None) is None or len(self._by_key) != len(self.jobs):
            self._by_key = {(j.rule, j.model, j.question_set, j.batch): j for j in self.jobs}
        return self._by_key

    def over_cap(self) -> list[str]:
        """One message per generation job whose wall time exceeds ``resources.max_runtime``, naming the fix."""
        out = []
        for j in (j for j in self.jobs if j.over_cap):
            # the key that splits this model's batches only (trajectories: per model; collection has one size)
            size = ("collection.batch_questions" if j.rule == "collect"
                    else f"trajectories.batch_questions_by_model.{j.model}")
            why = ("derived: resources.runtime_factor x the planner's expected hours"
                   if "runtime" in j.resources.get("derived", []) else f"stated: models.{j.model}.runtime or "
                   f"models.{j.model}.resources.{j.rule}.runtime")
            out.append(f"{j.rule} {j.model} x {j.question_set} {j.batch}: asks {j.resources['runtime']:,} min "
                       f"({why}; {j.tokens / 1e6:,.1f} M tokens expected) but resources.max_runtime = "
                       f"{self.max_runtime:,}: lower {size} (split the batch) or raise resources.max_runtime")
        return out

    def format(self) -> str:
        """The plan as a text table: one line per model x question set, then per rule, then the total. ``min/job``
        is the longest wall time one of the row's jobs asks for; ``over cap`` counts jobs above
        ``resources.max_runtime`` (listed below the table: split their batches)."""
        head = ["rule", "model x set", "units", "jobs", "SLURM jobs", "GPUs/job", "tokens", "min/job", "over cap",
                "job h", "GPU h"]
        cells = lambda r, d: [r.rule, d, f"{r.units:,}", f"{r.jobs:,}", f"{r.slurm_jobs:,}", str(r.gpus_per_job),
                              _tokens(r.tokens), f"{r.runtime_min:,}" if r.runtime_min else "",
                              f"{r.over_cap:,} !" if r.over_cap else "", f"{r.job_hours:,.1f}", f"{r.gpu_hours:,.1f}"]
        lines = [cells(r, r.detail) for r in self.rows]
        lines.append(None)
        lines += [cells(r, "(all)") for r in self.by_rule()]
        t = self.total()
        lines += [None, ["total", "", "", f"{t.jobs:,}", f"{t.slurm_jobs:,}", f"max {t.gpus_per_job}",
                         _tokens(t.tokens), f"{t.runtime_min:,}" if t.runtime_min else "",
                         f"{t.over_cap:,} !" if t.over_cap else "", f"{t.job_hours:,.1f}", f"{t.gpu_hours:,.1f}"]]
        widths = [max(len(head[i]), *(len(l[i]) for l in lines if l)) for i in range(len(head))]
        fmt = lambda cells: "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
        rule = "  ".join("-" * w for w in widths)
        out = [fmt(head), rule] + [fmt(l) if l else rule for l in lines]
        problems = self.over_cap()
        if problems:
            out += ["", f"{len(problems)} job(s) over resources.max_runtime = {self.max_runtime:,} min:"]
            out += [f"  ! {m}" for m in problems[:20]]
            if len(problems) > 20:
                out.append(f"  ... and {len(problems) - 20} more (--json lists every job)")
        for label, found in (("model size", self.sizes), ("expected lengths", self.sources)):
            if found:
                items = sorted(found.items())
                out += [""] + [f"{label}, {k}: {v}" for k, v in items[:16]]
                if len(items) > 16:
                    out.append(f"... and {len(items) - 16} more (--json lists them all)")
        return "\n".join(out)

    def as_json(self) -> dict[str, Any]:
        """The plan as ``thinkprobe plan --json`` prints it and rule ``plan`` writes it."""
        return {"rows": self.table(), "jobs": [j.as_dict() for j in self.jobs], "sources": self.sources,
                "sizes": self.sizes, "study_jobs": self.study_jobs}

    def markdown(self) -> str:
        """Per rule and in total, as a Markdown table (docs/planning.md's tables: ``thinkprobe plan --markdown``)."""
        out = ["| rule | units | jobs | SLURM jobs | GPUs/job | tokens | min/job | job hours | GPU hours |",
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in (*self.by_rule(), self.total()):
            units = "" if r.rule == "total" else f"{r.units:,}"
            runtime = f"{r.runtime_min:,}" + (f" ({r.over_cap} over cap)" if r.over_cap else "") if r.runtime_min else ""
            out.append(f"| {r.rule} | {units} | {r.jobs:,} | {r.slurm_jobs:,} | {r.gpus_per_job} | {_tokens(r.tokens)} "
                       f"| {runtime} | {r.job_hours:,.1f} | {r.gpu_hours:,.1f} |")
        return "\n".join(out)


def _tokens(n: float) -> str:
    return f"{n / 1e6:,.2f} M" if n >= 1e5 else f"{n:,.0f}"


def size_class(params_b: float | None, classes: Mapping[str, float]) -> str:
    """The throughput class of a model with ``params_b`` billion active parameters.

    >>> classes = {"tiny": 1, "small": 10, "medium": 20, "large": 40, "xlarge": 150}
    >>> size_class(0.135, classes), size_class(14, classes), size_class(32, classes), size_class(200, classes)
    ('tiny', 'medium', 'large', 'xxlarge')
    """
    if params_b is None:
        return "medium"
    for name, bound in sorted(classes.items(), key=lambda kv: kv[1]):
        if params_b <= bound:
            return name
    return "xxlarge"


def model_size(model: ModelSpec, model_cache: str | None) -> tuple[float | None, float | None, str]:
    """``(active params_b, weights GB, where both came from)`` of a model: the config's figures, else what its own
    files say when they are on this machine (:mod:`thinkprobe.generate.modelsize`: its weight index, its
    safetensors headers or its config.json), so a mixture-of-experts model is sized by all its experts and
    classed by the few it computes with."""
    size = modelsize.read_size(local_folder(model, model_cache))
    active, active_from = modelsize.active_params_b(model, size)
    gb, gb_from = modelsize.weights(model, size)
    parts = [f"active {active:,.3g} B ({active_from})" if active is not None else f"active: {active_from}"]
    if size.total is not None and not model.weights_gb:
        parts.append(f"total {size.total / 1e9:,.3g} B ({size.total_source})")
    parts.append(f"weights {gb:,.3g} GB ({gb_from})" if gb is not None else
                 f"weights: unknown, {jobres.UNKNOWN_WEIGHTS_GB:g} GB assumed")
    return active, gb, "; ".join(parts)


def local_folder(model: ModelSpec, model_cache: str | None) -> Path | None:
    """The model's folder when it is already on this machine (never downloads, never converts)."""
    from ..generate.hub import HubModelError, cached_snapshot

    if model.hub_id:
        try:
            return cached_snapshot(model.name, model.hub_id, str(model.revision), model_cache)[0]
        except HubModelError:
            return None
    path = Path(str(model.path or ""))
    return path if model.path and (path / "config.json").is_file() else None


def throughput(config: Mapping[str, Any], model: ModelSpec, params_b: float | None) -> tuple[float, str]:
    plan = config["planning"]
    gpu_type = "cpu" if model.device == "cpu" else str(plan["gpu_type"])
    table = (plan.get("throughput") or {}).get(gpu_type)
    if not table:
        raise PlanError(f"planning.throughput has no row {gpu_type!r} (planning.gpu_type); rows: "
                        f"{', '.join(sorted(plan.get('throughput') or {}))}")
    cls = size_class(params_b, plan.get("size_classes") or {})
    if cls not in table:
        raise PlanError(f"planning.throughput.{gpu_type} has no size class {cls!r}")
    return float(table[cls]), f"{gpu_type}/{cls}"


def observed_lengths(base: Path, collect: CollectionJobs) -> tuple[dict[tuple[str, str], list[int]],
                                                                  dict[UnitKey, tuple[int, int | None]]]:
    """What collection already produced: completion tokens per model x question set, and each collected unit's
    reasoning tokens K with its answer tokens (completion less K; None when the manifest lacks the completion),
    from the collection jobs' manifests (one file per batch, never every unit file)."""
    completions: dict[tuple[str, str], list[int]] = defaultdict(list)
    k: dict[UnitKey, tuple[int, int | None]] = {}
    for batch in collect.batches:
        try:
            units = json.loads((base / collect.manifest(batch)).read_text(encoding="utf-8"))["units"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for unit, entry in units.items():
            if not isinstance(entry, dict) or entry.get("status") != "ok":
                continue
            if isinstance(entry.get("completion_tokens"), int):
                completions[batch[:2]].append(entry["completion_tokens"])
            if isinstance(entry.get("reasoning_tokens"), int):
                done = entry.get("completion_tokens")
                k[UnitKey.from_path(unit)] = (entry["reasoning_tokens"], max(0, done - entry["reasoning_tokens"])
                                              if isinstance(done, int) else None)
    return completions, k


def prior_tokens(config: Mapping[str, Any], model: ModelSpec, task: str) -> tuple[int, str]:
    """The expected reasoning tokens of a trace of ``model`` on a ``task`` question before any is collected, and
    where the figure comes from."""
    stated = model.trace_tokens.get(task)
    if stated:
        return int(stated), f"models.{model.name}.trace_tokens.{task}"
    plan = config["planning"]
    priors = plan["trace_tokens_prior"]
    base = int(priors[task] if task in priors else priors["open"])
    if model.reasoning == "prompted":
        return (max(1, round(base * float(plan["prompted_trace_share"]))),
                f"planning.trace_tokens_prior.{task} {base} x prompted_trace_share {plan['prompted_trace_share']}")
    return base, f"planning.trace_tokens_prior.{task}"


def context_window(model: ModelSpec, cache) -> int | None:
    """The model's context: the max_model_len its entry states, else its own (config.json, when on this machine)."""
    if model.max_model_len:
        return model.max_model_len
    folder = local_folder(model, cache)
    if folder is None:
        return None
    from ..generate.hub import context_length

    return context_length(folder)


def continuation_tokens(k: int, *, n: int, stride: int, limit: int, cap: int | None, window: int | None,
                        prompt: int, answer: int, forced: int | None) -> float:
    """Tokens sampled for one realized trace of ``k`` reasoning tokens (App. A.1, A.5): N continuations at each
    checkpoint j of J, each about the rest of the reasoning plus the answer (k - j + answer), within the
    decoding's budget ``cap`` or, when it is None, within the room the prefix leaves in the context ``window``;
    ``forced``: the forced-answer estimator's fixed budget.

    >>> continuation_tokens(32, n=2, stride=16, limit=0, cap=None, window=None, prompt=10, answer=4, forced=None)
    120.0
    >>> continuation_tokens(32, n=2, stride=16, limit=0, cap=10, window=None, prompt=10, answer=4, forced=None)
    48.0
    >>> continuation_tokens(32, n=2, stride=16, limit=0, cap=None, window=40, prompt=10, answer=4, forced=None)
    88.0
    """
    from ..trajectories.checkpoints import checkpoint_positions

    positions = checkpoint_positions(min(k, limit) if limit > 0 else k, stride)
    total = 0.0
    for j in positions:
        if forced is not None:
            total += forced
            continue
        length = k - j + answer
        if cap is not None:
            length = min(length, cap)
        elif window is not None:
            length = min(length, max(0, window - prompt - j))
        total += length
    return float(n * total)


def plan_study(config: Mapping[str, Any], base: str | Path = ".", collect: CollectionJobs | None = None,
               trajectories=None, imported: Mapping[str, tuple[int, int]] | None = None) -> StudyPlan:
    """The plan of a validated config (defaults filled); the collection manifests under ``base/results`` give the
    lengths already observed.
    ``collect``, ``trajectories`` and ``imported`` (:func:`imported_sets`): the workflow's own plans when it has
    built them (its parse), else planned.

    Raises
    ------
    ValueError
        When ``config`` has not been through validation (no ``planning`` section): the planner's priors and
        throughput table come from the schema's defaults, and a plan without them would be silently empty.
    """
    if not isinstance(config.get("planning"), Mapping):
        raise ValueError("plan_study needs a validated config (thinkprobe.config.validate_config fills the "
                         "'planning' section with its defaults); this one has none")
    base = Path(base)
    answer = int(config["planning"]["answer_tokens_prior"])
    res = config["resources"]
    cache = res["model_cache"] or None
    collect = collect if collect is not None else list_collection_jobs(config, base)
    study = StudyPlan(max_runtime=int(res["max_runtime"]))
    models_cfg = config.get("models") or {}

    hub = hub_models(config, collect)
    if hub:
        local = bool(res["fetch_local"])
        study.rows.append(Row("fetch_model", units=len(hub), jobs=len(hub), slurm_jobs=0 if local else len(hub),
                              detail=f"{len(hub)} hub model(s)"))

    completions, observed_k = observed_lengths(base, collect)
    info: dict[str, dict[str, Any]] = {}  # per model: settings, throughput, GPUs, weights

    def model_info(name: str) -> dict[str, Any]:
        if name not in info:
            m = collect.models[name] if name in collect.models else ModelSpec.from_config(name, models_cfg[name] or {})
            active, weights, where = model_size(m, cache)
            rate, cls = throughput(config, m, active)
            info[name] = {"cfg": m, "rate": rate, "class": cls, "weights": weights}
            study.sizes[name] = where
        return info[name]

    def add_job(rule: str, model: str, qset: str, batch: str, units: int, tokens: float) -> Job:
        mi = model_info(model)
        hours = tokens / mi["rate"] / 3600 + jobres.startup_s(config, mi["weights"]) / 3600
        r = jobres.job_resources(rule, mi["cfg"], config, hours, tokens, mi["weights"])
        r["over_cap"] = jobres.over_cap(r, config)
        job = Job(rule, model, qset, batch, units, tokens, hours, r)
        study.jobs.append(job)
        return job

    # ---- collection: per batch, units x the expected completion length
    collect_len: dict[tuple[str, str], float] = {}
    unit_count = Counter((u.model, u.question_set, b) for u, (_, _, b) in collect.units.items())
    for (model, qset), job in collect.jobs.items():
        spec = model_info(model)["cfg"]
        cap = int(job["sampling"]["max_tokens"])
        task = collect.questions[qset][0].task if collect.questions[qset] else "open"
        seen = completions.get((model, qset))
        if seen:
            length = sum(seen) / len(seen)
            study.sources[f"collect {model} x {qset}"] = f"mean of {len(seen)} collected units: {length:,.0f} tokens"
        else:
            prior, where = prior_tokens(config, spec, task)
            length = min(cap, prior + answer)
            study.sources[f"collect {model} x {qset}"] = (f"prior: min(max_tokens {cap}, {where} = {prior:,} + "
                                                          f"answer {answer}) = {length:,} tokens")
        collect_len[(model, qset)] = length
        jobs = [add_job("collect", model, qset, b, unit_count[(model, qset, b)], unit_count[(model, qset, b)] * length)
                for (m, q, b) in collect.batches if (m, q) == (model, qset)]
        study.rows.append(_row("collect", model, qset, jobs, model_info(model)))

    # ---- trajectories: per sampling job (a batch of one decoding), the continuations of its traces
    traj = config.get("trajectories") or {}
    if traj.get("models") and traj.get("question_sets"):
        from ..trajectories.sampling import decoded_sampling
        from ..trajectories.batches import TrajectoryJobs, decoding_of

        tplan = trajectories if trajectories is not None else TrajectoryJobs(config, base)
        traj_rows: list[Row] = []  # counted when the default target runs them (trajectories.enabled)
        forced = int(traj["forced"]["max_tokens"]) if traj["estimator"] == "forced" else None
        n, stride, limit = int(traj["n"]), int(traj["stride"]), int(traj["max_reasoning_tokens"])
        prompts = {qset: round(sum(len(q.text) for q in qs) / len(qs) / CHARS_PER_TOKEN) + PROMPT_TEMPLATE_TOKENS
                   if qs else PROMPT_TEMPLATE_TOKENS for qset, qs in collect.questions.items()}
        caps = {d: decoded_sampling(traj, d)["max_tokens"] for d in tplan.decodings}
        per_trace = lru_cache(maxsize=None)(
            lambda k, ans, cap, window, prompt: continuation_tokens(k, n=n, stride=stride, limit=limit, cap=cap,
                                                                    window=window, prompt=prompt, answer=ans,
                                                                    forced=forced))
        by_pair: dict[tuple[str, str], list[str]] = defaultdict(list)
        for (m, q, b) in tplan.batches:
            by_pair[(m, q)].append(b)
        for model in tplan.models:
            mi = model_info(model)
            window = context_window(mi["cfg"], cache)
            for qset in tplan.questions:
                batches = by_pair.get((model, qset), [])
                cjob = collect.jobs.get((model, qset))
                if cjob is None:  # no collected trace to sample: the jobs find nothing and generate nothing
                    jobs = [add_job("traj_sample", model, qset, b, 0, 0.0) for b in batches]
                    traj_rows.append(_row("traj_sample", model, qset, jobs, mi))
                    study.sources[f"traj_sample {model} x {qset}"] = "not collected: no trace to sample"
                    continue
                ccap = int(cjob["sampling"]["max_tokens"])
                seen = completions.get((model, qset))
                task = collect.questions[qset][0].task if collect.questions[qset] else "open"
                fallback = (max(0, round(sum(seen) / len(seen)) - answer) if seen
                            else min(ccap, prior_tokens(config, mi["cfg"], task)[0]))
                prompt = prompts.get(qset, PROMPT_TEMPLATE_TOKENS)
                observed = traces = 0
                jobs = []
                for b in batches:
                    cap = caps[decoding_of(b)]
                    total = 0.0
                    units = tplan.units(model, qset, b)
                    for key in units:
                        k, ans = observed_k.get(key, (None, None))
                        observed += k is not None
                        # a collected trace's own answer length (a prompted chain of thought holds its answer
                        # inside the reasoning: about 0 more), else the prior's
                        total += per_trace(fallback if k is None else k, answer if ans is None else ans, cap,
                                           window, prompt)
                    traces += len(units)
                    jobs.append(add_job("traj_sample", model, qset, b, len(units), total))
                traj_rows.append(_row("traj_sample", model, qset, jobs, mi))
                decodings = sorted({decoding_of(b) for b in batches})
                study.sources[f"traj_sample {model} x {qset}"] = (
                    f"K from {observed} collected trace(s)" + (f", {traces - observed} at the prior K = {fallback:,}"
                                                              if traces > observed else "")
                    + f"; decodings {', '.join(decodings)}" + ("" if window is None else f"; context {window:,}"))
        # labelling (rules/trajectories.smk traj_label): one CPU SLURM job per sampling batch, as the dry run submits
        if tplan.batches:
            n = len(tplan.batches)
            traj_rows.append(Row("traj_label", units=n, jobs=n, slurm_jobs=n,
                                 detail=f"{n} sampling batch(es), one CPU job each"))
        if traj["enabled"]:
            study.rows += traj_rows
        elif tplan.batches:  # their jobs stay planned: `snakemake trajectories` takes their resources from here
            study.sources["trajectories"] = (
                f"trajectories.enabled is false: not in the default target, not counted (`snakemake trajectories` "
                f"runs {sum(r.jobs for r in traj_rows):,} jobs, {sum(r.gpu_hours for r in traj_rows):,.1f} GPU-hours)")
    _analysis_rows(study, config, collect, imported if imported is not None else imported_sets(config, base, collect))
    _study_rows(study, config, base, len(tplan.batches) if traj.get("models") and traj.get("question_sets") else 0)
    _validity_rows(study, config)
    return study


def _row(rule: str, model: str, qset: str, jobs: list[Job], mi: Mapping[str, Any]) -> Row:
    """The plan's line for one model x question set of a generation rule, from its jobs."""
    hours = sum(j.hours for j in jobs)
    per_job = max((int(j.resources["gpu"]) for j in jobs), default=0)
    units = sum(j.units for j in jobs) if rule == "collect" else \
        sum(j.units for j in jobs if "-" not in j.batch)  # a trace sampled under two decodings is one unit
    return Row(rule, units=units, jobs=len(jobs), slurm_jobs=len(jobs), gpus_per_job=per_job,
               tokens=sum(j.tokens for j in jobs), runtime_min=max((int(j.resources["runtime"]) for j in jobs), default=0),
               over_cap=sum(j.over_cap for j in jobs), job_hours=hours, gpu_hours=sum(j.hours * int(j.resources["gpu"])
                                                                               for j in jobs),
               detail=f"{model} x {qset} ({mi['class']}, {mi['rate']:,.0f} tok/s)")


def generation_models(config: Mapping[str, Any], collect: CollectionJobs) -> set[str]:
    traj = config.get("trajectories") or {}
    return set(collect.models) | (set(traj.get("models") or []) if traj.get("question_sets") else set())


def hub_models(config: Mapping[str, Any], collect: CollectionJobs) -> list[str]:
    """The models a study generates with that are named by hub id (each gets a ``fetch_model`` job)."""
    specs = model_specs(config)
    return sorted(m for m in generation_models(config, collect) if m in specs and specs[m].hub_id)


def _accumulate(into: Row, row: Row) -> None:
    """Add ``row``'s counts to ``into`` (GPUs per job and wall time per job: the largest)."""
    into.units += row.units
    into.jobs += row.jobs
    into.slurm_jobs += row.slurm_jobs
    into.gpus_per_job = max(into.gpus_per_job, row.gpus_per_job)
    into.tokens += row.tokens
    into.runtime_min = max(into.runtime_min, row.runtime_min)
    into.over_cap += row.over_cap
    into.job_hours += row.job_hours
    into.gpu_hours += row.gpu_hours


def _analysis_rows(study: StudyPlan, config: Mapping[str, Any], collect: CollectionJobs,
                   imported: Mapping[str, tuple[int, int]]) -> None:
    """The Thought Graph analysis, per analysis batch (one model's units of ``resources.batch_questions``
    questions, :mod:`thinkprobe.stages.batches`): 3 jobs (segment, graph, metrics) of a collected set's batch (its
    trace files are written by the collection jobs), 4 of an imported set's (``import_traces`` first, one job per
    batch), 2 more with ``validity.compare_typers`` (``graph_typer``, ``metrics_typer``: rules/validity.smk); a
    batch's jobs are one SLURM job (group ``analysis``)."""
    from ..stages.batches import batch_count

    size = int(config["resources"]["batch_questions"])
    typers = 2 if config["validity"]["compare_typers"] else 0
    for qset in collect.question_sets:
        models = {m for m, q in collect.jobs if q == qset}  # the workflow's batches (thinkprobe.study.workflowplan)
        batches = len(models) * batch_count(len(collect.questions[qset]), size)
        units = sum(1 for u in collect.units if u.question_set == qset)
        study.rows.append(Row("analysis", units=units, jobs=batches * (3 + typers), slurm_jobs=batches,
                              detail=f"(all models) x {qset}"))
    for qset, (batches, units) in sorted(imported.items()):
        study.rows.append(Row("analysis", units=units, jobs=batches * (4 + typers), slurm_jobs=batches,
                              detail=f"(all models) x {qset}, imported"))


def imported_batches(discovery, batches: Mapping[tuple[str, str, str], Any],
                     collected_sets: Iterable[str]) -> dict[str, tuple[int, int]]:
    """Imported question set -> (its analysis batches, its units), from the workflow's discovery and batches
    (:func:`thinkprobe.stages.batches.question_batches`); collected sets are left out (:func:`_analysis_rows`
    counts them from the collection plan)."""
    collected = set(collected_sets)
    out: dict[str, list[int]] = {}
    for (_model, qset, _batch) in batches:
        if qset not in collected:
            out.setdefault(qset, [0, 0])[0] += 1
    for key in discovery.records:
        if key.question_set in out:
            out[key.question_set][1] += 1
    return {q: (b, u) for q, (b, u) in out.items()}


def imported_sets(config: Mapping[str, Any], base: str | Path, collect: CollectionJobs) -> dict[str, tuple[int, int]]:
    """What :func:`imported_batches` gives, for ``thinkprobe plan`` (outside the workflow's parse): the inputs
    read as the workflow reads them (a git input not cloned yet counts nothing)."""
    from ..corpus_git import corpus_cache, resolve_inputs
    from ..generate.collection_jobs import join_collection
    from ..stages.batches import question_batches
    from ..traces import run_name
    from ..units import discover

    if not config["inputs"]:
        return {}
    inputs, _pending, _problems = resolve_inputs(config["inputs"],
                                                 corpus_cache(config["resources"]["corpus_cache"]))
    discovery = discover(inputs, base=base, max_bytes=config["analysis"]["input"]["max_trace_bytes"],
                         models=[str(m) for m in config["grid"]["models"]],
                         runs=[run_name(r) for r in config["grid"]["runs"]])
    join_collection(discovery, config, base=base)  # the collected models join the grid, imported sets' too
    imported = {q: ids for q, ids in discovery.questions.items() if q not in collect.question_sets}
    batches = question_batches(imported, {q: discovery.models for q in imported},
                               int(config["resources"]["batch_questions"]))
    return imported_batches(discovery, batches, collect.question_sets)


def _study_rows(study: StudyPlan, config: Mapping[str, Any], base: Path, sampling_batches: int) -> None:
    """The study-wide jobs (tables, statistics, figures, pages: one job each, :mod:`thinkprobe.study.study_jobs`),
    those SLURM runs among them counted as SLURM jobs, the rest run by Snakemake itself."""
    from .study_jobs import study_jobs

    jobs = study_jobs(config, sampling_batches, base)
    study.study_jobs = jobs
    slurm = sorted(r for r, on_slurm in jobs.items() if on_slurm)
    study.rows.append(Row("study", jobs=len(jobs), slurm_jobs=len(slurm),
                          detail=f"tables, statistics, figures, pages: {len(slurm)} on SLURM"
                                 + (f" ({', '.join(slurm)})" if slurm else "")))


def _validity_rows(study: StudyPlan, config: Mapping[str, Any]) -> None:
    """The annotated sets of ``validity.sets`` (rules/validity.smk ``validate_set``, in the default target): one
    job per set and typer (the study's typer, and the other one as well with ``validity.compare_typers``), each a
    SLURM job of its own (the rule book does not make it local); no row when there is no set."""
    from .. import rulebook

    sets = config["validity"]["sets"]
    if not sets:
        return
    typers = 2 if config["validity"]["compare_typers"] else 1
    jobs = len(sets) * typers
    study.rows.append(Row("validate_set", jobs=jobs,
                          slurm_jobs=0 if rulebook.is_local("validate_set", config) else jobs,
                          detail=f"{len(sets)} annotated set(s) x {typers} typer(s)"))


def study_config(configfiles: list[str | Path], base: str | Path = ".") -> dict[str, Any]:
    """The config Snakemake would use: ``config/config.yaml`` of ``base`` (else of this checkout), each
    ``--configfile`` merged over it recursively (Snakemake's rule), validated with the schema's defaults."""
    from ..config import load_schema, validate_config
    from ..yamlread import read_yaml

    base = Path(base)
    root = base if (base / "config" / "config.yaml").is_file() else Path(__file__).resolve().parents[2]
    config: dict[str, Any] = read_yaml(root / "config" / "config.yaml") or {}
    for path in configfiles:
        _merge(config, read_yaml(path) or {})  # aliases refused before the merge walks anything
    schema_root = root if (root / "config" / "schema.yaml").is_file() else Path(__file__).resolve().parents[2]
    config = validate_config(config, load_schema(schema_root / "config" / "schema.yaml"),
                             ", ".join(str(p) for p in configfiles) or "config/config.yaml", base)
    from ..generate.datasets import prepare_study

    prepare_study(config, list(configfiles), base)  # hub question sets: read from the cache, at the locked commit
    return config


def _merge(into: dict[str, Any], new: Mapping[str, Any]) -> None:
    for key, value in new.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
