"""The claim register (``thinkprobe/data/claims.yaml``, issue 35): every quantitative or directional sentence of the
paper's abstract, results sections and appendices, and the computation of every testable one.

The register is data: each row quotes one whole sentence with its section, says whether a corpus like the
corpus study can test it (and why not), and lists the sentence's criteria, each with the ``words`` of the
sentence it comes from, a check of :data:`CHECKS`, an operator and the paper's own number. This module loads
and validates it (:func:`load_register`), computes each criterion on the per-trace tables with an interval
over prompts (:func:`register_rows`), and gives each sentence its verdict: replicates when every criterion
replicates, does not replicate when one does not, else inconclusive. A criterion true by construction is an
``identity``: shown, never counted, never given a p-value (a two-metric dimension under PCA weights is one,
found per dimension by :func:`ranking_identities`).

Intervals are bias-corrected and accelerated (BCa, Efron 1987) over prompts: the percentile interval of a
bounded statistic like epsilon^2 is biased upward when the statistic is small (its resamples pile up above
the estimate); BCa corrects the bias (z0, from the share of resamples below the estimate) and the skew (the
acceleration, from the prompt jackknife). A check on a test (a count of p-values below a threshold) has no
interval: its point decides.

The register's sha256 enters the claims table's code hash (:mod:`thinkprobe.study.snapshot`), so a criterion
edited after a snapshot makes its claims table stale.

The register is package data (pyproject's package-data ships it with the package): the package reads its own,
in a checkout as installed, never a file of the checkout beside it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..profile import dimension_map
from ..vocabulary import LENGTH_METRICS, METRIC_NAMES

REGISTER = "thinkprobe/data/claims.yaml"  # relative to the folder that holds the package (a checkout's root)
OPS = (">", ">=", "<", "<=", "near")
REPLICATES, FAILS, INCONCLUSIVE, MISSING = "replicates", "does not replicate", "inconclusive", "not computed"
_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds this package


# ------------------------------------------------------------------------------------------------ the file

def register_path(root: str | Path | None = None) -> Path:
    """The register of the package under ``root`` (None: this package's own)."""
    return Path(root or _ROOT) / REGISTER


def register_digest(root: str | Path | None = None) -> str:
    """sha256 of the register file's bytes (what the snapshot records and the claims table's hash includes)."""
    return hashlib.sha256(register_path(root).read_bytes()).hexdigest()


def register_commit(root: str | Path | None = None) -> str:
    """The last commit that changed the register (``unknown`` outside a git checkout)."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%h", "--", REGISTER], capture_output=True, text=True,
                             check=True, cwd=root or _ROOT, timeout=30).stdout.strip()
        return out or "uncommitted"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def load_register(root: str | Path | None = None, identities=None) -> list[dict[str, Any]]:
    """The register's rows, validated: unique ids, a quote and a section each; a testable row has criteria,
    each criterion's ``words`` inside its quote, a known check or identity (of ``identities``, the keys of
    :data:`.claims.IDENTITIES`, when given) and a known operator; an untestable row says why."""
    import yaml

    path = register_path(root)
    rows = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("claims") or []
    seen: set[str] = set()
    for i, r in enumerate(rows):
        where = f"{path.name}: claims[{i}] ({r.get('id', '?')})"
        for key in ("id", "section", "quote", "testable"):
            if key not in r:
                raise ValueError(f"{where}: no {key!r}")
        if r["id"] in seen:
            raise ValueError(f"{where}: id {r['id']!r} appears twice")
        seen.add(r["id"])
        if not r["testable"]:
            if not r.get("why"):
                raise ValueError(f"{where}: an untestable claim says why")
            continue
        if not r.get("criteria"):
            raise ValueError(f"{where}: a testable claim has criteria")
        for c in r["criteria"] + (r.get("untested") or []):
            if c["words"] not in r["quote"]:
                raise ValueError(f"{where}: the words {c['words']!r} are not in its quote")
        for c in r["criteria"]:
            if "identity" in c:
                if identities is not None and c["identity"] != "by_construction" and c["identity"] not in identities:
                    raise ValueError(f"{where}: unknown identity {c['identity']!r}; known: {sorted(identities)} "
                                     "or by_construction")
                if c["identity"] == "by_construction" and not c.get("why"):
                    raise ValueError(f"{where}: an identity by construction says why")
                continue
            if c.get("check") not in CHECKS:
                raise ValueError(f"{where}: unknown check {c.get('check')!r}; known: {sorted(CHECKS)}")
            if c.get("op") not in OPS:
                raise ValueError(f"{where}: unknown op {c.get('op')!r}; known: {list(OPS)}")
            if c["op"] == "near" and "tol" not in c:
                raise ValueError(f"{where}: op near needs tol")
    for r in rows:
        for c in r.get("criteria") or []:
            if "value_from" in c and c["value_from"] not in seen:
                raise ValueError(f"{path.name}: {r['id']}: value_from names no claim: {c['value_from']!r}")
    return rows


# ------------------------------------------------------------------------------------------ the intervals

def bca_interval(boot: np.ndarray, est: float, jack: np.ndarray, level: float) -> tuple[float, float]:
    """The BCa interval of ``boot`` (resample values) around ``est`` with jackknife values ``jack``.

    Falls back to the percentile interval when the bias correction is undefined (every resample on one side
    of the estimate) or so extreme that both adjusted quantiles fall on one side of the estimate, and returns
    ``[est, est]`` for a constant statistic.

    >>> rng = np.random.default_rng(0); x = rng.normal(size=200)
    >>> b = np.array([x[rng.integers(0, 200, 200)].mean() for _ in range(2000)])
    >>> j = np.array([np.delete(x, i).mean() for i in range(200)])
    >>> lo, hi = bca_interval(b, x.mean(), j, 0.95); bool(lo < x.mean() < hi)
    True
    """
    from scipy.stats import norm

    from .bootstrap import percentile_interval

    b = np.asarray(boot, dtype=float)
    b = b[np.isfinite(b)]
    if b.size == 0 or not np.isfinite(est):
        return float("nan"), float("nan")
    if np.ptp(b) == 0 and b[0] == est:
        return float(est), float(est)
    share = (np.sum(b < est) + 0.5 * np.sum(b == est)) / b.size
    if share <= 0 or share >= 1:
        return percentile_interval(b, level)
    z0 = norm.ppf(share)
    j = np.asarray(jack, dtype=float)
    j = j[np.isfinite(j)]
    d = j.mean() - j if j.size else np.zeros(1)
    den = 6.0 * (np.sum(d ** 2) ** 1.5)
    a = float(np.sum(d ** 3) / den) if den > 0 else 0.0
    alpha = (1.0 - level) / 2.0
    out = []
    for q in (alpha, 1.0 - alpha):
        zq = norm.ppf(q)
        out.append(float(np.quantile(b, norm.cdf(z0 + (z0 + zq) / (1.0 - a * (z0 + zq))))))
    if not out[0] <= est <= out[1]:  # an extreme bias correction pushed both ends past the estimate
        return percentile_interval(b, level)
    return out[0], out[1]


def jackknife_samples(clusters: pd.Series) -> list[np.ndarray]:
    """Row indices with one prompt (cluster) left out, for every prompt."""
    codes, _ = pd.factorize(clusters.astype(str), sort=True)
    return [np.flatnonzero(codes != c) for c in range(int(codes.max()) + 1)] if len(codes) else []


def verdict(op: str, value: float, lo: float, hi: float, tol: float | None = None) -> str:
    """The verdict of an interval ``[lo, hi]`` against ``op value`` (``near``: within ``tol`` of it).

    >>> verdict(">", 0, 0.1, 0.2), verdict(">", 0, -0.1, 0.2), verdict("<", 0.2, 0.3, 0.4)
    ('replicates', 'inconclusive', 'does not replicate')
    >>> verdict("near", -0.84, -0.88, -0.80, 0.1), verdict("near", 0.9, 0.5, 0.7, 0.1)
    ('replicates', 'does not replicate')
    """
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return MISSING
    if op == "near":
        a, b = value - tol, value + tol
        if a <= lo and hi <= b:
            return REPLICATES
        return FAILS if hi < a or lo > b else INCONCLUSIVE
    meets = {">": lambda x: x > value, ">=": lambda x: x >= value, "<": lambda x: x < value,
             "<=": lambda x: x <= value}[op]
    if meets(lo) and meets(hi):
        return REPLICATES
    if not meets(lo) and not meets(hi):
        return FAILS
    return INCONCLUSIVE


def sentence_verdict(verdicts: list[str]) -> str:
    """Every criterion replicates -> replicates; one does not -> does not; else inconclusive (or not computed).

    >>> sentence_verdict(["replicates", "does not replicate"]), sentence_verdict(["replicates", "inconclusive"])
    ('does not replicate', 'inconclusive')
    """
    if not verdicts:
        return MISSING
    if FAILS in verdicts:
        return FAILS
    if all(v == REPLICATES for v in verdicts):
        return REPLICATES
    return MISSING if all(v == MISSING for v in verdicts) else INCONCLUSIVE


def ranking_identities(dimensions=None) -> dict[str, str]:
    """Dimensions whose equal-vs-PCA ranking rho is 1 by construction: two metrics (the first principal
    component of two standardised variables weights them equally, +-1/sqrt 2, so the PCA score is the
    equal-weight score times a constant) or one."""
    out = {}
    for d, members in dimension_map(dimensions).items():
        if len(members) <= 2:
            out[d] = (f"{d} has {len(members)} metric{'s' if len(members) > 1 else ''} ({', '.join(members)}): PCA "
                      "weights equal weights, so rho = 1 by construction")
    return out


# ------------------------------------------------------------------------------------------- the data

def prompt_keys(table: pd.DataFrame) -> pd.Series:
    """One prompt key per row (question set and question id), the bootstrap's cluster."""
    qid = table["question_id"].astype(str) if "question_id" in table else table["trace_id"].astype(str)
    return (table["question_set"].astype(str) + "\x1f" + qid) if "question_set" in table else qid


def _cycle_arrays(cycles: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    full = cycles[cycles["subgraph"] == "full"].reset_index(drop=True)
    width = max((len(c) for c in full["length_counts"] if c is not None), default=0)
    hist = np.zeros((len(full), width), dtype=np.int64)
    for i, c in enumerate(full["length_counts"]):
        if c is not None and len(c):
            hist[i, :len(c)] = np.asarray(list(c), dtype=np.int64)
    return full, hist


def _ablation_wide(ablation_traces: pd.DataFrame, metrics: pd.DataFrame | None) -> pd.DataFrame:
    """One row per trace analysed under every layer setting: ``CBC_l3 ... GD_full`` and its prompt key."""
    a = ablation_traces
    wide = a.pivot_table(index="trace_id", columns="layers", values=["CBC", "GD"], aggfunc="first")
    wide.columns = [f"{m}_{s}" for m, s in wide.columns]
    wide = wide.dropna().reset_index()
    if metrics is not None and {"trace_id", "question_id"} <= set(metrics.columns):
        keys = prompt_keys(metrics)
        keys.index = metrics["trace_id"].astype(str)
        wide["prompt"] = wide["trace_id"].astype(str).map(keys).fillna(wide["trace_id"].astype(str))
    else:
        qid = a.drop_duplicates("trace_id").set_index("trace_id")["question_id"].astype(str)
        wide["prompt"] = wide["trace_id"].map(qid)
    return wide


def kw_epsilon2(ranks: np.ndarray, ties: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Kruskal-Wallis epsilon^2 = H / (n - 1) of every column of ``ranks`` (tie terms ``ties``) grouped by
    ``codes``: :func:`.bootstrap.epsilon2` for many columns at once (0 for a constant column, NaN with fewer
    than two groups)."""
    n = ranks.shape[0]
    groups, g = np.unique(codes, return_inverse=True)
    k = len(groups)
    if n < 3 or k < 2:
        return np.full(ranks.shape[1], np.nan)
    onehot = np.zeros((n, k))
    onehot[np.arange(n), g] = 1.0
    sums = onehot.T @ ranks
    sizes = onehot.sum(axis=0)
    c = 1.0 - ties / (n ** 3 - n)
    with np.errstate(invalid="ignore", divide="ignore"):
        h = (12.0 / (n * (n + 1)) * (sums ** 2 / sizes[:, None]).sum(axis=0) - 3.0 * (n + 1)) / c
    return np.where(c > 0, h / (n - 1), 0.0)



class Data:
    """The per-trace tables a register check reads, with the row sets the bootstrap resamples."""

    def __init__(self, tables: dict[str, pd.DataFrame], metrics: pd.DataFrame | None, cycles: pd.DataFrame | None,
                 ablation_traces: pd.DataFrame | None, dimensions=None):
        self.tables, self.dimensions = tables, dimensions
        self.dims = dimension_map(dimensions)
        self.metrics = metrics.reset_index(drop=True) if metrics is not None and len(metrics) else None
        if self.metrics is not None:
            m = self.metrics
            self.x = m[list(METRIC_NAMES)].to_numpy(dtype=float)
            self.col = {n: i for i, n in enumerate(METRIC_NAMES)}
            self.model = pd.factorize(m["model"].astype(str), sort=True)[0]
            has_domain = "domain" in m and (m["domain"].astype(str) != "").any()
            self.domain = pd.factorize(m["domain"].astype(str), sort=True)[0] if has_domain else None
            self.metric_prompts = prompt_keys(m).reset_index(drop=True)
        self.cycles_full = self.hist = None
        if cycles is not None and len(cycles) and (cycles["subgraph"] == "full").any():
            self.cycles_full, self.hist = _cycle_arrays(cycles)
            self.cycle_prompts = prompt_keys(self.cycles_full).reset_index(drop=True)
            self.subgraph_has = {}
            for sub, grp in cycles.groupby("subgraph"):
                s = grp.set_index("trace_id")["has_cycle"].astype(float)
                self.subgraph_has[sub] = self.cycles_full["trace_id"].map(s).to_numpy(dtype=float)
        self.ablation = None
        if ablation_traces is not None and len(ablation_traces):
            a = ablation_traces
            wide = a.pivot_table(index="trace_id", columns="layers", values=list(METRIC_NAMES), aggfunc="first")
            wide.columns = [f"{m}_{s}" for m, s in wide.columns]
            wide = wide.dropna().reset_index()
            prompts = _ablation_wide(a, metrics)[["trace_id", "prompt"]]
            self.ablation = wide.merge(prompts, on="trace_id", how="left")
            self.ablation["prompt"] = self.ablation["prompt"].fillna(self.ablation["trace_id"])
            self.layers = [s for s in ("l1", "l3", "l4", "full") if f"BF_{s}" in self.ablation]

    def rows_of(self, table: str) -> pd.Series | None:
        if table == "metrics":
            return self.metric_prompts if self.metrics is not None else None
        if table == "cycles":
            return self.cycle_prompts if self.cycles_full is not None else None
        if table == "ablation":
            return self.ablation["prompt"] if self.ablation is not None else None
        return None


class MetricPanel:
    """The statistics of the metrics table on one set of rows, each computed once and shared by the checks."""

    def __init__(self, data: Data, idx: np.ndarray):
        self.d, self.idx = data, idx

    @cached_property
    def profile(self) -> dict[str, np.ndarray]:
        return self._profile(frozenset())

    @cached_property
    def profile_excluded(self) -> dict[str, np.ndarray]:
        return self._profile(frozenset(LENGTH_METRICS))

    def _profile(self, exclude: frozenset) -> dict[str, np.ndarray]:
        from .bootstrap import zscore_columns

        used = [m for m in METRIC_NAMES if m not in exclude]
        z = zscore_columns(self.d.x[np.ix_(self.idx, [self.d.col[m] for m in used])])
        pos = {m: i for i, m in enumerate(used)}
        return {dim: z[:, [pos[m] for m in ms if m in pos]].mean(axis=1) for dim, ms in self.d.dims.items()
                if any(m in pos for m in ms)}

    def codes(self, grouping: str) -> np.ndarray:
        g = self.d.model if grouping == "model" else self.d.domain
        if g is None:
            raise KeyError(f"the metrics table has no {grouping}")
        return g[self.idx]

    @cached_property
    def _ranked(self) -> dict[bool, tuple[list[str], np.ndarray, np.ndarray]]:
        return {}

    def ranked(self, excluded: bool = False) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Targets (19 metrics, then the dimensions), their ranks over these rows (columns) and each column's
        tie term sum(t^3 - t): computed once and shared by epsilon^2, Dunn and Spearman."""
        if excluded not in self._ranked:
            from scipy.stats import rankdata

            prof = self.profile_excluded if excluded else self.profile
            names = list(METRIC_NAMES) + list(prof)
            x = np.column_stack([self.d.x[self.idx]] + [prof[d] for d in prof])
            r = rankdata(x, axis=0)
            s = np.sort(x, axis=0)
            ties = np.zeros(x.shape[1])
            for j in range(x.shape[1]):
                _, t = np.unique(s[:, j], return_counts=True)
                ties[j] = float((t.astype(float) ** 3 - t).sum())
            self._ranked[excluded] = (names, r, ties)
        return self._ranked[excluded]

    @cached_property
    def _eps(self) -> dict[tuple[str, bool], dict[str, float]]:
        return {}

    def epsilon2(self, target: str, grouping: str, excluded: bool = False) -> float:
        """Kruskal-Wallis epsilon^2 of a metric or dimension (the dimensions of the length-excluded profile
        when ``excluded``), all targets of a grouping at once (the same H as scipy.stats.kruskal)."""
        key = (grouping, excluded)
        if key not in self._eps:
            names, r, ties = self.ranked(excluded)
            self._eps[key] = dict(zip(names, kw_epsilon2(r, ties, self.codes(grouping))))
        return self._eps[key].get(target, float("nan"))

    @cached_property
    def rho(self) -> np.ndarray:
        _, r, _ = self.ranked()
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.corrcoef(r[:, :len(METRIC_NAMES)], rowvar=False)

    def dunn(self, columns: slice) -> np.ndarray:
        """Pairs x targets of Bonferroni-adjusted Dunn p by model (scikit-posthocs' posthoc_dunn with
        p_adjust="bonferroni", vectorised over targets; a test checks the two agree)."""
        from scipy.stats import norm

        _, r, ties = self.ranked()
        r, ties = r[:, columns], ties[columns]
        groups, g = np.unique(self.codes("model"), return_inverse=True)
        k, n = len(groups), r.shape[0]
        sizes = np.bincount(g, minlength=k).astype(float)
        onehot = np.zeros((n, k))
        onehot[np.arange(n), g] = 1.0
        mean_rank = (onehot.T @ r) / sizes[:, None]
        a, b = np.triu_indices(k, 1)
        var = n * (n + 1) / 12.0 - ties / (12.0 * (n - 1))
        se = np.sqrt(np.outer(1.0 / sizes[a] + 1.0 / sizes[b], var))
        with np.errstate(invalid="ignore", divide="ignore"):
            p = 2.0 * norm.sf(np.abs(mean_rank[a] - mean_rank[b]) / se)
        p[:, var <= 0] = 1.0
        return np.minimum(1.0, p * len(a))

    @cached_property
    def dunn_metrics(self) -> np.ndarray:
        return self.dunn(slice(0, len(METRIC_NAMES)))

    @cached_property
    def dunn_dimensions(self) -> np.ndarray:
        return self.dunn(slice(len(METRIC_NAMES), None))

    @cached_property
    def ranking_rho(self) -> dict[str, float]:
        """Per dimension: Spearman rho between the models' mean equal-weight and PC1-weighted scores on these
        rows (:func:`.robustness.aggregation_robustness` recomputed, z-scores included)."""
        from scipy.stats import rankdata

        from .bootstrap import zscore_columns
        from .robustness import pca_weights

        groups, codes = np.unique(self.d.model[self.idx], return_inverse=True)
        sizes = np.bincount(codes)
        out = {}
        for dim, members in self.d.dims.items():
            z = zscore_columns(self.d.x[np.ix_(self.idx, [self.d.col[m] for m in members])])
            w, _ = pca_weights(z)
            eq = np.bincount(codes, weights=z.mean(axis=1)) / sizes
            pc = np.bincount(codes, weights=z @ w) / sizes
            out[dim] = (float("nan") if len(groups) < 3 or np.ptp(eq) == 0 or np.ptp(pc) == 0
                        else float(np.corrcoef(rankdata(eq), rankdata(pc))[0, 1]))
        return out


# ------------------------------------------------------------------------------------------- the checks

Check = Callable[..., float]
CHECKS: dict[str, tuple[str, Check]] = {}


def check(table: str):
    """Register a check: ``table`` is what it resamples (``metrics``, ``cycles``, ``ablation``) or ``test``
    (a count over the statistics tables' p-values: no interval)."""
    def deco(fn: Check) -> Check:
        CHECKS[fn.__name__] = (table, fn)
        return fn
    return deco


@check("metrics")
def epsilon2(p: MetricPanel, target: str, grouping: str) -> float:
    return p.epsilon2(target, grouping)


@check("metrics")
def min_epsilon2(p: MetricPanel, targets: list[str], grouping: str) -> float:
    return float(min(p.epsilon2(t, grouping) for t in targets))


@check("metrics")
def max_epsilon2(p: MetricPanel, targets: list[str], grouping: str) -> float:
    return float(max(p.epsilon2(t, grouping) for t in targets))


@check("metrics")
def top_margin(p: MetricPanel, targets: list[str], grouping: str, k: int | None = None) -> float:
    """Smallest epsilon^2 of ``targets`` minus the ``k``-th largest of the other metrics' (k = len(targets)
    by default): > 0 when the targets are the k largest of the 19 (or, with k, among the k largest)."""
    k = k or len(targets)
    others = sorted((p.epsilon2(m, grouping) for m in METRIC_NAMES if m not in targets), reverse=True)
    return float(min(p.epsilon2(t, grouping) for t in targets) - others[k - len(targets)])


@check("metrics")
def bottom_margin(p: MetricPanel, targets: list[str], grouping: str) -> float:
    """The smallest epsilon^2 of the other metrics minus the largest of ``targets``: > 0 when they are last."""
    others = min(p.epsilon2(m, grouping) for m in METRIC_NAMES if m not in targets)
    return float(others - max(p.epsilon2(t, grouping) for t in targets))


@check("metrics")
def top_ratio(p: MetricPanel) -> float:
    """The largest model epsilon^2 of the 19 metrics over the largest domain epsilon^2."""
    return float(max(p.epsilon2(m, "model") for m in METRIC_NAMES) / max(p.epsilon2(m, "domain") for m in METRIC_NAMES))


@check("metrics")
def model_minus_domain(p: MetricPanel, dimension: str, exclude_length: bool = False) -> float:
    return p.epsilon2(dimension, "model", exclude_length) - p.epsilon2(dimension, "domain", exclude_length)


@check("metrics")
def kth_model_minus_domain(p: MetricPanel, k: int, dimensions: list[str] | None = None,
                           exclude_length: bool = False) -> float:
    """The k-th largest of the dimensions' epsilon^2(model) - epsilon^2(domain): > 0 when at least k of them
    have model above domain."""
    dims = [d for d in (dimensions or list(p.d.dims)) if d in (p.profile_excluded if exclude_length else p.profile)]
    diffs = sorted((model_minus_domain(p, d, exclude_length) for d in dims), reverse=True)
    return float(diffs[k - 1]) if len(diffs) >= k else float("nan")


@check("metrics")
def excluded_change(p: MetricPanel, dimension: str, grouping: str) -> float:
    return p.epsilon2(dimension, grouping, True) - p.epsilon2(dimension, grouping)


@check("metrics")
def excluded_relative_change(p: MetricPanel, dimension: str, grouping: str) -> float:
    full = p.epsilon2(dimension, grouping)
    return (p.epsilon2(dimension, grouping, True) - full) / full if full > 0 else float("nan")


@check("metrics")
def length_rho(p: MetricPanel, metric: str) -> float:
    """Spearman rho of ``metric`` with trace length (AT, :mod:`.confound`'s length)."""
    return float(p.rho[p.d.col[metric], p.d.col["AT"]])


@check("metrics")
def max_abs_length_rho(p: MetricPanel, metrics: list[str]) -> float:
    return float(max(abs(length_rho(p, m)) for m in metrics))


@check("metrics")
def rho(p: MetricPanel, a: str, b: str) -> float:
    return float(p.rho[p.d.col[a], p.d.col[b]])


@check("metrics")
def min_rho(p: MetricPanel, metrics: list[str]) -> float:
    """The smallest Spearman rho over every pair of ``metrics`` (a "mutual" correlation)."""
    return float(min(rho(p, a, b) for i, a in enumerate(metrics) for b in metrics[i + 1:]))


@check("metrics")
def strongest_pair_margin(p: MetricPanel, a: str, b: str) -> float:
    """|rho(a, b)| minus the largest |rho| of every other pair of the 19 metrics: > 0 when a-b is strongest."""
    r = np.abs(p.rho.copy())
    np.fill_diagonal(r, np.nan)
    i, j = p.d.col[a], p.d.col[b]
    mine = r[i, j]
    r[i, j] = r[j, i] = np.nan
    return float(mine - np.nanmax(r))


@check("metrics")
def dunn_share(p: MetricPanel, alpha: float) -> float:
    """Share of (model pair, metric) cells whose Bonferroni-adjusted Dunn p is below ``alpha`` (App. I, Fig. 15)."""
    return float((p.dunn_metrics < alpha).mean())


@check("metrics")
def dunn_pairs_distinct(p: MetricPanel, alpha: float) -> float:
    """Share of model pairs that differ (Dunn, Bonferroni within each dimension) on at least one dimension."""
    return float((p.dunn_dimensions < alpha).any(axis=1).mean())


@check("metrics")
def min_ranking_rho(p: MetricPanel, dimensions: list[str]) -> float:
    """The smallest equal-vs-PCA model-ranking rho over ``dimensions``, leaving out the dimensions where it
    is 1 by construction (:func:`ranking_identities`); NaN when every one is such an identity."""
    ident = ranking_identities(p.d.dimensions)
    vals = [p.ranking_rho[d] for d in dimensions if d not in ident and d in p.ranking_rho]
    return float(min(vals)) if vals else float("nan")


@check("test")
def significant_targets(d: Data, grouping: str, kind: str, alpha: float, correction: str = "bonferroni") -> float:
    """How many targets of a family have p < ``alpha`` (Bonferroni over the family unless ``correction:
    none``): the blocked test (Friedman within prompts) when every model answers every prompt, as the
    kruskal table gives it, else Kruskal-Wallis."""
    k = d.tables.get("kruskal")
    if k is None:
        return float("nan")
    fam = k[(k.kind == kind) & (k.grouping == grouping)]
    blocked = "p_friedman" in fam and len(fam) and fam.p_friedman.notna().all() and fam.n_blocks.min() >= 2
    p = (fam.p_friedman if blocked else fam.p).to_numpy(dtype=float)
    if correction == "bonferroni":
        p = np.minimum(1.0, p * len(p))
    return float((p < alpha).sum())


@check("cycles")
def cycle_prevalence(c: "CyclePanel", subgraph: str) -> float:
    return float(np.nanmean(c.d.subgraph_has[subgraph][c.idx])) if subgraph in c.d.subgraph_has else float("nan")


@check("cycles")
def cycle_prevalence_difference(c: "CyclePanel", a: str, b: str) -> float:
    return cycle_prevalence(c, a) - cycle_prevalence(c, b)


@check("cycles")
def cycle_mean_minus_median(c: "CyclePanel") -> float:
    n = c.counts
    return float(n.mean() - np.median(n))


@check("cycles")
def cycle_median_length(c: "CyclePanel") -> float:
    from .cycles import _median_from_counts

    return float(_median_from_counts(c.lengths))


def _share(h: np.ndarray, lo: int, hi: int | None) -> float:
    total = h.sum()
    return float(h[lo:(hi + 1 if hi is not None else None)].sum() / total) if total else float("nan")


@check("cycles")
def short_share_margin(c: "CyclePanel") -> float:
    """Share of cycles of length 2-6 minus the larger share of 7-20 and of 21+ (App. F's bands)."""
    h = c.lengths
    return _share(h, 2, 6) - max(_share(h, 7, 20), _share(h, 21, None))


@check("cycles")
def medium_over_short(c: "CyclePanel") -> float:
    """Cycles of length 7-20 per cycle of length 2-6."""
    h = c.lengths
    short = _share(h, 2, 6)
    return _share(h, 7, 20) / short if short > 0 else float("nan")


@check("cycles")
def cycle_loglog_slope(c: "CyclePanel") -> float:
    """Least-squares slope of log(cycles) on log(|V|) over the traces with a cycle (> 1: super-linear)."""
    n = c.counts
    v = c.d.cycles_full["n_nodes"].to_numpy(dtype=float)[c.idx]
    ok = (n > 0) & (v > 0)
    if ok.sum() < 3 or np.ptp(v[ok]) == 0:
        return float("nan")
    return float(np.polyfit(np.log(v[ok]), np.log(n[ok]), 1)[0])


@check("cycles")
def cycle_count_epsilon2(c: "CyclePanel", grouping: str) -> float:
    from .bootstrap import epsilon2 as eps

    codes = pd.factorize(c.d.cycles_full[grouping].astype(str), sort=True)[0][c.idx]
    return eps(c.counts, codes)


@check("ablation")
def ablation_mean(a: "AblationPanel", metric: str, layers: str) -> float:
    return float(a.mean(f"{metric}_{layers}"))


@check("ablation")
def min_ablation_mean(a: "AblationPanel", metrics: list[str], layers: str) -> float:
    return float(min(a.mean(f"{m}_{layers}") for m in metrics))


@check("ablation")
def cbc_gain_difference(a: "AblationPanel") -> float:
    """(CBC full - CBC l4) - (CBC l4 - CBC l3): > 0 when the full pipeline gives CBC its largest gain."""
    m = [a.mean(f"CBC_{s}") for s in ("l3", "l4", "full")]
    return float((m[2] - m[1]) - (m[1] - m[0]))


@check("ablation")
def gd_full_minus_max(a: "AblationPanel") -> float:
    return float(a.mean("GD_full") - max(a.mean("GD_l3"), a.mean("GD_l4")))


@check("ablation")
def ablation_no_collapse(a: "AblationPanel") -> float:
    """The smallest mean, over every metric and every layer setting after the first at which its mean is
    above 0, of that metric (> 0: no metric falls back to zero at a later stage)."""
    out = []
    for m in METRIC_NAMES:
        means = [a.mean(f"{m}_{s}") for s in a.d.layers]
        on = [i for i, x in enumerate(means) if x > 0]
        if on:
            out += means[on[0]:]
    return float(min(out)) if out else float("nan")


class CyclePanel:
    def __init__(self, data: Data, idx: np.ndarray):
        self.d, self.idx = data, idx
        self.counts = data.cycles_full["n_cycles"].to_numpy(dtype=float)[idx]
        self.lengths = data.hist[idx].sum(axis=0)


class AblationPanel:
    def __init__(self, data: Data, idx: np.ndarray):
        self.d, self.idx = data, idx
        self._cache: dict[str, float] = {}

    def mean(self, col: str) -> float:
        if col not in self._cache:
            self._cache[col] = float(self.d.ablation[col].to_numpy(dtype=float)[self.idx].mean())
        return self._cache[col]


PANELS = {"metrics": MetricPanel, "cycles": CyclePanel, "ablation": AblationPanel}


# ------------------------------------------------------------------------------------------- the rows

def _fmt(x: float, nd: int = 3) -> str:
    return "n/a" if x is None or not np.isfinite(float(x)) else f"{float(x):.{nd}f}"


def _num(x: Any) -> float:
    return float("nan") if x is None else float(x)


def criterion_text(c: dict[str, Any]) -> str:
    """A criterion in words: ``check(args) op value``."""
    if "identity" in c:
        return f"identity ({c['identity']})"
    args = ", ".join(f"{k}={'/'.join(v) if isinstance(v, list) else v}" for k, v in (c.get("args") or {}).items())
    val = f"{c['value']} +- {c['tol']}" if c["op"] == "near" else f"{c['op']} {c['value']}"
    return f"{c['check']}({args}) {'within' if c['op'] == 'near' else ''}{' ' if c['op'] == 'near' else ''}{val}"


def register_rows(data: Data, identity_verdicts: dict[str, str], identity_tests: dict[str, str], b: int, seed: int,
                  level: float, root: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per register sentence: its criteria computed (estimate, BCa interval over prompts, verdict)
    and the sentence's verdict. Kinds: ``replication`` (testable, counted), ``identity`` (every criterion
    true by construction: shown, not counted), ``untestable``. ``identity_verdicts`` and ``identity_tests``:
    per identity key of :data:`.claims.IDENTITIES`, its verdict on this run and its property test."""
    from .bootstrap import cluster_resamples

    register = load_register(root, identities=identity_tests)
    needed: dict[str, list[tuple[str, dict]]] = {}
    for r in register:
        for c in r.get("criteria") or []:
            if "check" in c:
                needed.setdefault(CHECKS[c["check"]][0], []).append((r["id"], c))
    results: dict[int, tuple[float, float, float]] = {}
    for table, crits in needed.items():
        if table == "test":
            for _, c in crits:
                v = CHECKS[c["check"]][1](data, **(c.get("args") or {}))
                results[id(c)] = (v, v, v)
            continue
        clusters = data.rows_of(table)
        if clusters is None:
            continue
        n = len(clusters)
        panel = PANELS[table]
        sets = [np.arange(n)] + cluster_resamples(clusters, b, seed) + jackknife_samples(clusters)
        vals = np.full((len(sets), len(crits)), np.nan)
        for s, idx in enumerate(sets):
            p = panel(data, idx)
            for j, (_, c) in enumerate(crits):
                with np.errstate(all="ignore"):
                    try:
                        vals[s, j] = CHECKS[c["check"]][1](p, **(c.get("args") or {}))
                    except (ValueError, KeyError, IndexError, ZeroDivisionError):
                        vals[s, j] = np.nan
        boot, jack = vals[1:1 + b], vals[1 + b:]
        for j, (_, c) in enumerate(crits):
            lo, hi = bca_interval(boot[:, j], vals[0, j], jack[:, j], level)
            results[id(c)] = (vals[0, j], lo, hi)
    rows = []
    for r in register:
        base = {"key": r["id"], "where": r["section"], "quote": r["quote"], "register": r["id"]}
        if not r["testable"]:
            rows.append({**base, "kind": "untestable", "question": r["quote"], "verdict": "not testable",
                         "paper": "", "here": "", "detail": r["why"], "criteria": "[]"})
            continue
        crit_out, verdicts = [], []
        for c in r["criteria"]:
            out = {"words": c["words"], "criterion": criterion_text(c)}
            if "identity" in c:
                key = c["identity"]
                out.update(identity=key, verdict="identity: " + identity_verdicts.get(key, "true by construction"),
                           why=c.get("why", ""))
            else:
                est, lo, hi = results.get(id(c), (np.nan, np.nan, np.nan))
                table = CHECKS[c["check"]][0]
                extra = {}
                if c["check"] in ("min_ranking_rho",):
                    ident = ranking_identities(data.dimensions)
                    dropped = [d for d in c["args"]["dimensions"] if d in ident]
                    if dropped:
                        extra["identities"] = [ident[d] for d in dropped]
                    if len(dropped) == len(c["args"]["dimensions"]):
                        out.update(identity="ranking", verdict="identity: " + "; ".join(extra["identities"]))
                        crit_out.append({**out, **extra})
                        continue
                v = (verdict(c["op"], float(c["value"]), est, est, c.get("tol")) if table == "test"
                     else verdict(c["op"], float(c["value"]), lo, hi, c.get("tol")))
                out.update(estimate=est, ci_low=lo if table != "test" else None, ci_high=hi if table != "test" else None,
                           interval="none (a test)" if table == "test" else f"BCa {100 * level:g}% over prompts",
                           verdict=v, **extra)
                verdicts.append(v)
            crit_out.append(out)
        if not verdicts:
            held = all(c["verdict"].endswith(("holds", "true by construction")) or "rho = 1" in c["verdict"]
                       for c in crit_out)
            tests = [identity_tests[c["identity"]] for c in crit_out if c.get("identity") in identity_tests]
            rows.append({**base, "kind": "identity", "question": r["quote"], "verdict": "holds" if held else "VIOLATED",
                         "test": ", ".join(tests),
                         "paper": "stated as a finding", "here": "; ".join(c["verdict"] for c in crit_out),
                         "detail": "every criterion is true by construction", "criteria": json.dumps(crit_out)})
            continue
        sv = sentence_verdict(verdicts)
        here = "; ".join(f"{c['words']}: " + (c["verdict"] if "identity" in c else
                                             f"{_fmt(c['estimate'])}" + (f" [{_fmt(c['ci_low'])}, {_fmt(c['ci_high'])}]"
                                                                         if c.get("ci_low") is not None else "")
                                             + f" ({c['verdict']})") for c in crit_out)
        first = next((c for c in crit_out if "estimate" in c), {})
        untested = "; ".join(f"untested: '{u['words']}' ({u['why']})" for u in r.get("untested") or [])
        rows.append({**base, "kind": "replication", "question": r["quote"], "verdict": sv,
                     "criterion": " AND ".join(c["criterion"] for c in crit_out),
                     "paper": "the sentence", "here": here, "detail": untested,
                     "estimate": first.get("estimate", np.nan), "ci_low": _num(first.get("ci_low")),
                     "ci_high": _num(first.get("ci_high")), "criteria": json.dumps(crit_out, default=float)})
    return rows
