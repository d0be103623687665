"""What the SLURM cluster says about the config's placement keys, before any job is submitted.

``resources.slurm`` names the account and, for CPU and GPU jobs, the partition, QoS and node constraint;
``resources.gpu_model`` and ``models.<m>.gpu_model`` the GPU type; ``resources.max_runtime`` the longest wall time
a job may ask for. A name the cluster does not know would only show as a job that sbatch rejects (after the DAG is
built and other jobs are already queued) or that pends forever, so the workflow and ``thinkprobe plan`` ask the
cluster first: ``sinfo`` for partitions, their time limits and GPU types, ``sacctmgr`` for the user's accounts.
Each problem names its config key. When a command is missing, fails or times out, what it would have told is not
checked (a login node without SLURM's client tools, a cluster without accounting).
"""

from __future__ import annotations

import getpass
import re
import shutil
import subprocess
from typing import Any, Callable, Mapping

TIMEOUT_S = 10

Runner = Callable[[list[str]], str | None]


def run_command(cmd: list[str]) -> str | None:
    """stdout of a SLURM client command, or None when it is missing, fails or does not answer in time."""
    if not shutil.which(cmd[0]):
        return None
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def minutes(limit: str) -> int | None:
    """A SLURM time limit (``sinfo %l``: ``infinite``, ``30:00``, ``2-00:00:00``, ``1-12``) in minutes.

    >>> minutes("2-00:00:00"), minutes("30:00"), minutes("infinite"), minutes("1-12")
    (2880, 30, None, 2160)
    """
    limit = limit.strip()
    if not limit or limit in ("infinite", "UNLIMITED", "n/a"):
        return None
    days, _, rest = limit.rpartition("-")
    parts = [int(p) for p in rest.split(":")] if rest else []
    if days and len(parts) == 1:  # days-hours
        h, m, s = parts[0], 0, 0
    elif len(parts) == 3:
        h, m, s = parts
    elif len(parts) == 2:
        h, m, s = 0, parts[0], parts[1]
    elif len(parts) == 1:
        h, m, s = 0, parts[0], 0
    else:
        return None
    return int(days or 0) * 1440 + h * 60 + m + (1 if s else 0)


def partitions(run: Runner = run_command) -> dict[str, dict[str, Any]] | None:
    """Partition -> {default, limit (minutes or None), gpu_types} from ``sinfo``, or None when it cannot tell."""
    out = run(["sinfo", "-h", "-o", "%P|%l|%G"])
    if out is None:
        return None
    parts: dict[str, dict[str, Any]] = {}
    for line in out.splitlines():
        fields = line.split("|")
        if len(fields) != 3 or not fields[0].strip():
            continue
        name = fields[0].strip()
        entry = parts.setdefault(name.rstrip("*"), {"default": name.endswith("*"), "limit": minutes(fields[1]),
                                                   "gpu_types": set()})
        for gres in fields[2].split(","):
            m = re.match(r"gpu:([A-Za-z][\w.-]*):\d", gres.strip())
            if m:
                entry["gpu_types"].add(m.group(1))
    return parts or None


def accounts(run: Runner = run_command) -> set[str] | None:
    """The accounts the user may submit to, from ``sacctmgr``, or None when it cannot tell."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        return None
    out = run(["sacctmgr", "-n", "-P", "show", "assoc", f"user={user}", "format=account"])
    if out is None:
        return None
    found = {line.strip() for line in out.splitlines() if line.strip()}
    return found or None


def submit_limit(run: Runner = run_command) -> int | None:
    """The user's MaxSubmitJobs (jobs pending + running at once; the smallest of their associations), from
    ``sacctmgr``, or None when it cannot tell or sets none."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        return None
    out = run(["sacctmgr", "-n", "-P", "show", "assoc", f"user={user}", "format=MaxSubmitJobs"])
    limits = [int(x) for x in (out or "").split() if x.strip().isdigit()]
    return min(limits) if limits else None


def submit_warning(slurm_jobs: int, limit: int | None) -> str | None:
    """What the plan says when the study's SLURM jobs exceed the user's MaxSubmitJobs.

    >>> submit_warning(1955, 1000).startswith("the study submits 1,955 SLURM jobs; your MaxSubmitJobs is 1,000")
    True
    >>> submit_warning(500, 1000) is None and submit_warning(500, None) is None
    True
    """
    if limit is None or slurm_jobs <= limit:
        return None
    return (f"the study submits {slurm_jobs:,} SLURM jobs; your MaxSubmitJobs is {limit:,} (sacctmgr): sbatch refuses "
            f"a job beyond it. Snakemake keeps at most `jobs` in flight (profiles/slurm: 200), so keep the profile's "
            f"`jobs` (or --jobs) below {limit:,}; grouping lowers the total: larger resources.batch_questions "
            "(analysis jobs per batch of questions), collection.batch_questions and "
            "trajectories.batch_questions(_by_model) (generation jobs per batch)")


def slurm_problems(config: Mapping[str, Any], run: Runner = run_command) -> list[str]:
    """The placement keys the cluster contradicts, each naming its key; empty when SLURM cannot tell. Only keys
    the config sets are checked (a study run without SLURM sets none), so a machine without a cluster asks nothing."""
    res = config["resources"]
    slurm = res["slurm"]
    problems: list[str] = []
    named = {kind: slurm[kind]["partition"] for kind in ("cpu", "gpu") if slurm[kind]["partition"]}
    wanted = {"resources.gpu_model": res["gpu_model"]} | {
        f"models.{m}.gpu_model": (cfg or {}).get("gpu_model") for m, cfg in (config.get("models") or {}).items()}
    wanted = {k: v for k, v in wanted.items() if v}
    parts = partitions(run) if named or wanted else None
    if parts:
        known = ", ".join(sorted(parts))
        for kind, name in named.items():
            if name not in parts:
                problems.append(f"resources.slurm.{kind}.partition = {name!r}: the cluster has no such partition "
                                f"(sinfo: {known})")
                continue
            limit = parts[name]["limit"]
            if limit is not None and int(res["max_runtime"]) > limit:
                problems.append(f"resources.max_runtime = {res['max_runtime']} min is more than the {limit} min time "
                                f"limit of partition {name!r} (resources.slurm.{kind}.partition): sbatch would reject a "
                                "job asking more; set it to the limit")
        types = set().union(*(p["gpu_types"] for p in parts.values()))
        for key, gpu in wanted.items():
            if gpu not in types:
                problems.append(f"{key} = {gpu!r}: no node offers that GPU type (sinfo: "
                                f"{', '.join(sorted(types)) or 'GPUs without a type name'})")
    if slurm["account"]:
        known_accounts = accounts(run)
        if known_accounts is not None and slurm["account"] not in known_accounts:
            problems.append(f"resources.slurm.account = {slurm['account']!r}: not an account of this user "
                            f"(sacctmgr: {', '.join(sorted(known_accounts))})")
    return problems
