"""``thinkprobe preflight``: read a GPU node's facts and say whether the study's GPU environment runs there.

    thinkprobe preflight --configfile my-study.yaml          # a 1-GPU SLURM job of a few seconds (srun) on the
                                                             # study's GPU partition, or this node with --here
    thinkprobe preflight --configfile my-study.yaml --here   # on a GPU node itself (nvidia-smi answers)

It reads the NVIDIA driver version, glibc, each GPU's model and memory (:mod:`thinkprobe.generate.hostfacts`),
checks them against the variant ``environments.gpu_variant`` names (and ``resources.gpu_mem_gb``), and prints
what would fail and which variant to use. Exit 2 when the chosen variant cannot run there: run it before
submitting the study, since a GPU job on such a node fails only after it has waited for its allocation.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys

SRUN_TIMEOUT_S = 900  # the job may queue; srun waits for it


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("preflight", help="read a GPU node (driver, glibc, GPUs) and check the GPU environment",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configfile", nargs="+", default=[], metavar="YAML",
                   help="study config(s) merged over config/config.yaml, as `snakemake --configfile`")
    p.add_argument("--directory", "-d", default=".", metavar="DIR", help="the workflow's working directory")
    p.add_argument("--here", action="store_true", help="read this node instead of submitting a SLURM job")
    p.set_defaults(func=run)
    return p


def srun_command(config) -> list[str]:
    """The srun of the preflight job: one task, one GPU (of ``resources.gpu_model`` when set), 5 minutes, on the
    GPU placement the study's GPU jobs get (``resources.slurm``)."""
    res = config["resources"]
    slurm = res["slurm"]
    cmd = ["srun", "--ntasks=1", "--time=5", "--job-name=thinkprobe_preflight"]
    gpu = slurm["gpu"]
    for flag, value in (("--partition", gpu["partition"]), ("--qos", gpu["qos"]), ("--constraint", gpu["constraint"]),
                        ("--account", slurm["account"])):
        if value:
            cmd.append(f"{flag}={value}")
    cmd.append(f"--gpus={res['gpu_model']}:1" if res["gpu_model"] else "--gpus=1")
    return cmd + [sys.executable, "-m", "thinkprobe.generate.hostfacts"]


def read_node(config, here: bool):
    """The facts of the node, and how they were read."""
    from ..generate.hostfacts import HostFacts, read_host

    if here or not shutil.which("srun"):
        if not here:
            print("preflight: no srun on this machine: reading this node (run it on a GPU node, or where SLURM's "
                  "client tools are)", file=sys.stderr)
        return read_host(), "this node"
    cmd = srun_command(config)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=SRUN_TIMEOUT_S)
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("{")), None)
    if proc.returncode != 0 or line is None:
        from ..study.planner import PlanError

        raise PlanError(f"preflight: the GPU job did not run ({' '.join(cmd[:-3])} ...): "
                        f"{(proc.stderr or proc.stdout).strip()[-600:]}\n  check resources.slurm.gpu (partition, "
                        "qos, constraint), resources.slurm.account and resources.gpu_model")
    return HostFacts.from_dict(json.loads(line)), "a SLURM job (" + " ".join(cmd[1:-3]) + ")"


def run(args: argparse.Namespace) -> int:
    from ..generate.hostfacts import VARIANTS, suitable_variants, variant_problems
    from ..study.planner import study_config

    config = study_config(args.configfile, args.directory)
    chosen = config["environments"]["gpu_variant"]
    facts, how = read_node(config, args.here)
    print(f"preflight, read by {how}:\n  {facts.describe()}")
    if config["environments"]["gpu"]:
        print(f"  environments.gpu = {config['environments']['gpu']!r}: a pre-built environment; checked as "
              f"variant {chosen} (environments.gpu_variant)")
    errors, warnings = variant_problems(facts, chosen, config["resources"]["gpu_mem_gb"])
    fits = suitable_variants(facts)
    for w in warnings:
        print(f"  warning: {w}")
    for e in errors:
        print(f"  will fail: {e}")
    v = VARIANTS[chosen]
    if errors:
        print("  use: " + (f"environments.gpu_variant: {fits[0]}" if fits else
                           "no GPU environment variant runs on this node (see above)"))
        return 2
    print(f"  ok: environments.gpu_variant = {chosen} ({v.file}, CUDA {v.cuda}) runs on this node")
    return 0
