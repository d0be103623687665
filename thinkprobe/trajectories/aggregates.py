"""Trace rows and study tables of answer-distribution trajectories (paper section 5, App. B).

Pure functions over records and pandas tables; the rule scripts write them as Parquet under
``results/trajectories/`` and ``results/tables/``. The paper describes its aggregations in words only; our
readings, stated per function, are collected in docs/trajectories.md ("Definitions").

Undefined metric values (None, stored as NaN) are left out of every mean and variance, as the paper does.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from thinkprobe.trajectories.distributions import (
    _trace_name,
    dominant_set,
    entropy,
    state_from_labels,
    trajectory_record_to_states,
)
from thinkprobe.trajectories.dynamics import SCALAR_METRICS, dynamics
from thinkprobe.trajectories.labelling import trajectory_incomplete
from thinkprobe.trajectories.mechanisms import MECHANISMS, mechanism
from thinkprobe.trajectories.parsing import TASKS, parse_answer

ID_COLUMNS = ("model", "question_set", "question_id", "run", "task")

PROFILE_METRICS = ("s_eff", "switches", "recurrence", "path_length", "motion_concentration", "r_direct",
                   "t_commit")


# ---------------------------------------------------------------- one trace

def _ordered_checkpoints(record: Mapping) -> list[Mapping]:
    return sorted((c for c in record.get("checkpoints") or [] if c.get("labels")),
                  key=lambda c: c["checkpoint_index"])


def trace_summary(record: Mapping, tau: float = 0.8, support: str = "exp_entropy") -> dict:
    """One flat row per trace record: ids, outcome, mechanism and every scalar trajectory metric.

    Parameters
    ----------
    record : mapping
        A trace record (schema in :mod:`thinkprobe.trajectories`); checkpoint labels already canonical.
        ``gold`` and ``endpoint_label`` are passed through :func:`parse_answer` for the record's task
        (a no-op on canonical labels, which parse to themselves; a raw gold such as ``\\dfrac12`` or
        ``1,018`` becomes its label).
    tau : float
        Commitment threshold.
    support : str
        Effective-support definition (see :func:`thinkprobe.trajectories.dynamics.dynamics`).

    Returns
    -------
    dict
        The id columns (``model``, ``question_set``, ``question_id``, ``run``, ``task``), every other
        scalar top-level field of the record (e.g. ``temperature``, ``status``; computed columns win), ``gold``,
        ``endpoint_label``, ``endpoint_prediction`` (dominant label of p_K; ties joined by ``|`` in sorted
        order, the null label written ``<null>``), ``correct`` (endpoint_label == gold; None without gold),
        ``gold_dominant`` (list of bool; None without gold), ``mechanism`` (None without gold),
        ``cot_tokens`` (K: prefix tokens of the last checkpoint), ``n_samples`` (N of the first
        checkpoint), ``n_checkpoints`` (with labels), ``n_checkpoints_skipped``, ``t_commit_frac`` (t_commit / K; 0 when K = 0), and the
        scalars of :func:`dynamics` (``t_commit`` in prefix tokens); ``incomplete`` (the last labelled
        checkpoint is not K: the :data:`K_DEPENDENT` measures are None, ``cot_tokens`` stays K and
        ``cot_tokens_sampled`` is the last sampled position); ``n_continuations`` and the sums of the
        checkpoints' ``n_cut_budget``, ``n_cut_context``, ``n_cut_labelled`` and ``n_null``.

        An incomplete trajectory (:func:`~thinkprobe.trajectories.labelling.trajectory_incomplete`: no
        labelled final checkpoint) keeps its ids, outcome (``correct`` is the realized trace's own answer),
        ``gold_dominant`` over the checkpoints sampled, counts and ``cot_tokens``; every measure of
        :data:`K_DEPENDENT` is None.

    Raises
    ------
    ValueError
        When no checkpoint has labels (message names the trace).
    """
    states = trajectory_record_to_states(record)
    checkpoints = _ordered_checkpoints(record)
    positions = [c.get("prefix_tokens", c["checkpoint_index"]) for c in checkpoints]
    dyn = dynamics(states, tau=tau, positions=positions, support=support)
    k_realized = record.get("cot_tokens_realized")
    incomplete = trajectory_incomplete(record)
    gold, endpoint = _canonical(record, "gold"), _canonical(record, "endpoint_label")
    row: dict[str, Any] = {k: record.get(k) for k in ID_COLUMNS}
    for key, value in record.items():
        if key not in row and key != "checkpoints" and (value is None or isinstance(value, (str, int, float, bool))):
            row[key] = value
    row["gold"] = gold
    row["endpoint_label"] = endpoint
    row["endpoint_prediction"] = _label_text(dominant_set(states[-1]))
    if gold is None:
        row["correct"] = None
        row["gold_dominant"] = None
        row["mechanism"] = None
    else:
        g = [gold in dominant_set(p) for p in states]
        row["correct"] = endpoint is not None and endpoint == gold
        row["gold_dominant"] = g
        row["mechanism"] = mechanism(g, row["correct"])
    cot = k_realized if (incomplete and k_realized is not None) else positions[-1]
    row["cot_tokens"] = cot
    row["cot_tokens_sampled"] = positions[-1]
    row["incomplete"] = incomplete
    row["n_samples"] = len(checkpoints[0]["labels"])
    row["n_checkpoints"] = len(checkpoints)
    row["n_checkpoints_skipped"] = len(record.get("checkpoints") or []) - len(checkpoints)
    for key in SCALAR_METRICS:
        row[key] = dyn[key]
    row["t_commit_index"] = dyn["t_commit_index"]
    row["committed_answer"] = dyn["committed_answer"]
    row["t_commit_frac"] = (None if dyn["t_commit"] is None else (dyn["t_commit"] / cot if cot else 0.0))
    if incomplete:  # the states stop before p_K: nothing read at the end or accumulated over K is defined
        for key in K_DEPENDENT:
            row[key] = None
    for key in CUT_COUNTS:
        row[key] = sum(int(c.get(key) or 0) for c in record.get("checkpoints") or [])
    row["n_continuations"] = sum(len(c.get("labels") or []) for c in record.get("checkpoints") or [])
    return row


#: Measures that read p_K, the state at the final checkpoint, or accumulate over the whole trajectory (every
#: scalar of :func:`dynamics`: S_eff and entropy means, switches, recurrence, dominant answers, path length,
#: motion, R_direct, commitment), the mechanism and the endpoint prediction: undefined for an
#: ``incomplete`` trajectory (its states stop before K: the context ended, or a reduced cap cut it), whose
#: sums and means over a cut-short range would be biased by where the cut fell.
K_DEPENDENT = (*SCALAR_METRICS, "t_commit_index", "t_commit_frac", "committed_answer", "mechanism",
               "endpoint_prediction")
#: Per-checkpoint counts of the trajectory records (``label_document``), summed per trace.
CUT_COUNTS = ("n_cut_budget", "n_cut_context", "n_cut_labelled", "n_null")


def _canonical(record: Mapping, key: str) -> str | None:
    value = record.get(key)
    return parse_answer(value, record["task"]) if record.get("task") in TASKS else value


def _label_text(labels: Iterable) -> str:
    return "|".join(sorted("<null>" if a is None else str(a) for a in labels))


def trace_table(records: Iterable[Mapping], tau: float = 0.8, support: str = "exp_entropy"
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-trace table and an exclusions table: a record whose ``status`` is not ``ok`` keeps its own
    stage and reason, a record that cannot be summarised is excluded with the reason; the others go on."""
    rows, excluded = [], []
    for record in records:
        for c in record.get("checkpoints") or []:
            if c.get("status") not in (None, "ok"):
                excluded.append({**{k: record.get(k) for k in ID_COLUMNS}, "stage": "trajectory_checkpoint",
                                 "checkpoint_index": c.get("checkpoint_index"), "prefix_tokens": c.get("prefix_tokens"),
                                 "reason": f"trace {_trace_name(record)}: checkpoint {c.get('checkpoint_index')} "
                                           f"({c.get('prefix_tokens')} reasoning tokens) {c.get('status')}: "
                                           f"{c.get('reason') or 'no reason recorded'}"})
        if record.get("status") not in (None, "ok"):
            excluded.append({**{k: record.get(k) for k in ID_COLUMNS}, "stage": record.get("stage") or "sampling",
                             "reason": f"trace {_trace_name(record)}: {record.get('status')}: "
                                       f"{record.get('reason') or 'no reason recorded'}"})
            continue
        try:
            rows.append(trace_summary(record, tau=tau, support=support))
        except (ValueError, KeyError, TypeError) as err:
            excluded.append({**{k: record.get(k) for k in ID_COLUMNS}, "stage": "trajectory_summary",
                             "reason": f"trace {_trace_name(record)}: {err}"})
    table = pd.DataFrame(rows)
    return table, pd.DataFrame(excluded, columns=[*ID_COLUMNS, "stage", "checkpoint_index", "prefix_tokens", "reason"])


# ---------------------------------------------------------------- conditions (model x task)

def _numeric(table: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    return table[list(metrics)].apply(pd.to_numeric, errors="coerce")


def condition_table(traces: pd.DataFrame, by: Sequence[str] = ("model", "task"),
                    metrics: Sequence[str] = PROFILE_METRICS) -> pd.DataFrame:
    """Per condition: number of traces, accuracy (mean of ``correct`` over traces with a gold answer),
    mean CoT length, the mean of every metric (undefined values skipped, with the count of defined
    ones as ``n_<metric>``) and the share of each mechanism among the ``n_mechanism`` traces with a
    mechanism (NaN for a condition without gold answers); ``n_incomplete`` (trajectories without their
    final checkpoint) and ``n_complete``: the metric means and mechanism shares average complete
    trajectories only (an incomplete one has no :data:`K_DEPENDENT` measure), so ``n_complete`` is how many
    they can average (``n_<metric>`` <= ``n_complete``), while ``n_traces``, ``accuracy`` and ``cot_tokens``
    count every trace; and over all continuations the shares cut by the budget (``share_cut_budget``), by
    the context (``share_cut_context``), either (``share_cut``), cut yet labelled from a complete answer
    statement (``share_cut_labelled``), and labelled null (``share_null``: no parsable answer, whatever the
    reason)."""
    by = list(by)
    frame = traces.copy()
    frame[list(metrics)] = _numeric(frame, metrics)
    frame["correct_num"] = pd.to_numeric(frame["correct"].map(lambda v: np.nan if v is None else float(v)))
    groups = frame.groupby(by, sort=True, dropna=False)
    out = groups.size().rename("n_traces").to_frame()
    out["accuracy"] = groups["correct_num"].mean()
    out["cot_tokens"] = groups["cot_tokens"].mean()
    for m in metrics:
        out[m] = groups[m].mean()
        out[f"n_{m}"] = groups[m].count()
    with_mech = frame[frame["mechanism"].notna()]
    shares = pd.crosstab([with_mech[c] for c in by], with_mech["mechanism"], normalize="index")
    for name in MECHANISMS:
        out[f"share_{name}"] = shares[name] if name in shares else 0.0
    out["n_mechanism"] = groups["mechanism"].count()
    if "incomplete" in frame:
        frame["incomplete"] = frame["incomplete"].fillna(False).astype(bool)
        out["n_incomplete"] = groups["incomplete"].sum().astype(int)
        out["n_complete"] = out["n_traces"] - out["n_incomplete"]
    if "n_continuations" in frame:
        total = groups["n_continuations"].sum()
        cut = groups["n_cut_budget"].sum() + groups["n_cut_context"].sum()
        out["n_continuations"] = total
        out["share_cut_budget"] = groups["n_cut_budget"].sum() / total.where(total > 0)
        out["share_cut_context"] = groups["n_cut_context"].sum() / total.where(total > 0)
        out["share_cut"] = cut / total.where(total > 0)
        if "n_cut_labelled" in frame:
            out["share_cut_labelled"] = groups["n_cut_labelled"].sum() / total.where(total > 0)
        out["share_null"] = groups["n_null"].sum() / total.where(total > 0)
    share_cols = [f"share_{n}" for n in MECHANISMS]
    has = out["n_mechanism"] > 0
    out.loc[has, share_cols] = out.loc[has, share_cols].fillna(0.0)
    out.loc[~has, share_cols] = np.nan
    return out.reset_index()


def variance_decomposition(traces: pd.DataFrame, by: Sequence[str] = ("model", "task"),
                           metrics: Sequence[str] = PROFILE_METRICS) -> pd.DataFrame:
    """Within- vs between-condition variance of each metric over traces (law of total variance).

    With traces i in conditions c (n_c defined values, n in all), population variances (ddof 0):
    ``total`` = Var(x); ``within`` = sum_c (n_c / n) Var_c(x); ``between`` = sum_c (n_c / n) (mean_c - mean)^2;
    total = within + between exactly; ``within_share`` = within / total (None for total = 0).
    """
    rows = []
    values = _numeric(traces, metrics)
    keys = [traces[c] for c in by]
    for m in metrics:
        x = values[m]
        ok = x.notna()
        x = x[ok]
        n = len(x)
        if n == 0:
            rows.append({"metric": m, "n": 0, "total": None, "within": None, "between": None,
                         "within_share": None})
            continue
        grouped = x.groupby([k[ok] for k in keys], dropna=False)
        weights = grouped.size() / n
        total = float(x.var(ddof=0))
        within = float((weights * grouped.var(ddof=0)).sum())
        between = float((weights * (grouped.mean() - x.mean()) ** 2).sum())
        rows.append({"metric": m, "n": n, "total": total, "within": within, "between": between,
                     "within_share": within / total if total > 0 else None})
    return pd.DataFrame(rows)


def _zscore_within(frame: pd.DataFrame, column: str, within: str) -> pd.Series:
    grouped = frame.groupby(within)[column]
    std = grouped.transform(lambda s: s.std(ddof=1))
    return (frame[column] - grouped.transform("mean")) / std.where(std > 0)


def group_profiles(conditions: pd.DataFrame, metrics: Sequence[str] = PROFILE_METRICS,
                   fraction: float = 0.25, task_column: str = "task") -> tuple[pd.DataFrame, pd.DataFrame]:
    """The paper's groups of model-task pairs and their standardized metric profiles (App. B).

    Every pair's accuracy, CoT length and metric means are z-scored within its task across the models
    (mean and ddof-1 standard deviation of the pairs of that task; a task with one pair or no spread gives
    NaN). Groups: ``all``; ``high_accuracy`` = the ceil(fraction * n_pairs) pairs with the largest
    within-task standardized accuracy; ``shortest_cot`` = the ceil(fraction * n_pairs) pairs with the
    smallest within-task standardized mean CoT length (ties broken by model, then task name). A group's
    profile is the mean of its pairs' standardized metrics; ``accuracy`` and ``cot_tokens`` stay raw
    (unstandardized means), as in the paper.

    Returns
    -------
    (profiles, members)
        One row per group (``group``, ``n_pairs``, the metrics, ``accuracy``, ``cot_tokens``), and the
        pairs of each group with their standardized values.
    """
    frame = conditions.copy()
    z = pd.DataFrame(index=frame.index)
    for col in [*metrics, "accuracy", "cot_tokens"]:
        z[col] = _zscore_within(frame, col, task_column)
    n_sel = max(1, math.ceil(fraction * len(frame)))
    keys = [c for c in ("model", task_column) if c in frame.columns]
    order = frame[keys].assign(_acc=z["accuracy"], _len=z["cot_tokens"])
    high = order.sort_values(["_acc", *keys], ascending=[False] + [True] * len(keys),
                             na_position="last").index[:n_sel]
    short = order.sort_values(["_len", *keys], na_position="last").index[:n_sel]
    members, profiles = [], []
    for name, index in (("all", frame.index), ("high_accuracy", high), ("shortest_cot", short)):
        row = {"group": name, "n_pairs": len(index)}
        for m in metrics:
            row[m] = float(z.loc[index, m].mean())
        row["accuracy"] = float(frame.loc[index, "accuracy"].mean())
        row["cot_tokens"] = float(frame.loc[index, "cot_tokens"].mean())
        profiles.append(row)
        part = frame.loc[index, keys].copy()
        part["group"] = name
        for m in [*metrics, "accuracy", "cot_tokens"]:
            part[f"z_{m}"] = z.loc[index, m]
        members.append(part)
    return pd.DataFrame(profiles), pd.concat(members, ignore_index=True)


# ---------------------------------------------------------------- matched comparisons

def t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float, int]:
    """(mean, low, high, n): two-sided Student-t interval mean +- t_{(1+conf)/2, n-1} s / sqrt(n)
    (s with ddof 1); low = high = NaN for n < 2. NaN values are dropped."""
    from scipy import stats

    x = np.asarray([v for v in values if v is not None and not np.isnan(v)], dtype=float)
    n = len(x)
    if n == 0:
        return float("nan"), float("nan"), float("nan"), 0
    mean = float(x.mean())
    if n < 2:
        return mean, float("nan"), float("nan"), n
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return mean, mean - half, mean + half, n


def _select(frame: pd.DataFrame, selector: Mapping[str, Any]) -> pd.DataFrame:
    mask = pd.Series(True, index=frame.index)
    for col, value in selector.items():
        mask &= frame[col] == value
    return frame[mask]


def matched_comparisons(traces: pd.DataFrame, comparisons: Sequence[Mapping],
                        metrics: Sequence[str] = PROFILE_METRICS, default: Mapping[str, Any] | None = None,
                        confidence: float = 0.95, task_column: str = "task"
                        ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Standardized changes of matched comparisons (instruction tuning, scale, temperature; App. B).

    Parameters
    ----------
    traces : DataFrame
        Trace rows (``trace_summary``) with the columns the selectors name (e.g. ``model``,
        ``temperature``) and ``task``.
    comparisons : sequence of mappings
        Each ``{"name": str, "tasks": [task, ...] (optional: all), "pairs": [{"reference": {col: value},
        "treatment": {col: value}}, ...]}``, e.g. instruction tuning with ``reference: {model: base}``,
        ``treatment: {model: instruct}``; temperature with ``{model: m, temperature: 0.2}`` vs
        ``{model: m, temperature: 1.0}``.
    default : mapping, optional
        Selector of the default-decoding traces (e.g. ``{"temperature": 0.6}``); None = all traces.
    confidence : float
        Two-sided confidence level of the Student-t intervals (paper: 0.95).

    Returns
    -------
    (summary, units)
        ``units``: one row per comparison x pair x metric: the raw change per task averaged over tasks
        (``change``) after dividing each task's change by that task's default-decoding standard deviation
        of the metric across traces (ddof 1): change_{pair,task} = (mean_treat - mean_ref) / sd_default,task;
        ``change`` = mean over the pair's tasks with both sides present. Accuracy is included as metric
        ``accuracy``. ``summary``: per comparison x metric the mean over pairs, the t interval and n.
    """
    frame = traces.copy()
    metric_cols = [*metrics, "accuracy"]
    frame["accuracy"] = frame["correct"].map(lambda v: np.nan if v is None else float(v))
    frame[list(metrics)] = _numeric(frame, metrics)
    base = frame if default is None else _select(frame, default)
    sd = base.groupby(task_column)[metric_cols].std(ddof=1)
    units = []
    for comp in comparisons:
        tasks = comp.get("tasks") or sorted(frame[task_column].dropna().unique())
        for i, pair in enumerate(comp["pairs"]):
            ref_all, treat_all = _select(frame, pair["reference"]), _select(frame, pair["treatment"])
            label = pair.get("label") or f"{_selector_text(pair['reference'])} -> {_selector_text(pair['treatment'])}"
            for m in metric_cols:
                per_task = []
                for task in tasks:
                    r = ref_all.loc[ref_all[task_column] == task, m].dropna()
                    t = treat_all.loc[treat_all[task_column] == task, m].dropna()
                    s = sd.loc[task, m] if task in sd.index else np.nan
                    if len(r) and len(t) and s > 0:
                        per_task.append((t.mean() - r.mean()) / s)
                units.append({"comparison": comp["name"], "pair": label, "pair_index": i, "metric": m,
                              "n_tasks": len(per_task),
                              "change": float(np.mean(per_task)) if per_task else np.nan})
    units_df = pd.DataFrame(units, columns=["comparison", "pair", "pair_index", "metric", "n_tasks", "change"])
    summary = []
    for (name, m), part in units_df.groupby(["comparison", "metric"], sort=False):
        mean, low, high, n = t_interval(part["change"].tolist(), confidence)
        summary.append({"comparison": name, "metric": m, "n": n, "mean": mean, "ci_low": low,
                        "ci_high": high, "confidence": confidence})
    return pd.DataFrame(summary), units_df


def _selector_text(selector: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in selector.items())


# ---------------------------------------------------------------- cross-model disagreement

def _grid_states(record: Mapping, grid: int) -> list[dict | None]:
    """The state at each relative grid position; None where no labelled checkpoint lies at or before it
    (e.g. checkpoint 0 could not be sampled): such a position is skipped and counted, never an error."""
    checkpoints = _ordered_checkpoints(record)
    states = [state_from_labels(c["labels"]) for c in checkpoints]
    pos = [c.get("prefix_tokens", c["checkpoint_index"]) for c in checkpoints]
    k = pos[-1]
    out: list[dict | None] = []
    for j in range(grid):
        target = k * j / (grid - 1) if grid > 1 else k
        before = [i for i, p in enumerate(pos) if p <= target + 1e-9]
        out.append(states[before[-1]] if before else None)
    return out


def _outcome(record: Mapping) -> dict:
    gold, endpoint = _canonical(record, "gold"), _canonical(record, "endpoint_label")
    if gold is None:
        return {"correct": None, "mechanism": None}
    g = [gold in dominant_set(state_from_labels(c["labels"])) for c in _ordered_checkpoints(record)]
    correct = endpoint is not None and endpoint == gold
    return {"correct": correct, "mechanism": mechanism(g, correct)}


def disagreement(records: Sequence[Mapping], grid: int = 11,
                 item_keys: Sequence[str] = ("task", "question_id", "run")) -> pd.DataFrame:
    """Cross-model disagreement on the same items (paper section 5.1, App. B "Trace disagreement").

    Traces of two models on the same item (task, question, run index) have different lengths, so both
    are read on a common grid of ``grid`` relative positions q = 0, 1/(grid-1), ..., 1 of their own
    reasoning: the state at q is that of the last checkpoint with prefix_tokens <= q K. Per model pair
    and item: ``dominant_disagreement`` = share of grid points where the dominant sets differ;
    ``gold_dominance_disagreement`` = share of grid points where gold dominance differs (items with a gold
    answer); ``entropy_gap`` = mean |H_a(q) - H_b(q)| (nats), to show that similar entropy profiles can
    hide different hypotheses; ``mechanism_disagreement`` = 1 if the mechanisms differ, only when both
    endpoints have the same correctness (matched realized outcomes), else None.

    A grid position before the first labelled checkpoint of either trace (checkpoint 0 not sampled) is
    skipped and counted (``n_positions_skipped``; ``n_positions`` compared); an ``incomplete`` trace
    (without its final checkpoint, so its relative positions are not those of its reasoning) is left out.

    Returns one row per (model_a, model_b, item).
    """
    by_item: dict[tuple, dict[str, Mapping]] = {}
    for rec in records:
        if not _ordered_checkpoints(rec) or trajectory_incomplete(rec):
            continue
        by_item.setdefault(tuple(rec.get(k) for k in item_keys), {})[rec["model"]] = rec
    summaries = {id(rec): _outcome(rec) for models in by_item.values() for rec in models.values()}
    rows = []
    for item, models in sorted(by_item.items(), key=lambda kv: tuple(map(str, kv[0]))):
        for a, b in combinations(sorted(models), 2):
            ra, rb = models[a], models[b]
            both = [(p, q) for p, q in zip(_grid_states(ra, grid), _grid_states(rb, grid))
                    if p is not None and q is not None]
            row = {"model_a": a, "model_b": b, **dict(zip(item_keys, item)), "n_positions": len(both),
                   "n_positions_skipped": grid - len(both), "dominant_disagreement": None, "entropy_gap": None,
                   "gold_dominance_disagreement": None, "mechanism_disagreement": None}
            if not both:
                rows.append(row)
                continue
            sa, sb = [p for p, _ in both], [q for _, q in both]
            da, db = [dominant_set(p) for p in sa], [dominant_set(p) for p in sb]
            row["dominant_disagreement"] = float(np.mean([x != y for x, y in zip(da, db)]))
            row["entropy_gap"] = float(np.mean([abs(entropy(p) - entropy(q)) for p, q in zip(sa, sb)]))
            gold = _canonical(ra, "gold")
            if gold is not None and _canonical(rb, "gold") == gold:
                row["gold_dominance_disagreement"] = float(np.mean([(gold in x) != (gold in y)
                                                                    for x, y in zip(da, db)]))
                sum_a, sum_b = summaries[id(ra)], summaries[id(rb)]
                if sum_a["correct"] == sum_b["correct"]:
                    row["mechanism_disagreement"] = float(sum_a["mechanism"] != sum_b["mechanism"])
            rows.append(row)
    return pd.DataFrame(rows)


def disagreement_by_pair(table: pd.DataFrame) -> pd.DataFrame:
    """Mean of each disagreement column per model pair (None values skipped) with item counts."""
    cols = ["dominant_disagreement", "gold_dominance_disagreement", "mechanism_disagreement", "entropy_gap"]
    frame = table.copy()
    frame[cols] = frame[cols].apply(pd.to_numeric, errors="coerce")
    grouped = frame.groupby(["model_a", "model_b"])
    out = grouped[cols].mean()
    out["n_items"] = grouped.size()
    out["n_matched_outcomes"] = grouped["mechanism_disagreement"].count()
    return out.reset_index()
