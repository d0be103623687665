"""``thinkprobe plan``: what a study will cost, before an allocation is asked for (:mod:`thinkprobe.study.planner`).

    thinkprobe plan                                       # the embedded default (config/config.yaml)
    thinkprobe plan --configfile config/thinkprobe-paper.yaml
    thinkprobe plan --configfile my-study.yaml --json     # the rows as JSON

The config is read as Snakemake reads it (config/config.yaml, then each --configfile merged over it), and
checked as the workflow checks it: a problem that would stop a GPU job is an error naming its key (exit 2).
Traces already collected under DIR/results refine the expected lengths.
"""

from __future__ import annotations

import argparse
import json


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("plan", help="a study's jobs, GPUs, expected tokens and GPU hours (before running it)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configfile", nargs="+", default=[], metavar="YAML",
                   help="study config(s) merged over config/config.yaml, as `snakemake --configfile`")
    p.add_argument("--directory", "-d", default=".", metavar="DIR",
                   help="the workflow's working directory (its config/ and results/; default .)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    p.add_argument("--markdown", action="store_true", help="print the per-rule totals as a Markdown table")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..study.planchecks import study_size
    from ..study.planner import PlanError, plan_study, study_config
    from ..study.study_checks import check_study

    from ..generate.cluster import slurm_problems
    from ..generate.datasets import prepare_study

    config = study_config(args.configfile, args.directory)
    too_large = study_size(config, args.directory)  # before any list of units is built
    if too_large:
        raise PlanError("the study is too large to plan:\n  - " + "\n  - ".join(too_large))
    problems, pending = prepare_study(config, args.configfile, args.directory)  # datasets: fetched, lock kept
    problems += list(pending.values()) + check_study(config, args.directory) + slurm_problems(config)
    if problems:
        raise PlanError("the study cannot run as configured:\n  - " + "\n  - ".join(problems))
    plan = plan_study(config, args.directory)
    if args.markdown:
        print(plan.markdown())
    elif args.json:
        print(json.dumps(plan.as_json(), indent=1))
    else:
        print(plan.format())
    from ..generate.cluster import submit_limit, submit_warning

    warning = submit_warning(plan.total().slurm_jobs, submit_limit())
    if warning:
        import sys

        print(f"warning: {warning}", file=sys.stderr)
    over = plan.over_cap()
    if over:  # the table flags them; the workflow refuses to plan them
        raise PlanError(f"{len(over)} job(s) would ask for more than resources.max_runtime: split their batches "
                        f"(see the table)\n  - " + "\n  - ".join(over[:5]))
    return 0
