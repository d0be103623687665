"""thinkprobe: reasoning traces -> Thought Graphs -> 19 metrics -> 5D cognitive profiles -> report.

    snakemake --profile profiles/local                        # the embedded default (config/config.yaml)
    snakemake --profile profiles/slurm --configfile my.yaml   # a study on a SLURM cluster
    snakemake --report report.html                            # tables and figures with their provenance
"""

from snakemake.utils import min_version

min_version("9.0")

# Every config file is read within bounds first (thinkprobe.yamlread: no YAML alias, bounded size and node
# count), before the configfile directive merges them, which walks every value: an alias bomb given as
# --configfile stops here with a message naming the file and line (issue 37, item 5).
from snakemake.exceptions import WorkflowError as _WorkflowError
from thinkprobe.yamlread import read_yaml as _read_yaml

import os as _os

# the default is read where the configfile directive reads it (the working directory); like that directive, a
# working directory without it is fine when --configfile names the config
for _path in [*(["config/config.yaml"] if _os.path.exists("config/config.yaml") else []),
              *(workflow.overwrite_configfiles or [])]:
    try:
        _read_yaml(_path)
    except (OSError, ValueError) as _exc:
        raise _WorkflowError(f"config file {_path}: {_exc}")


# Snakemake 9 never evaluates a job downstream of a rerunning job through ancient inputs only (a target left
# unbuilt, a rerun after a move): corrected before any rule is planned (thinkprobe.dagfix; issue 37, items 7, 8).
from thinkprobe import dagfix as _dagfix
import sys as _sys

try:
    _dagfix.install()
except _dagfix.DagFixError as _exc:
    # another Snakemake's planning code: the workflow still runs, with the two effects the correction removes
    print(f"thinkprobe: warning: {_exc}. Without the correction, a target downstream of a rerunning collection "
          "may be left unbuilt (rerun to build it) and a moved results/ plans jobs twice.", file=_sys.stderr)


configfile: "config/config.yaml"


wildcard_constraints:
    question_set="[A-Za-z0-9._-]+",
    question_id="[A-Za-z0-9._-]+",
    batch="b[0-9]+",


include: "rules/common.smk"
include: "rules/models.smk"
include: "rules/collect.smk"
include: "rules/segment.smk"
include: "rules/graph.smk"
include: "rules/metrics.smk"
include: "rules/report.smk"
include: "rules/stats.smk"
include: "rules/trajectories.smk"
include: "rules/pages.smk"
include: "rules/validity.smk"


rule all:
    default_target: True
    input:
        "results/tables/metrics.parquet",
        "results/tables/exclusions.parquet",
        "results/tables/profiles.parquet",
        "results/figures/profile_radar.png",
        "results/figures/metric_heatmap.png",
        "results/report/metrics.html",
        "results/report/exclusions.html",
        "results/report/profiles.html",
        manifests("metrics"),  # every analysis batch (rules/common.smk)
        study_targets("stats", "trajectories", "pages", "model_pages", "validity"),  # what the rule files registered


place_slurm_jobs(workflow.rules)  # resources.slurm: account, partitions, QoS, constraints (rules/common.smk)
