# Configuration checks, unit planning and helpers shared by every rule.
#
# The configuration is validated against config/schema.yaml (defaults filled in) before any job runs; a
# bad key stops Snakemake with a message naming the key, the value and what is allowed. The inputs are
# read once here to plan the units: model x question set x question x run. Analysis jobs are sharded per
# question (wildcards question_set, question_id), each writing one file per unit.

from snakemake.exceptions import WorkflowError

from thinkprobe.config import ConfigError, load_schema, validate_config
from thinkprobe.outputs import source_hash
from thinkprobe.stages import graph as _graph_stage
from thinkprobe.stages import ingest as _ingest_stage
from thinkprobe.stages import metrics as _metrics_stage
from thinkprobe.stages import segment as _segment_stage
from thinkprobe.stages import tables as _tables_stage
from thinkprobe.units import InputError, discover


try:
    _validated = validate_config(dict(config), load_schema(workflow.source_path("../config/schema.yaml")))
except ConfigError as exc:
    raise WorkflowError(str(exc))
config.clear()
config.update(_validated)

try:
    PLAN = discover(
        config["inputs"],
        base=".",
        max_bytes=config["analysis"]["input"]["max_trace_bytes"],
        models=[str(m) for m in config["units"]["models"]],
        runs=[str(r) for r in config["units"]["runs"]],
    )
except InputError as exc:
    raise WorkflowError(f"invalid input: {exc}")
if not PLAN.records:
    raise WorkflowError(
        "no traces found in the configured inputs: "
        + ", ".join(e["path"] for e in config["inputs"])
        + (f" ({len(PLAN.problems)} item(s) could not be read)" if PLAN.problems else "")
    )

MODELS = PLAN.models
RUNS = PLAN.runs
SHARDS = [(qset, qid) for qset, qids in PLAN.questions.items() for qid in qids]
# Batches of questions: a batch's analysis jobs form one connected component of group "analysis" (joined
# by the batch manifest), so a SLURM job runs a whole batch with one Snakemake start. Adding a question only
# changes its batch's manifest, a job that writes one small file.
_B = config["resources"]["batch_questions"]
BATCHES = {
    (qset, f"b{k // _B:04d}"): qids[k : k + _B]
    for qset, qids in PLAN.questions.items()
    for k in range(0, len(qids), _B)
}
ANALYSIS = config["analysis"]

# Source hash of the thinkprobe modules behind each stage (editing a module reruns the stages using it).
CODE = {
    "import": source_hash(_ingest_stage.MODULES),
    "segment": source_hash(_segment_stage.MODULES),
    "graph": source_hash(_graph_stage.MODULES),
    "metrics": source_hash(_metrics_stage.MODULES),
    "aggregate": source_hash(_tables_stage.AGGREGATE_MODULES),
    "profiles": source_hash(_tables_stage.PROFILE_MODULES),
    "figures": source_hash(["figures", "metrics"]),
}


def file_sha(path):
    """Content hash of a user file read by a stage (e.g. a custom lexicon); '' for the packaged default."""
    from thinkprobe.outputs import sha256_file

    return sha256_file(path) if path else ""


def unit_files(stage, ext):
    """The per-unit files of one question shard, model-major then run (the order scripts rely on)."""
    return [
        f"results/{stage}/{model}/{{question_set}}/{{question_id}}/{run}.{ext}"
        for model in MODELS
        for run in RUNS
    ]


def unit_paths(wildcards):
    return [f"{m}/{wildcards.question_set}/{wildcards.question_id}/{r}" for m in MODELS for r in RUNS]


def all_unit_files(stage, ext):
    return [
        f"results/{stage}/{m}/{qset}/{qid}/{r}.{ext}"
        for qset, qid in SHARDS
        for m in MODELS
        for r in RUNS
    ]


def batch_metric_files(wildcards):
    qids = BATCHES[(wildcards.question_set, wildcards.batch)]
    return [f"results/metrics/{m}/{wildcards.question_set}/{q}/{r}.json" for q in qids for m in MODELS for r in RUNS]


def sections(*names):
    return {name: ANALYSIS[name] for name in names}


# On a GPU node the encoding job takes all of its allocation's CPUs (threads are capped at --cores), so a
# group job never runs two GPU jobs side by side and asks SLURM for exactly one GPU.
SEGMENT_THREADS = 10**6 if config["resources"]["encoder_gpu"] else config["resources"]["analysis_threads"]

GPU_RESOURCES = (
    {"gpu": 1, **({"gpu_model": config["resources"]["gpu_model"]} if config["resources"]["gpu_model"] else {})}
    if config["resources"]["encoder_gpu"]
    else {}
)

