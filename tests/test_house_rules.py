"""The house rules every rule script and rule keeps (issue 18): job logs with tracebacks, derived code hashes."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import missing

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((REPO / "workflow" / "scripts").glob("*.py"))

# Runs one rule script the way Snakemake does (the script executed with a global `snakemake` object), with
# inputs that are corrupt files and params that are nonsense, so that the job fails inside its own code.
_RUNNER = r'''
import runpy, sys
from pathlib import Path

tmp = Path(sys.argv[2])


class Files(list):
    """Snakemake's named lists as a script sees them: by index, by name, as a mapping."""

    def __init__(self, kind):
        self.kind = kind
        super().__init__([self.path("first")])

    tmp = tmp

    def path(self, name):
        p = self.tmp / self.kind / name
        if self.kind == "in":
            p.write_text("neither a table nor JSON\n")
        return str(p)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self.path(name)

    def __getitem__(self, key):
        return self.path(key) if isinstance(key, str) else list.__getitem__(self, key)

    def keys(self):
        return ["first"]

    def items(self):
        return [("first", self.path("first"))]


class Job:
    config, rule, threads = {}, "job", 1


import json, os, traceback

results = {}
for script in sys.argv[3:]:  # one process for all scripts: each runs as Snakemake runs it, in turn
    job = tmp / Path(script).stem
    (job / "in").mkdir(parents=True, exist_ok=True)
    Files.tmp, Job.log = job, [str(job / "logs" / "job.log")]
    Job.input, Job.output, Job.params, Job.wildcards = Files("in"), Files("out"), Files("in"), Files("in")
    sys.stdout.flush()
    stdout = os.dup(1)  # the engine jobs send fd 1 to their log: give it back for the next script
    try:
        runpy.run_path(script, init_globals={"snakemake": Job()}, run_name="__main__")
        results[script] = None
    except Exception as exc:  # the job failed: what Python would print last
        results[script] = traceback.format_exception_only(type(exc), exc)[-1].strip()
    finally:
        os.dup2(stdout, 1)
        os.close(stdout)
print("RESULTS " + json.dumps(results))
'''


def _family(script: Path) -> str:
    name = script.stem
    if name.startswith("stats_"):
        return "stats"
    if name.startswith("traj_"):
        return "trajectories"
    if name in ("collect",):
        return "collection"
    if name in ("figures", "report_tables"):
        return "report"
    return "analysis"


@pytest.mark.fast
def test_every_family_has_rule_scripts():
    assert {_family(s) for s in SCRIPTS} == {"analysis", "stats", "trajectories", "collection", "report"}


@pytest.mark.fast
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: f"{_family(s)}-{s.stem}")
def test_rule_script_runs_its_body_inside_job_log(script):
    """Everything but the imports of the log itself runs inside ``with job_log(snakemake.log[0])``."""
    tree = ast.parse(script.read_text())
    body = [s for s in tree.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.If):  # `if __name__ == "__main__":` (vLLM re-imports)
        body = body[0].body
    withs = [s for s in body if isinstance(s, ast.With)]
    assert len(withs) == 1, f"{script.name}: expected one `with job_log(...)` block"
    call = withs[0].items[0].context_expr
    assert isinstance(call, ast.Call) and getattr(call.func, "id", None) == "job_log", script.name
    assert ast.unparse(call.args[0]) == "snakemake.log[0]", script.name
    outside = [s for s in body if s is not withs[0]]
    for stmt in outside:  # only the log's own set-up may run before the block
        assert isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Assign)), f"{script.name}: {ast.unparse(stmt)}"
        if isinstance(stmt, ast.Assign):
            assert ast.unparse(stmt.value) == "JobClock()", f"{script.name}: {ast.unparse(stmt)}"


@pytest.fixture(scope="module")
def failed_jobs(tmp_path_factory):
    """Every rule script run once with corrupt inputs (one process): {script: its exception, or None}."""
    import json

    tmp = tmp_path_factory.mktemp("jobs")
    runner = tmp / "runner.py"
    runner.write_text(_RUNNER)
    proc = subprocess.run([sys.executable, str(runner), "-", str(tmp), *map(str, SCRIPTS)], capture_output=True,
                          text=True, timeout=600, cwd=REPO)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")), None)
    assert line, f"the runner failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return tmp, json.loads(line[len("RESULTS "):])


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: f"{_family(s)}-{s.stem}")
def test_a_failing_job_of_every_rule_leaves_its_traceback_in_its_log(failed_jobs, script):
    tmp, results = failed_jobs
    error = results[str(script)]
    assert error, f"{script.name} did not fail on corrupt inputs"
    log = (tmp / script.stem / "logs" / "job.log").read_text()
    assert "Traceback (most recent call last)" in log, f"{script.name}: no traceback in its log:\n{log}"
    assert log.strip().splitlines()[-1] == error, f"{script.name}: the log does not end with {error!r}:\n{log}"

# ----------------------------------------------------- what a rule will need, checked with the config

def _config(**stats):
    from thinkprobe.config import load_schema, validate_config

    cfg = {"inputs": [{"path": "x", "question_set": "s"}], "stats": stats}
    return lambda: validate_config(cfg, load_schema(REPO / "config" / "schema.yaml"), "study.yaml")


@pytest.mark.fast
def test_second_encoder_of_the_shipped_corpus_study_is_installed_by_the_setup():
    """config/corpus-study.yaml names the packaged second encoder; the set-up's extras install it."""
    import yaml

    from thinkprobe.stats.sensitivity import PACKAGED, second_encoder_problem

    spec = yaml.safe_load((REPO / "config" / "corpus-study.yaml").read_text())["stats"]["sensitivity_encoder"]
    assert spec in PACKAGED
    extras = [line for line in (REPO / "scripts" / "setup.sh").read_text().splitlines() if line.startswith("extras=")]
    assert extras and "stats" in extras[0].split("=", 1)[1].strip('"').split(",")
    if second_encoder_problem(spec):  # the package itself: a skip here, a failure under CI
        missing(second_encoder_problem(spec))
    _config(sensitivity_encoder=spec)()  # accepted


@pytest.mark.fast
def test_an_unavailable_second_encoder_is_refused_before_any_job_with_its_key():
    from thinkprobe.config import ConfigError

    with pytest.raises(ConfigError) as err:
        _config(sensitivity_encoder="no-such-encoder-anywhere")()
    assert "stats.sensitivity_encoder = 'no-such-encoder-anywhere': not available" in str(err.value)
    assert "study.yaml" in str(err.value)


@pytest.mark.fast
def test_a_packaged_second_encoder_whose_package_is_missing_names_the_install_command(monkeypatch):
    from thinkprobe.config import ConfigError
    from thinkprobe.stats import sensitivity

    monkeypatch.setitem(sensitivity.PACKAGED, "uninstalled-encoder", ("Not-Installed-Encoder-Pkg", "m.onnx", 128))
    with pytest.raises(ConfigError) as err:
        _config(sensitivity_encoder="uninstalled-encoder")()
    assert "stats.sensitivity_encoder = 'uninstalled-encoder'" in str(err.value)
    assert "pip install not-installed-encoder-pkg" in str(err.value)


# ------------------------------------------------------------------ code hashes derived for every rule

# Parses the workflow (no job runs) and prints, for every rule, its script, its `code` param and the module
# list that hash was computed from (source_hash is wrapped to remember what it hashed).
_WRAPPER = '''
import json
import thinkprobe.outputs as _outputs

_MODULES_OF = {{}}
_source_hash = _outputs.source_hash


def _recording(modules):
    digest = _source_hash(modules)
    _MODULES_OF[digest] = sorted(modules)
    return digest


_outputs.source_hash = _recording

include: {snakefile!r}

_rules = {{}}
for _r in workflow.rules:
    _code = dict(_r.params.items()).get("code") if _r.params else None
    _code = _code if isinstance(_code, str) else None
    _rules[_r.name] = {{"script": _r.script, "code": _code, "modules": _MODULES_OF.get(_code),
                       "local": _r.name in workflow._localrules, "wildcards": sorted(_r.wildcard_names),
                       "conda": str(_r.conda_env) if _r.conda_env else None}}
print("RULES " + json.dumps(_rules))
'''

from .test_code_hashes import NO_CODE_PARAM  # noqa: E402 - rules without a code param, on purpose


def workflow_rules(tmp: Path, package_root: Path = REPO, extra: list[Path] = ()) -> dict[str, dict]:
    import json
    import os

    wd = tmp / "wd"
    wd.mkdir(parents=True, exist_ok=True)
    if not (wd / "examples").exists():
        (wd / "examples").symlink_to(REPO / "examples")
    wrapper = tmp / "wrapper.smk"
    wrapper.write_text(_WRAPPER.format(snakefile=str(REPO / "Snakefile")))
    config = tmp / "all-rules.yaml"  # every rule family defined: collection, stats with a second encoder
    config.write_text("stats: {sensitivity_encoder: paraphrase-MiniLM-L3-v2}\n")
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(wrapper), "-d", str(wd), "--list-rules",
                           "--configfile", str(REPO / "config" / "config.yaml"), str(config), *map(str, extra)],
                          capture_output=True, text=True, env=env, timeout=300, cwd=wd)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RULES ")), None)
    assert line, f"the workflow did not parse:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return json.loads(line[len("RULES "):])


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    from thinkprobe.stats.sensitivity import PACKAGED, second_encoder_problem

    if second_encoder_problem(next(iter(PACKAGED))):
        missing(second_encoder_problem(next(iter(PACKAGED))))
    return workflow_rules(tmp_path_factory.mktemp("rules"))


@pytest.mark.workflow
def test_every_rule_scripts_code_param_covers_what_its_script_reaches(rules):
    """For each rule: its `code` hash was computed from a module list containing every module the functions
    its script calls reach (thinkprobe.codedeps), so editing any of them reruns the rule."""
    from thinkprobe.codedeps import script_modules

    scripted = {name: r for name, r in rules.items() if r["script"]}
    assert {Path(r["script"]).stem for r in scripted.values()} == {s.stem for s in SCRIPTS}  # all scripts used
    for name, rule in scripted.items():
        if name in NO_CODE_PARAM:
            assert rule["code"] is None, name
            continue
        assert rule["code"], f"rule {name} has no code param"
        assert rule["modules"] is not None, f"rule {name}: its code param is not a source_hash of a module list"
        needed = set(script_modules(REPO / "workflow" / "scripts" / Path(rule["script"]).name))
        covered = set(rule["modules"])
        whole = {m.split(":")[0] for m in covered if ":" not in m}
        lacking = {m for m in needed if m not in covered and m.split(":")[0] not in whole}
        assert not lacking, f"rule {name}: its code hash misses {sorted(lacking)}"


UNIT_WILDCARDS = {"model", "question_set", "question_id", "run"}


@pytest.mark.workflow
def test_no_rule_runs_one_local_job_per_unit(rules):
    """A study of 75,000 units must not put 75,000 jobs on the login node (issue 23): no local rule's jobs are
    per unit (model x question set x question x run), and no rule at all writes one unit per job (the collected
    trace files are written by their collection job; analysis jobs are per question shard)."""
    assert rules, "no rule parsed"
    per_unit = {n for n, r in rules.items() if UNIT_WILDCARDS <= set(r["wildcards"])}
    assert not per_unit, f"rules with one job per unit: {sorted(per_unit)}"
    assert "collected_trace" not in rules
    local = {n for n, r in rules.items() if r["local"]}
    assert "collect" not in local and "traj_sample" not in local
    assert all("question_id" not in rules[n]["wildcards"] for n in local), sorted(local)


@pytest.mark.workflow
def test_rules_take_their_conda_environment_from_the_config(tmp_path):
    """envs/{cpu,gpu}.yaml by default; a pre-built environment on the shared file system when the config names it."""
    default = workflow_rules(tmp_path / "default")
    assert default["segment"]["conda"].endswith("envs/cpu.yaml") and default["collect"]["conda"].endswith("envs/gpu.yaml")
    prebuilt = tmp_path / "prebuilt.yaml"
    prebuilt.write_text("environments: {cpu: /shared/envs/thinkprobe-cpu, gpu: thinkprobe-gpu}\n")
    named = workflow_rules(tmp_path / "named", extra=[prebuilt])
    assert named["segment"]["conda"] == "/shared/envs/thinkprobe-cpu" and named["collect"]["conda"] == "thinkprobe-gpu"
    assert named["stats_kruskal"]["conda"] == "/shared/envs/thinkprobe-cpu"


@pytest.mark.workflow
def test_editing_the_encoder_reruns_traj_join_and_only_the_rules_that_encode(tmp_path, rules):
    """End to end: a copy of the package with encoder.py edited changes the `code` param of exactly the
    rules whose code reaches the encoder (traj_join among them), and of no other rule."""
    import shutil

    shutil.copytree(REPO / "thinkprobe", tmp_path / "pkg" / "thinkprobe",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "pkg" / "thinkprobe" / "encoder.py", "a") as fh:
        fh.write("\n# an edit\n")
    after = workflow_rules(tmp_path, tmp_path / "pkg")
    changed = {n for n in rules if rules[n]["code"] != after[n]["code"]}
    uses_encoder = {n for n, r in rules.items() if r["modules"] and "encoder" in r["modules"]}
    assert changed == uses_encoder
    assert {"traj_join", "segment", "stats_sensitivity", "stats_ablation", "stats_agreement"} <= changed
    assert not changed & {"graph", "metrics", "import_traces", "aggregate", "traj_label", "traj_tables", "collect",
                          "stats_kruskal", "stats_pages", "figures"}


@pytest.mark.workflow
def test_editing_a_page_template_reruns_the_page_rules_and_only_them(tmp_path, rules):
    """Templates are read at run time, not imported: a copy of the package with one template edited
    changes the `code` param of exactly the rules that write pages (trace pages, model summaries, the
    report's, the statistics' and the typer comparison's table pages), through the templating module's CODE_DATA."""
    import shutil

    shutil.copytree(REPO / "thinkprobe", tmp_path / "pkg" / "thinkprobe",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "pkg" / "thinkprobe" / "view" / "templates" / "table_page.html.j2", "a") as fh:
        fh.write("{# an edit #}\n")
    after = workflow_rules(tmp_path, tmp_path / "pkg")
    changed = {n for n in rules if rules[n]["code"] != after[n]["code"]}
    assert changed == {"trace_pages", "model_summaries", "report_tables", "stats_pages", "typer_comparison"}


# ------------------------------------------------------------------------------ one home per fact

@pytest.mark.fast
def test_engine_and_model_defaults_live_in_one_module_and_the_schema_reads_them():
    """The schema states no literal default for a model entry's keys; load_schema fills them from
    thinkprobe.generate.defaults, and they satisfy the schema's own constraints."""
    import re

    from jsonschema import Draft202012Validator

    from thinkprobe.config import load_schema
    from thinkprobe.generate import defaults

    text = (REPO / "config" / "schema.yaml").read_text()
    models_block = text[text.index("\n  models:\n"):text.index("\n  question_sets:\n")]
    entry_block = models_block[models_block.index("    additionalProperties:\n"):]
    assert not re.search(r"[{,]\s*default:|^\s*default:", entry_block, re.M), "a literal default in a model entry"
    entry = load_schema(REPO / "config" / "schema.yaml")["properties"]["models"]["additionalProperties"]
    for name, values in [("MODEL_DEFAULTS", defaults.MODEL_DEFAULTS), ("HTTP_DEFAULTS", defaults.HTTP_DEFAULTS)]:
        for key, value in values.items():
            assert entry["properties"][key]["default"] == value, f"{name}.{key}"
    engine = entry["properties"]["engine"]
    # max_model_len has no default: vLLM takes the model's own context length (issue 14)
    assert {k: p["default"] for k, p in engine["properties"].items() if "default" in p} == defaults.VLLM_ENGINE_DEFAULTS
    assert "default" not in engine["properties"]["max_model_len"]
    Draft202012Validator(entry).validate({"backend": "vllm", **defaults.MODEL_DEFAULTS, **defaults.HTTP_DEFAULTS,
                                          "engine": defaults.VLLM_ENGINE_DEFAULTS})
    from thinkprobe.generate import collection_jobs, http_engine, vllm_engine

    assert collection_jobs.MODEL_DEFAULTS is defaults.MODEL_DEFAULTS
    # the engines merge no defaults of their own: they read the ModelSpec's settings (the one merge, modelspec)
    assert not hasattr(http_engine, "HTTP_DEFAULTS") and not hasattr(vllm_engine, "ENGINE_DEFAULTS")


@pytest.mark.fast
def test_a_default_for_an_undeclared_key_is_refused(tmp_path):
    from thinkprobe.config import ConfigError, load_schema

    schema = tmp_path / "schema.yaml"
    schema.write_text("type: object\nproperties:\n  m:\n    type: object\n"
                      "    x-defaults-from: thinkprobe.generate.defaults.HTTP_DEFAULTS\n"
                      "    properties: {concurrency: {type: integer}}\n")
    with pytest.raises(ConfigError, match="'timeout_s', which the schema does not declare"):
        load_schema(schema)


@pytest.mark.workflow
def test_a_missing_question_set_file_stops_the_workflow_at_parse_time_naming_it(tmp_path):
    """A question set a collection job uses is loaded when the workflow is parsed: a missing file is an
    error naming the set and the file before any job runs (no engine is started)."""
    import os

    wd = tmp_path / "wd"
    wd.mkdir()
    (wd / "examples").symlink_to(REPO / "examples")
    config = tmp_path / "missing-set.yaml"
    config.write_text("question_sets:\n  gsm8k_demo: {source: gsm8k, path: examples/questions/no-such-file.jsonl}\n")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(wd), "-n",
                           "--configfile", str(REPO / "config" / "config.yaml"), str(config)],
                          capture_output=True, text=True, timeout=300, cwd=wd,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "question set 'gsm8k_demo'" in out and "no-such-file.jsonl" in out, out[-2000:]
    assert "Job stats" not in out and not (wd / "results").exists()


@pytest.mark.engine
@pytest.mark.workflow
def test_failing_jobs_of_every_rule_family_leave_their_traceback_under_snakemake(tmp_path):
    """Real Snakemake jobs, one per family, each given a corrupt input (or an unavailable model), fail; each
    log ends with the job's traceback (the stats logs were empty before, issue 18)."""
    import os

    wd = tmp_path / "wd"
    (wd / "results" / "tables").mkdir(parents=True)
    (wd / "examples").symlink_to(REPO / "examples")
    for name in ("metrics", "profiles"):
        (wd / "results" / "tables" / f"{name}.parquet").write_text("not a Parquet file\n")
    cont = wd / "results" / "continuations" / "smollm2" / "gsm8k_demo" / "b0000.json"
    cont.parent.mkdir(parents=True)
    cont.write_text("not JSON\n")
    config = tmp_path / "broken.yaml"  # collection: an endpoint that is down (known only when the job runs)
    config.write_text(
        "models:\n  down: {backend: openai, base_url: 'http://127.0.0.1:9/v1', max_retries: 0, timeout_s: 5}\n"
        "collection:\n  jobs:\n    - {model: smollm2, question_set: open_demo}\n"
        "    - {model: smollm2, question_set: gsm8k_demo, runs: 1}\n    - {model: down, question_set: open_demo}\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def run(rules, targets, *extra):
        return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(wd),
                               "--cores", "1", "--keep-going", "--configfile", str(REPO / "config" / "config.yaml"),
                               str(config), "--allowed-rules", *rules, *extra, "--", *targets],
                              capture_output=True, text=True, timeout=600, cwd=wd, env=env)

    jobs = {"stats_spearman": ("results/stats/spearman.parquet", "results/logs/stats/spearman.log"),
            "figures": ("results/figures/profile_radar.png", "results/logs/figures.log"),
            "traj_label": ("results/trajectories/smollm2/gsm8k_demo/b0000.json",
                           "results/logs/traj_label/smollm2/gsm8k_demo/b0000.log"),
            "collect": ("results/collect/down/open_demo/c0000.json", "results/logs/collect/down/open_demo/c0000.log")}
    first = run(list(jobs), [t for t, _ in jobs.values()])
    assert first.returncode != 0
    (wd / "results" / "tables" / "profiles.parquet").unlink()  # the analysis family: profiles from the metrics
    second = run(["profiles"], ["results/tables/profiles.parquet"])
    assert second.returncode != 0
    jobs["profiles"] = ("results/tables/profiles.parquet", "results/logs/profiles.log")
    for rule, (target, log) in jobs.items():
        assert not (wd / target).exists(), rule
        text = (wd / log).read_text() if (wd / log).exists() else ""
        assert "Traceback (most recent call last)" in text, f"{rule}: no traceback in {log}:\n{text[-1500:]}"
        assert text.strip().splitlines()[-1].split(":")[0].endswith(("Error", "Exception", "Invalid")), \
            f"{rule}: the log does not end with the error: {text.strip().splitlines()[-1]}"


@pytest.mark.fast
def test_a_collection_model_that_is_not_available_here_is_refused_with_its_key(tmp_path):
    from thinkprobe.config import ConfigError, load_schema, validate_config

    (tmp_path / "folder-without-config").mkdir()
    for path, says in [("no-such-model-folder", "does not exist"), (str(tmp_path / "folder-without-config"),
                                                                     "has no config.json")]:
        cfg = {"inputs": [{"path": "x", "question_set": "s"}],
               "models": {"m": {"backend": "vllm", "path": path}}, "question_sets": {"q": {"source": "builtin"}},
               "collection": {"jobs": [{"model": "m", "question_set": "q"}]}}
        with pytest.raises(ConfigError) as err:
            validate_config(cfg, load_schema(REPO / "config" / "schema.yaml"), "study.yaml")
        assert f"models.m.path = {path!r}: not available" in str(err.value) and says in str(err.value)
    cfg["collection"]["jobs"] = []  # a model no job uses is not checked
    validate_config(cfg, load_schema(REPO / "config" / "schema.yaml"))
