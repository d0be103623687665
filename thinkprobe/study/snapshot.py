"""The committed snapshot of a study's results: what it holds, when it is stale, how it is re-derived and re-taken.

A snapshot (``docs/results/<name>/``) is what the documentation quotes: the statistics tables the summary
reads (:data:`thinkprobe.stats.results_text.SNAPSHOT_TABLES`), the per-trace tables behind them (:data:`TRACE_TABLES`: the
metrics of every trace, the cycle census of every graph, the layer ablation's per-trace values), the layer
ablation of a few corpus sets beside the paper's Table 6 (``ablate-<set>.parquet``, :data:`ABLATION_SETS`),
and ``run.json``: commit, date, command, how long each step took, the code hash of every table
(:func:`table_code`) and the claim register it was checked against (:func:`register_record`). Everything in the pages comes from these files through :mod:`thinkprobe.stats.page_blocks`.

*Stale*: a table is stale when the code (or the configuration) that computes it has changed since the
snapshot was taken: :func:`stale_tables` compares ``run.json``'s hashes with today's, and
``tests/test_results_summary.py`` fails naming the stale tables and the command below.

*Re-derived*: the statistics that only need the per-trace tables (Kruskal-Wallis and its nulls, the
length-excluded profile, the length-partialled effects, the aggregation robustness, the cycle summary, the
ablation means, the checks against the paper's claim register) can be recomputed from the snapshot alone
(:func:`rederive`); seeded permutations and
bootstraps make a re-derivation equal to the snapshot, bit for bit, whenever the code is unchanged.

*Re-taken*: :func:`thinkprobe.study.retake.retake` reruns the corpus study (Snakemake reruns only the jobs whose code or inputs
changed), runs the layer ablation of the corpus sets, replaces the snapshot and regenerates every page:

    thinkprobe summary --retake docs/results/corpus-study --corpus CORPUS_DIR
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from ..stats.page_blocks import ABLATION_SETS, DEFAULT_SNAPSHOT
from ..stats.results_text import RUN_FILE, SNAPSHOT_TABLES, load_tables

STUDY_CONFIG = "config/corpus-study.yaml"
# the per-trace tables of a snapshot, and where a study's results folder holds them
TRACE_TABLES = {"metrics": "tables/metrics.parquet", "cycles": "stats/cycles.parquet",
                "ablation_traces": "stats/ablation_traces.parquet"}

# the rule of each stage whose name differs (a stats stage `stats.<kind>` is rule stats_<kind>)
RULE_OF = {"import": "import_traces"}
# the upstream stages of each table (their code hashes make the table's), besides its own stats rule
_METRICS_CHAIN = ("import", "segment", "graph", "metrics", "aggregate")  # metrics writes the batch manifests
TABLE_CHAINS: dict[str, tuple[str, ...]] = {
    "metrics": _METRICS_CHAIN,
    "cycles": ("import", "segment", "graph", "stats.cycles"),
    "ablation_traces": ("import", "stats.ablation"),
    "kruskal": (*_METRICS_CHAIN, "profiles", "stats.kruskal"),
    "model_vs_domain": (*_METRICS_CHAIN, "profiles", "stats.kruskal"),
    "length_excluded": (*_METRICS_CHAIN, "stats.confound"),
    "length_partial": (*_METRICS_CHAIN, "stats.confound"),
    "aggregation_robustness": (*_METRICS_CHAIN, "stats.robustness"),
    "cycles_summary": ("import", "segment", "graph", "stats.cycles"),
    "ablation": ("import", "stats.ablation"),
    "encoder_sensitivity": (*_METRICS_CHAIN, "stats.sensitivity"),
    "agreement": ("stats.agreement",),
    "claims": (*_METRICS_CHAIN, "profiles", "stats.kruskal", "stats.confound", "stats.robustness", "stats.cycles",
               "stats.ablation", "stats.sensitivity", "stats.agreement", "stats.claims"),
    "ablate": ("ablate",),
}
# tables whose rows the claim register (thinkprobe/data/claims.yaml) decides: its sha256 is part of their code hash
REGISTER_TABLES = ("claims",)
# tables that only need the snapshot's per-trace tables: re-derivable without the corpus
REDERIVABLE = ("kruskal", "model_vs_domain", "length_excluded", "length_partial", "aggregation_robustness",
               "cycles_summary", "ablation", "claims")


def stage_hashes() -> dict[str, str]:
    """Today's source hash of every stage a snapshot table depends on: the ``code`` param of its rule
    (:func:`thinkprobe.rulebook.code`, as the rule files compute it), from the rule scripts of this checkout
    (:func:`thinkprobe.rulebook.scripts_dir`: an error naming what is missing outside a checkout)."""
    from .. import rulebook
    from ..codedeps import code_modules
    from ..encoder import load_encoder
    from ..outputs import source_hash
    from ..params import Params
    from ..pipeline import ablation
    from ..traces import read_traces

    stages = {s for chain in TABLE_CHAINS.values() for s in chain if s != "ablate"}
    folder = rulebook.scripts_dir()
    out = {s: rulebook.code(RULE_OF.get(s, s.replace(".", "_")), folder) for s in stages}
    # `thinkprobe ablate`: the pipeline's ablation on traces read from files, with the encoder and parameters
    out["ablate"] = source_hash(code_modules(ablation, read_traces, load_encoder, Params))
    return out


def study_config(configfiles: tuple[str, ...] = (STUDY_CONFIG,), root: str | Path = ".") -> dict[str, Any]:
    """The configuration of a study with the schema's defaults filled in: config/config.yaml updated by
    ``configfiles`` (as Snakemake's ``--configfile`` does: mappings merged key by key, anything else replaced).

    Not checked against this machine (input files, encoders): the values are what matters here (the code
    hashes of :func:`table_code`, the parameters of :func:`rederive`), and a machine without the study's
    inputs or second encoder must still be able to tell whether the snapshot is current.
    """
    from ..config import _fill_defaults, load_schema
    from ..yamlread import read_yaml

    root = Path(root)

    def merge(a: dict, b: dict) -> dict:
        out = dict(a)
        for k, v in b.items():
            out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
        return out

    cfg = read_yaml(root / "config" / "config.yaml")
    for f in configfiles:
        cfg = merge(cfg, read_yaml(root / f) or {})
    return _fill_defaults(cfg, load_schema(root / "config" / "schema.yaml"))


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def table_code(config: dict[str, Any], hashes: dict[str, str] | None = None,
               root: str | Path = ".") -> dict[str, str]:
    """Per snapshot table: one sha256 over the code hashes of its stages and the configuration it reads
    (``analysis`` for every table; ``stats`` for the statistics; for the claims table also the sha256 of the
    claim register of the package under ``root`` (``thinkprobe/data/claims.yaml``), so a criterion edited after the snapshot makes the
    claims table stale)."""
    from ..stats.register import register_digest

    hashes = hashes or stage_hashes()
    analysis, stats = config.get("analysis"), config.get("stats")
    out = {}
    for table, chain in TABLE_CHAINS.items():
        uses_stats = any(s.startswith("stats.") for s in chain)
        block = {"code": {s: hashes[s] for s in chain}, "analysis": analysis, "stats": stats if uses_stats else None}
        if table in REGISTER_TABLES:
            block["register"] = register_digest(root)
        out[table] = _digest(block)
    return out


def register_record(root: str | Path = ".") -> dict[str, str]:
    """What ``run.json`` records of the claim register: its path, sha256 and the last commit that changed it
    (criteria are committed before the run that uses them; a later edit shows in the history)."""
    from ..stats.register import REGISTER, register_commit, register_digest

    return {"path": REGISTER, "sha256": register_digest(root), "commit": register_commit(root)}


def stale_tables(snapshot_dir: str | Path, root: str | Path = ".") -> list[str]:
    """The tables of a snapshot whose code or configuration changed since it was taken (by ``run.json``)."""
    run = json.loads((Path(snapshot_dir) / RUN_FILE).read_text(encoding="utf-8"))
    recorded = run.get("code") or {}
    today = table_code(study_config(tuple(run.get("configfiles") or (STUDY_CONFIG,)), root), root=root)
    present = [t for t in TABLE_CHAINS if t == "ablate" or (Path(snapshot_dir) / f"{t}.parquet").exists()]
    return [t for t in present if recorded.get(t) != today[t]]


def _trace_source(results: Path, name: str) -> Path:
    """A per-trace table in a snapshot (``<name>.parquet``) or in a study's results folder."""
    flat = results / f"{name}.parquet"
    return flat if flat.exists() else results / TRACE_TABLES[name]


def compact_provenance(block: Any, limit: int = 20) -> Any:
    """``block`` with every ``inputs`` map of more than ``limit`` files replaced by its file count and one
    sha256 over its sorted ``path sha256`` lines: the provenance of a study table names hundreds of unit
    files, which would make a snapshot megabytes; the digest still identifies exactly the same inputs."""
    if isinstance(block, dict):
        out = {}
        for key, value in block.items():
            if key == "inputs" and isinstance(value, dict) and len(value) > limit:
                lines = "\n".join(f"{p} {h}" for p, h in sorted(value.items()))
                out[key] = {"n_files": len(value), "sha256_of_sorted_lines": hashlib.sha256(lines.encode()).hexdigest()}
            else:
                out[key] = compact_provenance(value, limit)
        return out
    if isinstance(block, list):
        return [compact_provenance(v, limit) for v in block]
    return block


def relocate(block: Any, prefixes: dict[str, str]) -> Any:
    """``block`` with every string (mapping keys included) that starts with one of ``prefixes`` rewritten to its
    replacement: a snapshot names the corpus folder ``CORPUS_DIR`` and the checkout's own files relatively,
    never a path of the machine it was taken on."""
    if isinstance(block, str):
        for prefix, repl in prefixes.items():
            if prefix and block.startswith(prefix):
                return repl + block[len(prefix):]
        return block
    if isinstance(block, dict):
        return {relocate(k, prefixes): relocate(v, prefixes) for k, v in block.items()}
    if isinstance(block, list):
        return [relocate(v, prefixes) for v in block]
    return block


def _copy_table(src: Path, dest: Path, prefixes: dict[str, str]) -> None:
    from ..outputs import read_table_metadata, write_table

    write_table(dest, pd.read_parquet(src), relocate(compact_provenance(read_table_metadata(src)), prefixes))


def git_commit(root: str | Path = ".") -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=root, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def snapshot(results_dir: str | Path, dest: str | Path, command: str, name: str | None = None,
             replace: bool = False, extra: dict[str, Any] | None = None, sets_dir: str | Path | None = None,
             configfiles: tuple[str, ...] = (STUDY_CONFIG,), root: str | Path = ".",
             corpus: str | Path | None = None) -> Path:
    """Copy a study's statistics and per-trace tables (``results_dir``: the results folder, or its ``stats``
    subfolder) to ``dest`` with ``run.json`` (name, commit, date, command, code hashes) and ``summary.md``.

    An existing snapshot is replaced only with ``replace`` (a re-take), atomically: the new one is assembled
    beside it and renamed into place. ``sets_dir`` holds ``ablate-<set>.parquet`` tables to keep too. Paths in
    the tables' provenance are relocated (:func:`relocate`): under ``corpus`` to ``CORPUS_DIR``, under the
    checkout (``root``) to relative ones.
    """
    from ..outputs import atomic_write_bytes
    from ..stats.results_text import markdown, read_run

    src = Path(results_dir)
    stats = src / "stats" if (src / "stats" / "kruskal.parquet").exists() else src
    results = stats.parent if stats.name == "stats" else stats
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()) and not replace:
        raise FileExistsError(f"{dest}: a snapshot is already there (re-take it with --retake, or choose a new name)")
    load_tables(stats)  # refuses a folder without the tables
    prefixes = {f"{Path(root).resolve()}/": ""}
    if corpus is not None:
        prefixes = {f"{Path(corpus).resolve()}/": "CORPUS_DIR/", f"{os.path.abspath(corpus)}/": "CORPUS_DIR/",
                    f"{os.path.normpath(corpus)}/": "CORPUS_DIR/", **prefixes}
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        for n in SNAPSHOT_TABLES:
            if (stats / f"{n}.parquet").exists():
                _copy_table(stats / f"{n}.parquet", tmp / f"{n}.parquet", prefixes)
        for n in TRACE_TABLES:
            path = _trace_source(results, n)
            if path.exists():
                _copy_table(path, tmp / f"{n}.parquet", prefixes)
        for path in sorted(Path(sets_dir).glob("ablate-*.parquet")) if sets_dir else []:
            _copy_table(path, tmp / path.name, prefixes)
        run = {"name": name or dest.name, "commit": git_commit(root),
               "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "command": command,
               "configfiles": list(configfiles), "code": table_code(study_config(configfiles, root), root=root),
               "register": register_record(root), **(extra or {})}
        atomic_write_bytes(tmp / RUN_FILE, (json.dumps(run, indent=2) + "\n").encode())
        atomic_write_bytes(tmp / "summary.md", markdown(load_tables(tmp), read_run(tmp), str(dest)).encode())
        os.chmod(tmp, 0o777 & ~_umask())
        if dest.exists():
            old = dest.with_name(f".{dest.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            dest.rename(old)
            tmp.rename(dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _umask() -> int:
    from ..outputs import current_umask

    return current_umask()


def rederive(snapshot_dir: str | Path, out_dir: str | Path, root: str | Path = ".") -> dict[str, Path]:
    """Recompute the :data:`REDERIVABLE` tables from a snapshot's per-trace tables into ``out_dir``, with the
    parameters of the snapshot's study configuration; returns ``{table: path}``.

    The corpus-dependent tables (``encoder_sensitivity``, ``agreement``) are copied, since the checks read
    them. A rerun on the same tables gives the same bytes of data (seeded permutations and bootstraps).
    """
    from ..stages.tables import profiles_table
    from ..stats.ablation import ablation_means
    from ..stats.cycles import cycle_summary
    from ..stages.stats import claims_stage, confound_stage, kruskal_stage, robustness_stage, rule_params

    snap, out = Path(snapshot_dir), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    run = json.loads((snap / RUN_FILE).read_text(encoding="utf-8")) if (snap / RUN_FILE).exists() else {}
    params = rule_params(study_config(tuple(run.get("configfiles") or (STUDY_CONFIG,)), root))
    metrics = str(snap / "metrics.parquet")
    profiles = str(out / "profiles.parquet")
    profiles_table(metrics, profiles, dimensions=params["dimensions"])
    p = {n: out / f"{n}.parquet" for n in REDERIVABLE}
    kruskal_stage(metrics, profiles, str(p["kruskal"]), str(p["model_vs_domain"]), params["groupings"],
                  params["permutation"])
    confound_stage(metrics, str(out / "length_confound.parquet"), str(p["length_excluded"]), params["groupings"],
                   params["dimensions"], params["permutation"], str(p["length_partial"]))
    robustness_stage(metrics, str(p["aggregation_robustness"]), params["dimensions"])
    cycle_summary(pd.read_parquet(snap / "cycles.parquet")).to_parquet(p["cycles_summary"])
    ablation_means(pd.read_parquet(snap / "ablation_traces.parquet")).to_parquet(p["ablation"])
    tables = {n: str(p[n]) for n in ("kruskal", "model_vs_domain", "length_excluded", "length_partial",
                                     "aggregation_robustness", "cycles_summary", "ablation")}
    for n in ("encoder_sensitivity", "agreement"):
        if (snap / f"{n}.parquet").exists():
            shutil.copyfile(snap / f"{n}.parquet", out / f"{n}.parquet")
            tables[n] = str(out / f"{n}.parquet")
    claims_stage(tables, metrics, str(snap / "cycles.parquet"), str(snap / "ablation_traces.parquet"),
                 str(p["claims"]), params["bootstrap"], params["alpha"], params["dimensions"], params["permutation"])
    return p


def study_override(corpus: str | Path, path: str | Path, root: str | Path = ".") -> Path:
    """Write a config file whose ``inputs`` are the corpus study's inputs read from a local copy of their
    repositories under ``corpus`` (``<corpus>/<repository name>/<path>``) instead of fetched by git: the
    entries of ``config/corpus-study.yaml`` (their one home), each ``git:`` source replaced by that path."""
    from glob import glob

    import yaml

    from ..yamlread import read_yaml

    corpus = Path(corpus).resolve()
    study = read_yaml(Path(root) / STUDY_CONFIG)
    inputs = []
    for i, entry in enumerate(study["inputs"]):
        entry = dict(entry)
        git = entry.pop("git", None)
        if git is None:
            inputs.append(entry)
            continue
        repo = git["url"].rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
        pattern = str(corpus / repo / git["path"])
        if not glob(pattern):
            raise FileNotFoundError(f"--corpus {corpus}: nothing matches {pattern} ({STUDY_CONFIG} inputs[{i}]: "
                                    f"{git['url']} at {git['commit'][:12]}, path {git['path']}; the corpus folder "
                                    "holds one folder per repository)")
        inputs.append({**entry, "path": pattern})
    Path(path).write_text(yaml.safe_dump({"inputs": inputs}, sort_keys=False), encoding="utf-8")
    return Path(path)


def run_ablation_sets(corpus: str | Path, out_dir: str | Path) -> dict[str, float]:
    """``thinkprobe ablate`` of each :data:`ABLATION_SETS` file into ``out_dir/ablate-<set>.parquet``;
    returns the seconds each took."""
    corpus, out = Path(corpus), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    took = {}
    for name, _, rel, whole in ABLATION_SETS:
        if not (corpus / rel).is_file():
            raise FileNotFoundError(f"--corpus {corpus}: no {rel} (ablation set {name})")
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "thinkprobe.cli", "ablate", str(corpus / rel), "--out",
               str(out / f"ablate-{name}.parquet")] + (["--whole-text"] if whole else [])
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        took[name] = round(time.perf_counter() - t0, 1)
    return took
