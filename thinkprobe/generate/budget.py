"""The study planner: what a config will cost before an allocation is asked for (``thinkprobe plan``, rule ``plan``).

Per rule and in total: units, jobs, SLURM jobs, GPUs per job, generated tokens expected and GPU hours. The
jobs are those the workflow plans (:class:`~thinkprobe.generate.plan.CollectionPlan`,
:class:`~thinkprobe.trajectories.workflow.TrajectoryPlan`), so the planner and Snakemake cannot disagree on
what a job is.

Expected generated tokens
    * collection: units x expected trace length. The expected length of a model x question set is the mean
      completion length (``provenance.tokens.completion``) of its units already stored under
      ``results/collect``; before any is collected, the prior ``planning.trace_tokens_prior`` reasoning
      tokens plus ``planning.answer_tokens_prior`` answer tokens, capped by the job's ``max_tokens``.
    * trajectories (answer-distribution trajectories, App. A.1 and A.5 of the trajectories paper): the sum over
      realized traces of sum over checkpoints j in J of N x the expected continuation length. J = {0, s, 2s, ...,
      K} (stride s, K the trace's reasoning tokens, capped by ``max_reasoning_tokens``); a full continuation
      from prefix j runs to its answer, about K - j + answer tokens, capped by ``trajectories.sampling.max_tokens``;
      a forced answer costs ``forced.max_tokens``. K comes from the collected trace when it exists
      (its completion tokens times the reasoning's share of the response's characters), else from the same
      prior as collection.

GPU hours
    job hours = tokens / throughput + jobs x ``planning.job_overhead_s``, GPU hours = job hours x GPUs per job.
    Throughput is output tokens/s of ONE job (all its tensor-parallel GPUs) from ``planning.throughput``, by GPU
    type (``planning.gpu_type``; a ``device: cpu`` model uses the row ``cpu``) and size class of the model's
    active parameters (``models.<name>.params_b``, else the built-in's size, else the cached weights' bytes / 2).

Not counted: loop retries (at most ``loop_detection.max_retries`` more samples of a looping trace), prompt
prefill (vLLM's prefix cache serves most of it for continuations), sequential stopping (fewer continuations).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from ..traces import safe_id
from .plan import CollectionPlan, gpus, model_settings, plan_collection

BUILTIN_PARAMS_B = {"smollm2": 0.135}  # SmolLM2-135M-Instruct
COLUMNS = ("rule", "units", "jobs", "slurm_jobs", "gpus_per_job", "tokens", "job_hours", "gpu_hours")


class PlanError(ValueError):
    """The study cannot run as configured (a model too large for a node, a context too small, ...): names the key."""


@dataclass
class Row:
    """One line of the plan: a rule (or one model x question set of it)."""

    rule: str
    units: int = 0
    jobs: int = 0
    slurm_jobs: int = 0
    gpus_per_job: int = 0
    tokens: float = 0.0
    job_hours: float = 0.0
    gpu_hours: float = 0.0
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (*COLUMNS, "detail")}


@dataclass
class StudyPlan:
    rows: list[Row] = field(default_factory=list)  # per model x question set where it matters
    sources: dict[str, str] = field(default_factory=dict)  # model x question set -> where its lengths came from

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

    def format(self) -> str:
        """The plan as a text table: one line per model x question set, then per rule, then the total."""
        head = ["rule", "model x set", "units", "jobs", "SLURM jobs", "GPUs/job", "tokens", "job h", "GPU h"]
        lines = [[r.rule, r.detail, f"{r.units:,}", f"{r.jobs:,}", f"{r.slurm_jobs:,}", str(r.gpus_per_job),
                  _tokens(r.tokens), f"{r.job_hours:,.1f}", f"{r.gpu_hours:,.1f}"] for r in self.rows]
        lines.append(None)
        lines += [[r.rule, "(all)", f"{r.units:,}", f"{r.jobs:,}", f"{r.slurm_jobs:,}", str(r.gpus_per_job),
                   _tokens(r.tokens), f"{r.job_hours:,.1f}", f"{r.gpu_hours:,.1f}"] for r in self.by_rule()]
        t = self.total()
        lines += [None, ["total", "", "", f"{t.jobs:,}", f"{t.slurm_jobs:,}", f"max {t.gpus_per_job}",
                         _tokens(t.tokens), f"{t.job_hours:,.1f}", f"{t.gpu_hours:,.1f}"]]
        widths = [max(len(head[i]), *(len(l[i]) for l in lines if l)) for i in range(len(head))]
        fmt = lambda cells: "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
        rule = "  ".join("-" * w for w in widths)
        out = [fmt(head), rule] + [fmt(l) if l else rule for l in lines]
        if self.sources:
            out.append("")
            items = sorted(self.sources.items())
            out += [f"expected lengths, {k}: {v}" for k, v in items[:16]]
            if len(items) > 16:
                out.append(f"... and {len(items) - 16} more (--json lists them all)")
        return "\n".join(out)


    def markdown(self) -> str:
        """Per rule and in total, as a Markdown table (the README's figures: ``thinkprobe plan --markdown``)."""
        out = ["| rule | units | jobs | SLURM jobs | GPUs/job | tokens | job hours | GPU hours |",
               "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in (*self.by_rule(), self.total()):
            units = "" if r.rule == "total" else f"{r.units:,}"
            out.append(f"| {r.rule} | {units} | {r.jobs:,} | {r.slurm_jobs:,} | {r.gpus_per_job} | {_tokens(r.tokens)} "
                       f"| {r.job_hours:,.1f} | {r.gpu_hours:,.1f} |")
        return "\n".join(out)


def _tokens(n: float) -> str:
    return f"{n / 1e6:,.2f} M" if n >= 1e5 else f"{n:,.0f}"


def size_class(params_b: float | None, classes: Mapping[str, float]) -> str:
    """The throughput class of a model with ``params_b`` billion active parameters.

    >>> size_class(0.135, {"tiny": 1, "small": 10, "medium": 40, "large": 150})
    'tiny'
    >>> size_class(120, {"tiny": 1, "small": 10, "medium": 40, "large": 150})
    'large'
    """
    if params_b is None:
        return "medium"
    for name, bound in sorted(classes.items(), key=lambda kv: kv[1]):
        if params_b <= bound:
            return name
    return "xlarge"


def model_params_b(model: Mapping[str, Any], model_cache: str | None) -> float | None:
    """Active parameters (billions): the config's ``params_b``, a built-in's size, or the cached weights' bytes / 2."""
    if model.get("params_b"):
        return float(model["params_b"])
    if str(model.get("path") or "") in BUILTIN_PARAMS_B:
        return BUILTIN_PARAMS_B[str(model["path"])]
    folder = local_folder(model, model_cache)
    if folder is not None:
        size = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
        if size:
            return size / 2e9
    return None


def local_folder(model: Mapping[str, Any], model_cache: str | None) -> Path | None:
    """The model's folder when it is already on this machine (never downloads, never converts)."""
    from .hub import HubModelError, cached_snapshot

    if model.get("hub_id"):
        try:
            return cached_snapshot(str(model.get("name")), str(model["hub_id"]), str(model.get("revision") or "main"),
                                   model_cache)[0]
        except HubModelError:
            return None
    path = Path(str(model.get("path") or ""))
    return path if model.get("path") and (path / "config.json").is_file() else None


def throughput(config: Mapping[str, Any], model: Mapping[str, Any], params_b: float | None) -> tuple[float, str]:
    plan = config.get("planning") or {}
    gpu_type = "cpu" if model.get("device") == "cpu" else str(plan.get("gpu_type", "h100"))
    table = (plan.get("throughput") or {}).get(gpu_type)
    if not table:
        raise PlanError(f"planning.throughput has no row {gpu_type!r} (planning.gpu_type); rows: "
                        f"{', '.join(sorted(plan.get('throughput') or {}))}")
    cls = size_class(params_b, plan.get("size_classes") or {})
    if cls not in table:
        raise PlanError(f"planning.throughput.{gpu_type} has no size class {cls!r}")
    return float(table[cls]), f"{gpu_type}/{cls}"


def stored_completion_tokens(results: Path, model: str, qset: str) -> list[int]:
    """Completion tokens of the units of a model x question set already in the collection store."""
    out = []
    for path in (results / "collect" / model / qset / "units").glob("*/*.json"):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        n = ((doc.get("provenance") or {}).get("tokens") or {}).get("completion")
        if doc.get("status") == "ok" and isinstance(n, int):
            out.append(n)
    return out


def reasoning_tokens(unit_file: Path) -> int | None:
    """K of a collected trace unit: completion tokens x the reasoning's share of the response's characters."""
    try:
        doc = json.loads(unit_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    gen = doc.get("generation") or {}
    ids, response, text = gen.get("token_ids"), gen.get("response") or "", (doc.get("trace") or {}).get("text") or ""
    if doc.get("status") != "ok" or not isinstance(ids, list) or not response:
        return None
    return round(len(ids) * min(1.0, len(text) / len(response)))


def _accumulate(into: Row, row: Row) -> None:
    """Add ``row``'s counts to ``into`` (GPUs per job: the largest)."""
    into.units += row.units
    into.jobs += row.jobs
    into.slurm_jobs += row.slurm_jobs
    into.gpus_per_job = max(into.gpus_per_job, row.gpus_per_job)
    into.tokens += row.tokens
    into.job_hours += row.job_hours
    into.gpu_hours += row.gpu_hours


def plan_study(config: Mapping[str, Any], base: str | Path = ".", results: str | Path = "results") -> StudyPlan:
    """The plan of a validated config (defaults filled); ``results`` is read for lengths already observed.

    Raises
    ------
    ValueError
        When ``config`` has not been through validation (no ``planning`` section): the planner's priors and
        throughput table come from the schema's defaults, and a plan without them would be silently empty.
    """
    if not isinstance(config.get("planning"), Mapping):
        raise ValueError("plan_study needs a validated config (thinkprobe.config.validate_config fills the "
                         "'planning' section with its defaults); this one has none")
    base, results = Path(base), Path(base) / results
    cfg_plan = config["planning"]
    priors, answer = dict(cfg_plan.get("trace_tokens_prior") or {}), int(cfg_plan.get("answer_tokens_prior", 64))
    overhead = float(cfg_plan.get("job_overhead_s", 300))
    cache = (config.get("resources") or {}).get("model_cache") or None
    collect = plan_collection(config, base)
    study = StudyPlan()
    models_cfg = config.get("models") or {}

    hub = hub_models(config, collect)
    if hub:
        local = bool((config.get("resources") or {}).get("fetch_local", True))
        study.rows.append(Row("fetch_model", units=len(hub), jobs=len(hub), slurm_jobs=0 if local else len(hub),
                              detail=f"{len(hub)} hub model(s)"))

    seen_by: dict[tuple[str, str], list[int]] = {}  # completion lengths of the stored units: read once
    unit_count = Counter((u.model, u.question_set) for u in collect.units)
    job_count = Counter((m, q) for (m, q, _) in collect.batches)
    for (model, qset), job in collect.jobs.items():
        mcfg = collect.models[model]
        cap = int(job["sampling"].get("max_tokens", 8192))
        prior = _prior(priors, collect.questions[qset])
        seen = seen_by[(model, qset)] = stored_completion_tokens(results, model, qset)
        if seen:
            length = sum(seen) / len(seen)
            study.sources[f"collect {model} x {qset}"] = f"mean of {len(seen)} stored units: {length:,.0f} tokens"
        else:
            length = min(cap, prior + answer)
            study.sources[f"collect {model} x {qset}"] = (f"prior: min(max_tokens {cap}, planning.trace_tokens_prior"
                                                          f" {prior} + answer {answer}) = {length:,} tokens")
        units, jobs = unit_count[(model, qset)], job_count[(model, qset)]
        study.rows.append(_gen_row("collect", config, model, qset, mcfg, units, jobs, units * length, overhead, cache))

    traj = config.get("trajectories") or {}
    if traj.get("models") and traj.get("question_sets"):
        from ..trajectories.checkpoints import checkpoint_positions
        from ..trajectories.workflow import TrajectoryPlan

        tplan = TrajectoryPlan(config, base)
        s = traj.get("sampling") or {}
        cap = int(s.get("max_tokens", 512))
        forced = traj.get("estimator") == "forced"
        forced_tokens = int((traj.get("forced") or {}).get("max_tokens", 16))
        n, stride, limit = int(traj.get("n", 16)), int(traj.get("stride", 16)), int(traj.get("max_reasoning_tokens", 0))
        traj_jobs = Counter((m, q) for (m, q, _) in tplan.batches)

        @lru_cache(maxsize=None)
        def per_trace(k: int) -> float:
            """Tokens sampled for one realized trace of K = k reasoning tokens."""
            k = min(k, limit) if limit > 0 else k
            return n * sum(forced_tokens if forced else min(cap, k - j + answer)
                           for j in checkpoint_positions(int(k), stride))
        for model in tplan.models:
            mcfg = model_settings(model, models_cfg.get(model) or {})
            for qset, questions in tplan.questions.items():
                total, observed, traces = 0.0, 0, 0
                jobs = traj_jobs[(model, qset)]
                job = collect.jobs.get((model, qset))
                if job is None:  # no collected trace to sample: the jobs find nothing and generate nothing
                    study.rows.append(_gen_row("traj_sample", config, model, qset, mcfg, 0, jobs, 0.0, overhead,
                                               cache, gpu=bool(traj.get("gpu"))))
                    study.sources[f"traj_sample {model} x {qset}"] = "not collected: no trace to sample"
                    continue
                ccap = int(job["sampling"].get("max_tokens", 8192))
                seen = seen_by[(model, qset)]
                prior = _prior(priors, collect.questions[qset])
                fallback_k = max(0, round(sum(seen) / len(seen)) - answer) if seen else min(ccap, prior)
                folder = results / "traces" / model / qset
                for qid in questions:
                    for run in tplan.runs:
                        traces += 1
                        k = reasoning_tokens(folder / safe_id(qid) / f"{run}.json") if folder.is_dir() else None
                        observed += k is not None
                        total += per_trace(fallback_k if k is None else k)
                study.sources[f"traj_sample {model} x {qset}"] = (
                    f"K from {observed} collected trace(s)" + (f", {traces - observed} at the prior K = {fallback_k:,}"
                                                              if traces > observed else ""))
                study.rows.append(_gen_row("traj_sample", config, model, qset, mcfg, traces, jobs, total, overhead,
                                           cache, gpu=bool(traj.get("gpu"))))
    _analysis_rows(study, config, collect)
    return study


def _prior(priors: Mapping[str, int], questions) -> int:
    """The prior reasoning length of a question set: ``planning.trace_tokens_prior`` of its task."""
    task = questions[0].task if questions else "open"
    return int(priors.get(task, priors.get("open", 4000)))


def generation_models(config: Mapping[str, Any], collect: CollectionPlan) -> set[str]:
    traj = config.get("trajectories") or {}
    return set(collect.models) | (set(traj.get("models") or []) if traj.get("question_sets") else set())


def hub_models(config: Mapping[str, Any], collect: CollectionPlan) -> list[str]:
    """The models a study generates with that are named by hub id (each gets a ``fetch_model`` job)."""
    models_cfg = config.get("models") or {}
    return sorted(m for m in generation_models(config, collect) if (models_cfg.get(m) or {}).get("hub_id"))


def _gen_row(rule: str, config, model: str, qset: str, mcfg: Mapping[str, Any], units: int, jobs: int,
             tokens: float, overhead: float, cache, gpu: bool = True) -> Row:
    params_b = model_params_b(mcfg, cache)
    rate, cls = throughput(config, mcfg, params_b)
    per_job = gpus(mcfg) if gpu else 0
    hours = tokens / rate / 3600 + jobs * overhead / 3600
    return Row(rule, units=units, jobs=jobs, slurm_jobs=jobs, gpus_per_job=per_job, tokens=tokens, job_hours=hours,
               gpu_hours=hours * per_job, detail=f"{model} x {qset} ({cls}, {rate:,.0f} tok/s)")


def _analysis_rows(study: StudyPlan, config: Mapping[str, Any], collect: CollectionPlan) -> None:
    """The Thought Graph analysis of the collected units: per question shard 4 jobs (trace unit, segment,
    graph, metrics), grouped into one SLURM job per ``resources.batch_questions`` questions (group
    ``analysis``). Imported inputs are not read here (they cost no generation)."""
    size = int((config.get("resources") or {}).get("batch_questions", 10))
    for qset in collect.question_sets:
        qids = len(collect.questions[qset])
        units = sum(1 for u in collect.units if u.question_set == qset)
        study.rows.append(Row("analysis", units=units, jobs=qids * 3 + units + math.ceil(qids / size),
                              slurm_jobs=math.ceil(qids / size), detail=f"(all models) x {qset}"))


def study_config(configfiles: list[str | Path], base: str | Path = ".") -> dict[str, Any]:
    """The config Snakemake would use: ``config/config.yaml`` of ``base`` (else of this checkout), each
    ``--configfile`` merged over it recursively (Snakemake's rule), validated with the schema's defaults."""
    import yaml

    from ..config import load_schema, validate_config

    base = Path(base)
    root = base if (base / "config" / "config.yaml").is_file() else Path(__file__).resolve().parents[2]
    config: dict[str, Any] = yaml.safe_load((root / "config" / "config.yaml").read_text(encoding="utf-8")) or {}
    for path in configfiles:
        with open(path, encoding="utf-8") as fh:
            _merge(config, yaml.safe_load(fh) or {})
    schema_root = root if (root / "config" / "schema.yaml").is_file() else Path(__file__).resolve().parents[2]
    config = validate_config(config, load_schema(schema_root / "config" / "schema.yaml"),
                             ", ".join(str(p) for p in configfiles) or "config/config.yaml")
    from .datasets import prepare_study

    prepare_study(config, list(configfiles), base)  # hub question sets: read from the cache, at the locked commit
    return config


def _merge(into: dict[str, Any], new: Mapping[str, Any]) -> None:
    for key, value in new.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
