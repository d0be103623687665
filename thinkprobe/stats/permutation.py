"""Permutation nulls for the Kruskal-Wallis epsilon^2: what the effect size is when labels carry no effect.

Why. epsilon^2 = H / (n - 1) (paper sections 5.2-5.3) is not centred at zero: with no effect at all H is
about chi^2 with k - 1 degrees of freedom, so E[epsilon^2] ~ (k - 1) / (n - 1): 0.008 for 5 models and
0.018 for 10 domains at n = 500. A small epsilon^2 is then chance, and comparing model with domain favours
the grouping with more levels. Beside each epsilon^2 we therefore report its null distribution under label
shuffling (mean and 95th percentile over ``B`` shufflings, seeded), the permutation p
``(1 + #{H_b >= H}) / (B + 1)`` and the chance-corrected value ``epsilon^2 - mean_null``. The paper's
uncorrected epsilon^2 stays in the tables for comparison.

What moves under shuffling follows the study's design (``scheme``, config ``stats.permutation_units``):

- ``prompts`` (default for ``domain``): a prompt's domain is a property of the prompt, and every trace of a
  prompt shares it, so whole prompts are shuffled: the prompt -> domain map is permuted and each trace takes
  its prompt's new label. Traces of one prompt are not independent (they answer the same question), so
  shuffling traces one by one (``traces``) understates the null's spread and gives p-values far too small
  when prompts differ; permuting prompts keeps that dependence in the null. We permute prompts rather than
  aggregate to one value per prompt because the statistic then stays the paper's trace-level epsilon^2,
  comparable with its Table 15, and only its reference distribution changes.
- ``within_prompts`` (default for ``model``): in the study's crossed design every prompt is answered by
  every model, so under "no model effect" the model labels are exchangeable among the traces of one prompt
  only. Shuffling within prompts keeps that balance; shuffling across prompts would add the prompts' own
  variance to the null and bias the correction upwards. (A design where each prompt has one trace has no
  within-prompt freedom: the null then equals the observed value, p = 1.)
- ``traces``: every trace's label shuffled freely (the textbook test, exact when traces are independent).

Monte Carlo error. ``p_perm`` estimates the exact permutation p from ``B`` shufflings; its standard error is
``sqrt(p (1 - p) / B)`` (:func:`mc_standard_error`, a column of every table that has a ``p_perm``). It is
largest at p = 1/2, where it is ``1 / (2 sqrt(B))``, so ``B >= 1 / (4 bound^2)`` keeps every p's error below
``bound`` (config ``stats.permutation_mcse_max``; :func:`min_permutations`, checked before any job runs). The
default bound 0.005 needs B = 10,000; at B = 1,000 one p of the corpus study moved from 0.011 to 0.021 between
two seeds, which its Monte Carlo error (0.003-0.005) explains.

Cost. Ranks (average ranks for ties) and the tie correction are computed once per target; they do not
change when labels move. The B shufflings are drawn once per grouping (one sort of B x n random keys) and
kept as a sparse (B k) x n group-indicator matrix, so the rank sums of all B shufflings of a target are one
sparse matrix-vector product, O(B n) (``bench/stats_bench.py`` measures it at corpus scale). The same seed
gives the same shufflings for every target with the same rows, so the nulls of two targets are comparable.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

SCHEMES = ("traces", "within_prompts", "prompts")
PROMPT_COLUMNS = ("question_set", "question_id")
NULL_COLUMNS = ["permutation", "B", "epsilon2_null_mean", "epsilon2_null_p95", "p_perm", "epsilon2_corrected",
                "p_perm_mcse"]


def mc_standard_error(p, b: int):
    """Monte Carlo standard error of a permutation p estimated from ``b`` shufflings: ``sqrt(p (1 - p) / b)``.

    >>> round(float(mc_standard_error(0.05, 10_000)), 5)
    0.00218
    """
    p = np.asarray(p, dtype=float)
    return np.sqrt(p * (1.0 - p) / b) if b > 0 else np.full(p.shape, np.nan)


def min_permutations(bound: float) -> int:
    """The smallest B whose Monte Carlo standard error is at most ``bound`` for every p (worst case p = 1/2).

    >>> min_permutations(0.005)
    10000
    """
    if not 0 < bound < 0.5:
        raise ValueError(f"the Monte Carlo error bound must lie in (0, 0.5), got {bound}")
    return int(np.ceil(0.25 / (bound * bound) - 1e-9))


def check_permutations(b: int, bound: float) -> None:
    """Refuse a B (config ``stats.permutations``) whose p-values could have a Monte Carlo standard error above
    ``bound`` (``stats.permutation_mcse_max``); B = 0 turns the nulls off and is accepted."""
    if b and b < min_permutations(bound):
        raise ValueError(f"stats.permutations = {b}: a permutation p from {b} shufflings can have a Monte Carlo "
                         f"standard error of {0.5 / np.sqrt(b):.4f}, above stats.permutation_mcse_max = {bound}; "
                         f"use at least {min_permutations(bound)} shufflings (or raise the bound, or 0 for none)")


class Design:
    """The B shufflings of one grouping as a sparse (B k) x n indicator matrix and the group sizes: the rank
    sums of every shuffling are then one sparse matrix-vector product, for any target with these rows."""

    def __init__(self, labels: np.ndarray, k: int):
        from scipy.sparse import csr_matrix

        b, n = labels.shape
        rows = (labels.astype(np.int64) + (np.arange(b, dtype=np.int64) * k)[:, None]).ravel()
        cols = np.tile(np.arange(n, dtype=np.int64), b)
        self.n, self.k, self.b = n, k, b
        self.indicator = csr_matrix((np.ones(b * n), (rows, cols)), shape=(b * k, n))
        self.sizes = np.bincount(rows, minlength=b * k).reshape(b, k)

    def h(self, ranks: np.ndarray, tie_correction: float) -> np.ndarray:
        """Kruskal-Wallis H under every shuffling (:func:`kruskal_h_batch`)."""
        sums = (self.indicator @ ranks).reshape(self.b, self.k)
        return _h_from_sums(sums, self.sizes, self.n, tie_correction)


def _h_from_sums(sums: np.ndarray, sizes: np.ndarray, n: int, tie_correction: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(sizes > 0, sums * sums / np.where(sizes > 0, sizes, 1), 0.0)
    return (12.0 / (n * (n + 1)) * terms.sum(axis=1) - 3.0 * (n + 1)) / tie_correction


def kruskal_h_batch(ranks: np.ndarray, labels: np.ndarray, k: int, tie_correction: float) -> np.ndarray:
    """Kruskal-Wallis H of one vector of ``ranks`` under each row of ``labels`` (B x n codes in 0..k-1).

    H = (12 / (n (n + 1)) sum_g R_g^2 / n_g - 3 (n + 1)) / C, with R_g the rank sum and n_g the size of
    group g and C = 1 - sum(t^3 - t) / (n^3 - n) the tie correction (Kruskal & Wallis 1952); groups of a
    row that hold no trace add nothing.
    """
    return Design(labels, k).h(ranks, tie_correction)


def _ranks(values: np.ndarray) -> tuple[np.ndarray, float]:
    from scipy.stats import rankdata

    ranks = rankdata(values)  # average ranks for ties, as scipy.stats.kruskal uses
    n = len(values)
    _, counts = np.unique(values, return_counts=True)
    c = 1.0 - float((counts.astype(float) ** 3 - counts).sum()) / (n ** 3 - n) if n > 1 else 0.0
    return ranks, c


def shuffled_labels(codes: np.ndarray, b: int, seed: int, scheme: str = "traces",
                    prompts: np.ndarray | None = None) -> np.ndarray:
    """``b`` shufflings of the label ``codes`` (one row each) under ``scheme`` (see the module docstring).

    ``prompts``: one prompt code per trace (needed by ``within_prompts`` and ``prompts``). Under
    ``prompts`` every prompt must carry one label (a prompt with two is an error naming it).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown permutation scheme {scheme!r}: one of {', '.join(SCHEMES)}")
    rng = np.random.default_rng(seed)
    n = len(codes)
    if scheme == "traces" or prompts is None:
        if scheme != "traces":
            raise ValueError(f"permutation scheme {scheme!r} needs the prompt of every trace")
        return codes[np.argsort(rng.random((b, n)), axis=1)]
    prompts = np.asarray(prompts)
    if scheme == "within_prompts":
        order = np.argsort(prompts, kind="stable")  # slots grouped by prompt
        keys = prompts[order][None, :] * 2.0 + rng.random((b, n))  # sorts by prompt, then at random
        picks = order[np.argsort(keys, axis=1)]
        out = np.empty((b, n), dtype=codes.dtype)
        out[:, order] = codes[picks]
        return out
    m = int(prompts.max()) + 1 if n else 0
    per_prompt = np.full(m, -1, dtype=np.int64)
    for p, c in zip(prompts, codes):
        if per_prompt[p] not in (-1, c):
            raise ValueError(f"permutation scheme 'prompts': prompt #{p} has traces in two groups; "
                             "the grouping is not a property of the prompt (use 'traces' or 'within_prompts')")
        per_prompt[p] = c
    present = np.flatnonzero(per_prompt >= 0)
    moved = per_prompt.copy()
    perm = np.argsort(rng.random((b, len(present))), axis=1)
    table = np.broadcast_to(per_prompt, (b, m)).copy()
    table[:, present] = moved[present][perm]
    return table[:, prompts]


_DESIGNS: dict[tuple, Design] = {}


def _cached_design(codes: np.ndarray, k: int, b: int, seed: int, scheme: str, prompts: np.ndarray | None) -> Design:
    """The :class:`Design` of :func:`shuffled_labels`, drawn once for every target with the same rows and
    labels (the common case: the 24 targets of one grouping), so a target costs its ranks and one product."""
    key = (codes.tobytes(), None if prompts is None else np.asarray(prompts).tobytes(), k, b, seed, scheme)
    if key not in _DESIGNS:
        if len(_DESIGNS) >= 4:
            _DESIGNS.pop(next(iter(_DESIGNS)))
        _DESIGNS[key] = Design(shuffled_labels(codes, b, seed, scheme, prompts), k)
    return _DESIGNS[key]


def epsilon2_null(values: Sequence[float], groups: Sequence[object], b: int = 1000, seed: int = 42,
                  scheme: str = "traces", prompts: Sequence[object] | None = None) -> dict[str, float]:
    """Permutation null of epsilon^2 for ``values`` grouped by ``groups``.

    Returns ``epsilon2`` (observed, = :func:`thinkprobe.stats.discriminability.epsilon_squared` of scipy's
    H), ``epsilon2_null_mean``, ``epsilon2_null_p95``, ``p_perm``, ``epsilon2_corrected`` (observed minus
    null mean) and ``p_perm_mcse`` (:func:`mc_standard_error`). Rows with a missing value or an empty group label are left out, as in the test itself.

    >>> r = epsilon2_null([1, 2, 3, 4, 5, 6, 7, 8], list("aaaabbbb"), b=200, seed=1)
    >>> round(r["epsilon2"], 4), r["p_perm"] < 0.05
    (0.7619, True)
    """
    v = pd.to_numeric(pd.Series(list(values)), errors="coerce").to_numpy(dtype=float)
    g = pd.Series(list(groups), dtype=object)
    ok = np.isfinite(v) & g.notna().to_numpy() & (g.astype(str) != "").to_numpy()
    nan = {"epsilon2": float("nan"), "epsilon2_null_mean": float("nan"), "epsilon2_null_p95": float("nan"),
           "p_perm": float("nan"), "epsilon2_corrected": float("nan"), "p_perm_mcse": float("nan")}
    v, g = v[ok], g[ok]
    codes, levels = pd.factorize(g.astype(str), sort=True)
    n, k = len(v), len(levels)
    if k < 2 or n < 3:
        return nan
    if np.ptp(v) == 0:
        return {"epsilon2": 0.0, "epsilon2_null_mean": 0.0, "epsilon2_null_p95": 0.0, "p_perm": 1.0,
                "epsilon2_corrected": 0.0, "p_perm_mcse": 0.0}
    ranks, c = _ranks(v)
    p_codes = None
    if prompts is not None:
        p_codes, p_names = pd.factorize(pd.Series(list(prompts), dtype=object)[ok].astype(str))
        if scheme == "prompts":
            mixed = pd.Series(codes).groupby(p_codes).nunique()
            if (mixed > 1).any():
                name = str(p_names[int(mixed[mixed > 1].index[0])]).replace("\x1f", "/")
                raise ValueError(f"permutation scheme 'prompts': prompt {name!r} has traces in two groups "
                                 f"({int((mixed > 1).sum())} such prompt(s)); the grouping is not a property of "
                                 "the prompt: set stats.permutation_units to traces or within_prompts")
    sums = np.bincount(codes, weights=ranks, minlength=k)[None, :]
    h_obs = float(_h_from_sums(sums, np.bincount(codes, minlength=k)[None, :], n, c)[0])
    h_null = _cached_design(codes, k, b, seed, scheme, p_codes).h(ranks, c)
    eps_null = h_null / (n - 1)
    eps = h_obs / (n - 1)
    tol = 1e-9 * max(1.0, abs(h_obs))  # the same arrangement recomputed must count as "as large"
    mean = float(eps_null.mean())
    p = float((1 + (h_null >= h_obs - tol).sum()) / (b + 1))
    return {"epsilon2": eps, "epsilon2_null_mean": mean, "epsilon2_null_p95": float(np.percentile(eps_null, 95)),
            "p_perm": p, "epsilon2_corrected": eps - mean, "p_perm_mcse": float(mc_standard_error(p, b))}


def prompt_ids(table: pd.DataFrame) -> pd.Series | None:
    """One prompt id per row: ``question_set`` and ``question_id`` joined (None when the table has neither)."""
    if "question_id" not in table.columns:
        return None
    qid = table["question_id"].astype(str)
    return table["question_set"].astype(str) + "\x1f" + qid if "question_set" in table.columns else qid


def null_columns(table: pd.DataFrame, target: str, grouping: str, b: int, seed: int, scheme: str) -> dict:
    """The :data:`NULL_COLUMNS` of one Kruskal-Wallis row (``permutation`` names the scheme used)."""
    prompts = prompt_ids(table) if scheme != "traces" else None
    if scheme != "traces" and prompts is None:
        raise ValueError(f"permutation scheme {scheme!r} for grouping {grouping!r} needs a question_id column")
    r = epsilon2_null(table[target], table[grouping], b, seed, scheme, prompts)
    return {"permutation": scheme, "B": int(b), **{c: r[c] for c in NULL_COLUMNS[2:]}}


def joint_exceedances(table: pd.DataFrame, targets: Sequence[str], grouping: str, b: int, seed: int,
                      scheme: str, level: float = 0.95) -> dict[str, float]:
    """The count of ``targets`` whose epsilon^2 stands above its own null's ``level`` quantile, read against
    the joint null: every shuffling relabels all targets at once (the same :func:`shuffled_labels` for all of
    them), so the null distribution of the count keeps the dependence between targets, which "5% of the
    count" ignores.

    Returns ``observed``, ``null_mean`` (= (1 - level) x the targets, by linearity, up to the quantile's
    discreteness), ``null_p95`` (95th percentile of the count under the joint null), ``p`` (share of
    shufflings with a count at least the observed one, (1 + #) / (B + 1)) and ``n_targets``; the percentile of a
    count is one of its values (inverted CDF).
    """
    g = table[grouping].astype(str)
    keep = (g != "").to_numpy()
    for t in targets:
        keep &= np.isfinite(pd.to_numeric(table[t], errors="coerce").to_numpy(dtype=float))
    sub = table[keep].reset_index(drop=True)
    codes, levels = pd.factorize(sub[grouping].astype(str), sort=True)
    k, n = len(levels), len(sub)
    p_codes = None
    if scheme != "traces":
        ids = prompt_ids(sub)
        if ids is None:
            raise ValueError(f"permutation scheme {scheme!r} for grouping {grouping!r} needs a question_id column")
        p_codes = pd.factorize(ids.astype(str))[0]
    design = _cached_design(codes, k, b, seed, scheme, p_codes)
    above_null = np.zeros(b, dtype=np.int64)
    observed = 0
    for t in targets:
        v = sub[t].to_numpy(dtype=float)
        if np.ptp(v) == 0:
            continue
        ranks, c = _ranks(v)
        sums = np.bincount(codes, weights=ranks, minlength=k)[None, :]
        eps = float(_h_from_sums(sums, np.bincount(codes, minlength=k)[None, :], n, c)[0]) / (n - 1)
        null = design.h(ranks, c) / (n - 1)
        q = float(np.percentile(null, 100 * level))
        observed += int(eps > q)
        above_null += (null > q)
    return {"observed": float(observed), "null_mean": float(above_null.mean()),
            "null_p95": float(np.quantile(above_null, 0.95, method="inverted_cdf")),
            "p": float((1 + (above_null >= observed).sum()) / (b + 1)), "n_targets": float(len(targets))}
