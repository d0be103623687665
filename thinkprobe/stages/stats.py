"""What each ``stats`` rule does: read the study tables (or unit files), run one analysis, write its Parquet
table(s) with a provenance block (version, code hash, parameters, sha256 of every input, and the
provenance of the table it was computed from). The rule scripts in ``workflow/scripts/stats_*.py`` only
call these.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pandas as pd

from ..codedeps import code_modules
from ..vocabulary import DIMENSIONS, METRIC_NAMES
from ..outputs import provenance, read_table_metadata, write_table
from ..units import unit_path

# the packages whose code computes the statistics: their versions go into every stats table's provenance,
# so a rerun elsewhere can tell a changed number from a changed library
STATS_PACKAGES = ("numpy", "scipy", "scikit-posthocs", "pandas", "networkx", "scikit-learn")


def package_versions(names: Sequence[str] = STATS_PACKAGES) -> dict[str, str]:
    """Installed version of each package (``"not installed"`` when absent)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def rule_params(config: dict[str, Any]) -> dict[str, Any]:
    """The parameters the ``stats`` rules pass on, from a validated config (one home: ``rules/stats.smk`` and
    the snapshot's re-derivation, :mod:`.snapshot`, both read them here).

    ``permutation``: each epsilon^2's permutation null (``stats.permutations``, ``permutation_seed``,
    ``permutation_units``); ``bootstrap``: the intervals of the checks against the paper (``stats.bootstrap``,
    ``bootstrap_seed``, ``interval_level``); ``dimensions``: the 5D-CP map (``analysis.profile.dimensions``,
    None for the default); ``groupings`` and ``alpha`` as configured.
    """
    stats = config["stats"]
    return {"groupings": list(stats["groupings"]),
            "permutation": {"B": stats["permutations"], "seed": stats["permutation_seed"],
                            "units": stats["permutation_units"]},
            "bootstrap": {"B": stats["bootstrap"], "seed": stats["bootstrap_seed"], "level": stats["interval_level"]},
            "alpha": stats["alpha"],
            "dimensions": ((config.get("analysis") or {}).get("profile") or {}).get("dimensions")}


def _prov(stage: Callable[..., Any], params: dict[str, Any], inputs: Sequence[str],
          source: str | None = None) -> dict[str, Any]:
    """The provenance block of a table written by ``stage``: the modules its code reaches (thinkprobe.codedeps),
    the parameters, the inputs' sha256 and, for a table computed from another, that table's provenance."""
    extra = {"source_provenance": read_table_metadata(source)} if source else {}
    return provenance(code_modules(stage), params, list(inputs), packages=package_versions(), **extra)


def _trace_level(profiles_path: str) -> pd.DataFrame:
    profiles = pd.read_parquet(profiles_path)
    return profiles[profiles["level"] == "trace"].reset_index(drop=True) if "level" in profiles else profiles


def kruskal_stage(metrics_path: str, profiles_path: str, out_kruskal: str, out_ratio: str,
                  groupings: Sequence[str], permutation: dict[str, Any] | None = None) -> pd.DataFrame:
    """``kruskal.parquet`` (19 metrics + 5 dimensions x groupings, with each epsilon^2's permutation null
    when ``permutation`` has B > 0) and ``model_vs_domain.parquet``."""
    from ..stats.discriminability import kruskal_table, model_over_domain

    metrics, traces = pd.read_parquet(metrics_path), _trace_level(profiles_path)
    table = pd.concat([kruskal_table(metrics, METRIC_NAMES, groupings, "metric", permutation),
                       kruskal_table(traces, list(DIMENSIONS), groupings, "dimension", permutation)],
                      ignore_index=True)
    prov = _prov(kruskal_stage, {"groupings": list(groupings), "permutation": permutation},
                 [metrics_path, profiles_path], metrics_path)
    write_table(out_kruskal, table, prov)
    write_table(out_ratio, model_over_domain(table), prov)
    return table


def dunn_stage(metrics_path: str, profiles_path: str, out: str, grouping: str = "model") -> pd.DataFrame:
    """``dunn.parquet``: Bonferroni-adjusted Dunn p per model pair, for every metric and dimension."""
    from ..stats.posthoc import dunn_table

    metrics, traces = pd.read_parquet(metrics_path), _trace_level(profiles_path)
    table = pd.concat([dunn_table(metrics, METRIC_NAMES, grouping), dunn_table(traces, list(DIMENSIONS), grouping)],
                      ignore_index=True)
    write_table(out, table, _prov(dunn_stage, {"grouping": grouping, "p_adjust": "bonferroni"},
                                  [metrics_path, profiles_path], metrics_path))
    return table


def spearman_stage(metrics_path: str, out: str) -> pd.DataFrame:
    """``spearman.parquet``: rho and p of every pair of the 19 metrics, with Ward positions."""
    from ..stats.correlation import spearman_table

    table = spearman_table(pd.read_parquet(metrics_path), METRIC_NAMES)
    write_table(out, table, _prov(spearman_stage, {"clustering": "ward on 1 - rho"}, [metrics_path], metrics_path))
    return table


def stability_stage(metrics_path: str, profiles_path: str, out_cv: str, out_cosine: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``cv.parquet`` (run-to-run CV per model x metric) and ``cosine.parquet`` (model 5D-CP cosines)."""
    from ..stats.stability import cosine_table, run_cv

    metrics = pd.read_parquet(metrics_path)
    profiles = pd.read_parquet(profiles_path)
    models = profiles[profiles["level"] == "model"] if "level" in profiles else profiles
    cv = run_cv(metrics, METRIC_NAMES)
    cos = cosine_table(models, list(DIMENSIONS))
    write_table(out_cv, cv, _prov(stability_stage, {"sd": "sample (ddof=1)"}, [metrics_path], metrics_path))
    write_table(out_cosine, cos, _prov(stability_stage, {}, [profiles_path], profiles_path))
    return cv, cos


def cycles_stage(graph_paths: Sequence[str], cap: int, out_cycles: str, out_summary: str) -> pd.DataFrame:
    """``cycles.parquet`` (per trace and subgraph) and ``cycles_summary.parquet`` (per model and subgraph)."""
    from ..stats.cycles import CYCLE_COLUMNS, cycle_summary, graph_cycle_rows

    rows = []
    for _, doc, ids in _analysed_units(graph_paths, "graph"):
        rows.extend(graph_cycle_rows(doc["graph"], {**ids, "trace_id": unit_path(doc["unit"])}, cap))
    table = pd.DataFrame(rows, columns=CYCLE_COLUMNS)
    prov = _prov(cycles_stage, {"cycle_cap": cap}, graph_paths)
    write_table(out_cycles, table, prov)
    write_table(out_summary, cycle_summary(table), prov)
    return table


def confound_stage(metrics_path: str, out_confound: str, out_excluded: str, groupings: Sequence[str],
                   dimensions=None, permutation: dict[str, Any] | None = None,
                   out_partial: str | None = None) -> pd.DataFrame:
    """``length_confound.parquet`` (rho with length), ``length_excluded.parquet`` (epsilon^2 changes, with the
    length-excluded values' permutation nulls when ``permutation`` has B > 0) and, with ``out_partial``,
    ``length_partial.parquet`` (every metric and Appendix G's dimensions: rho with length, epsilon^2 before
    and after partialling length out, :func:`thinkprobe.stats.confound.length_partialled_effects`)."""
    from ..stats.confound import length_correlations, length_excluded_effects, length_partialled_effects

    metrics = pd.read_parquet(metrics_path)
    rho = length_correlations(metrics)
    prov = _prov(confound_stage, {"length": "AT", "excluded": ["AT", "ATU", "TPI"], "groupings": list(groupings),
                              "dimensions": dimensions, "permutation": permutation}, [metrics_path], metrics_path)
    write_table(out_confound, rho, prov)
    write_table(out_excluded, length_excluded_effects(metrics, groupings, dimensions=dimensions,
                                                      permutation=permutation), prov)
    if out_partial:
        write_table(out_partial, length_partialled_effects(metrics, groupings, permutation=permutation), prov)
    return rho


def _analysed_units(paths: Sequence[str], part: str):
    """``(path, document, ids)`` of every unit file whose status is ``ok`` and which holds ``part`` (``trace``,
    ``graph``); ``ids`` are the unit's ids updated with the ids as the input states them, as in the metrics
    table. Units excluded upstream are skipped: their reason is in the per-unit tables already."""
    from .unitfiles import read_unit

    for path in paths:
        doc = read_unit(path)
        if doc.get("status") == "ok" and doc.get(part):
            yield path, doc, {**doc["unit"], **(doc.get("ids") or {})}


def read_traces(trace_paths: Sequence[str]):
    """The analysed units' traces (status ``ok``) as :class:`~thinkprobe.traces.Trace`, id = unit path."""
    from ..traces import Trace

    out = []
    for path, doc, ids in _analysed_units(trace_paths, "trace"):
        out.append(Trace(unit_path(doc["unit"]),
                         doc["trace"]["text"], model=str(ids["model"]), question_id=str(ids["question_id"]),
                         run=str(ids["run"]), domain=str(ids.get("domain", "")), source=str(ids.get("source", path))))
    return out


def ablation_stage(trace_paths: Sequence[str], analysis: dict[str, Any], n: int, seed: int, out: str,
                   out_traces: str) -> pd.DataFrame:
    """``ablation.parquet``: mean metrics of ``n`` sampled traces under the layer settings l1, l3, l4, full, and
    ``ablation_traces.parquet``, the per-trace values behind them."""
    from ..encoder import load_encoder
    from ..params import Params
    from ..stats.ablation import ablation_means, ablation_trace_table, sample_traces

    params = Params.from_dict(analysis)
    traces = sample_traces(read_traces(trace_paths), n, seed)
    encoder = load_encoder(params.encoder)
    per_trace = ablation_trace_table(traces, params, encoder)
    table = ablation_means(per_trace)
    prov = _prov(ablation_stage, {"analysis": analysis, "n": n, "seed": seed, "traces": [t.trace_id for t in traces],
                              "encoder": encoder.encoder_id}, trace_paths)
    write_table(out_traces, per_trace, prov)
    write_table(out, table, prov)
    return table


def sensitivity_stage(trace_paths: Sequence[str], metrics_path: str, analysis: dict[str, Any], encoder_spec: str,
                      out: str, out_metrics: str) -> pd.DataFrame:
    """Re-extract every analysed trace under the second encoder (``metrics_encoder2.parquet``) and compare
    model rankings with the study's metrics table (``encoder_sensitivity.parquet``)."""
    from ..params import Params
    from ..pipeline import analyze
    from ..stats.sensitivity import load_second_encoder, rank_stability

    params = Params.from_dict(analysis)
    traces = read_traces(trace_paths)
    encoder = load_second_encoder(encoder_spec)
    rows = []
    for res in analyze(traces, params, encoder):
        if res.metrics:
            t = res.trace
            rows.append({"trace_id": t.trace_id, "model": t.model, "question_id": t.question_id, "run": t.run,
                         "domain": t.domain, **res.metrics})
    second = pd.DataFrame(rows, columns=["trace_id", "model", "question_id", "run", "domain", *METRIC_NAMES])
    first = pd.read_parquet(metrics_path).set_index("trace_id")
    for col in ("model", "question_id", "run", "domain"):  # the ids exactly as the study table states them
        if col in first.columns:
            second[col] = second["trace_id"].map(first[col]).fillna(second[col])
    prov = _prov(sensitivity_stage, {"analysis": analysis, "second_encoder": encoder_spec,
                                 "encoder_id": encoder.encoder_id}, [*trace_paths, metrics_path], metrics_path)
    write_table(out_metrics, second, prov)
    table = rank_stability(first.reset_index(), second, dimensions=(analysis.get("profile") or {}).get("dimensions"))
    write_table(out, table, prov)
    return table


def robustness_stage(metrics_path: str, out: str, dimensions=None) -> pd.DataFrame:
    """``aggregation_robustness.parquet``: equal-weight vs PCA-weighted model rankings per dimension."""
    from ..stats.robustness import aggregation_robustness

    table = aggregation_robustness(pd.read_parquet(metrics_path), dimensions=dimensions)
    write_table(out, table, _prov(robustness_stage, {"weights": "PC1 of the dimension's z-scores",
                                                 "dimensions": dimensions}, [metrics_path], metrics_path))
    return table


def agreement_stage(corpus_files: Sequence[str], analysis: dict[str, Any], tolerance: int, out: str) -> pd.DataFrame:
    """``agreement.parquet``: thinkprobe's TUs vs the LLM step labels of steering-thinking-llms files
    (:func:`thinkprobe.stats.agreement.agreement_table`)."""
    from ..params import Params
    from ..stats.agreement import agreement_table

    table = agreement_table(list(corpus_files), Params.from_dict(analysis), tolerance=tolerance)
    write_table(out, table, _prov(agreement_stage, {"analysis": analysis, "tolerance": tolerance}, corpus_files))
    return table


def claims_stage(tables: dict[str, str], metrics_path: str, cycles_path: str | None, ablation_traces_path: str | None,
                 out: str, bootstrap: dict[str, Any], alpha: float, dimensions=None,
                 permutation: dict[str, Any] | None = None) -> pd.DataFrame:
    """``claims.parquet``: the checks against the paper (:mod:`.claims`): replications with bootstrap intervals
    over prompts (``bootstrap``: ``{"B", "seed", "level"}``, config ``stats.bootstrap``, ``bootstrap_seed``,
    ``interval_level``), identities verified on the tables, and findings that are not comparable."""
    from ..stats.claims import claims_table

    boot = dict(bootstrap)
    read = {name: pd.read_parquet(path) for name, path in tables.items()}
    opt = lambda p: pd.read_parquet(p) if p else None  # noqa: E731
    table = claims_table(read, pd.read_parquet(metrics_path), opt(cycles_path), opt(ablation_traces_path),
                         dimensions=dimensions, b=int(boot["B"]), seed=int(boot["seed"]), level=float(boot["level"]),
                         alpha=alpha, permutation=permutation)
    inputs = [*tables.values(), metrics_path, *(p for p in (cycles_path, ablation_traces_path) if p)]
    from ..stats.register import register_digest

    write_table(out, table, _prov(claims_stage, {"dimensions": dimensions, "bootstrap": boot, "alpha": alpha,
                                             "permutation": permutation, "register_sha256": register_digest(),
                                             "unit": "prompt (cluster bootstrap)"}, inputs, metrics_path))
    return table


def summary_stage(kruskal_path: str, out: str) -> str:
    """``summary.md``: the results summary (:mod:`thinkprobe.stats.results_text`) of the tables beside ``kruskal_path``."""
    from pathlib import Path

    from ..outputs import atomic_write_bytes
    from ..stats.results_text import summary_text

    text = summary_text(Path(kruskal_path).parent)
    atomic_write_bytes(out, text.encode("utf-8"))
    return text


def table_pages(tables: dict[str, str], titles: dict[str, str], outputs: dict[str, str]) -> None:
    """One HTML page (table + provenance) per statistics table, for the Snakemake report."""
    from .tables import html_table

    for name, path in tables.items():
        html_table(path, outputs[name], titles.get(name, name))


def draw(figure: str, inputs: dict[str, str], outputs: Sequence[str], params: dict[str, Any], code: str) -> None:
    """Draw one statistics figure (PNG and PDF) from its input tables, with a provenance footer."""
    from .. import __version__
    from ..outputs import sha256_file
    from ..stats import figures as fig

    footer = f"thinkprobe {__version__} | code {code[:12]} | " + "; ".join(
        f"{p} sha256 {sha256_file(p)[:16]}" for p in inputs.values())
    read = {k: pd.read_parquet(v) for k, v in inputs.items()}
    outs = list(outputs)
    if figure == "radar":
        fig.radar_per_model(read["profiles"], outs, footer)
    elif figure == "effects":
        fig.effect_sizes(read["kruskal"], outs, params["effect_small"], params["effect_large"], footer)
    elif figure == "model_domain":
        fig.model_domain_heatmaps(read["profiles"], outs, footer)
    elif figure == "dunn":
        fig.dunn_heatmap(read["dunn"], outs, footer)
    elif figure == "spearman":
        fig.correlation_heatmap(read["spearman"], outs, footer)
    elif figure == "cycles":
        fig.cycle_distributions(read["cycles"], read["summary"], outs, params["cycle_cap"], footer)
    elif figure == "cv":
        fig.cv_heatmap(read["cv"], outs, footer)
    elif figure == "cosine":
        fig.cosine_heatmap(read["cosine"], outs, footer)
    elif figure == "length":
        fig.length_confound_bars(read["confound"], outs, footer)
    else:
        raise ValueError(f"unknown statistics figure {figure!r}")
