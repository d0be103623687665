"""The rule book (thinkprobe/rulebook.py) and the rule files agree, as Snakemake itself parses the workflow; the
package needs no rule file (code hashes, the study-wide jobs and the claim register from a copy of the package
without the checkout's rules/ and config/); a missing checkout is a clear error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from thinkprobe import rulebook

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"

# Parses the workflow (no job runs) and prints every rule as Snakemake holds it: its script, its `code` param,
# whether it is local, and a figure rule's figure.
_WRAPPER = '''
import json

include: {snakefile!r}

_rules = {{}}
for _r in workflow.rules:
    _params = dict(_r.params.items()) if _r.params else {{}}
    _code = _params.get("code")
    _rules[_r.name] = {{"script": _r.script, "code": _code if isinstance(_code, str) else None,
                       "has_code": "code" in _params, "local": _r.name in workflow._localrules,
                       "figure": _params.get("figure"), "src": _r.run_func_src}}
print("RULES " + json.dumps(_rules))
'''


def parsed_rules(tmp: Path, snakefile: Path = REPO / "Snakefile", config: str = "") -> dict[str, dict]:
    """Every rule of the workflow whose Snakefile is ``snakefile``, parsed by Snakemake (``--list-rules``) in a
    working folder of its own with the extra config ``config`` (YAML text)."""
    wd = tmp / "wd"
    wd.mkdir(parents=True, exist_ok=True)
    if not (wd / "examples").exists():
        (wd / "examples").symlink_to(REPO / "examples")
    wrapper = tmp / "wrapper.smk"
    wrapper.write_text(_WRAPPER.format(snakefile=str(snakefile)))
    extra = tmp / "extra.yaml"
    extra.write_text(config or "{}\n")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(wrapper), "-d", str(wd), "--list-rules",
                           "--configfile", str(REPO / "config" / "config.yaml"), str(extra)],
                          capture_output=True, text=True, timeout=300, cwd=wd,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RULES ")), None)
    assert line, f"the workflow did not parse:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return json.loads(line[len("RULES "):])


def disagreements(rules: dict[str, dict], config: dict, scripts: Path = SCRIPTS) -> list[str]:
    """Where the parsed rules and the rule book differ (both directions), one line each; [] when they agree."""
    out = []
    scripted = {name for name, r in rules.items() if r["script"]}
    for name in sorted(scripted - set(rulebook.RULES)):
        out.append(f"rule {name} has a script but no entry in thinkprobe/rulebook.py")
    for name in sorted(set(rulebook.RULES) - scripted):
        out.append(f"the rule book declares {name}, which the workflow "
                   + ("defines without a script" if name in rules else "does not define"))
    for name in sorted(scripted & set(rulebook.RULES)):
        r, declared = rules[name], rulebook.rule(name)
        if r["script"] != rulebook.script_path(name):
            out.append(f"rule {name} runs {r['script']}, the rule book says {rulebook.script_path(name)}")
        elif (r["src"] or "").strip() != f'"{r["script"]}"':  # what Snakemake's `code` rerun trigger records
            out.append(f"rule {name}: its script: directive is not the literal path (an edit of it reruns its jobs)")
        if declared.no_code:
            if r["has_code"]:
                out.append(f"rule {name} has a code param, the rule book says it has none ({declared.no_code})")
        elif r["code"] != rulebook.code(name, scripts):
            out.append(f"rule {name}: its code param is not the rule book's code hash of it")
        if r["local"] != rulebook.is_local(name, config):
            out.append(f"rule {name} is {'' if r['local'] else 'not '}local, the rule book says the opposite")
    figures = {r["figure"] for n, r in rules.items() if n.startswith("stats_fig_")}
    if figures != set(rulebook.STATS_FIGURES):
        out.append(f"figure rules {sorted(figures)} != rulebook.STATS_FIGURES {sorted(rulebook.STATS_FIGURES)}")
    return out


# with resources.fetch_local false: a fetch rule the rule files made local by hand would show
NOT_LOCAL = "resources: {fetch_local: false}\n"


@pytest.mark.workflow
def test_the_rule_files_and_the_rule_book_agree_as_snakemake_parses_them(tmp_path):
    rules = parsed_rules(tmp_path, config=NOT_LOCAL)
    assert len(rules) >= 40 and {"collect", "traj_sample", "stats_fig_cycles", "fetch_model"} <= set(rules)
    assert disagreements(rules, {"resources": {"fetch_local": False}}) == []
    assert not rules["fetch_model"]["local"] and rules["aggregate"]["local"] and not rules["segment"]["local"]


@pytest.mark.workflow
def test_a_rule_file_that_departs_from_the_rule_book_is_found(tmp_path):
    """In a copy of the workflow: rule graph made local by hand, rule metrics hashing graph's code, and a rule
    with a script the rule book does not know: each is reported."""
    copy = tmp_path / "checkout"
    for folder in ("rules", "workflow", "config"):
        shutil.copytree(REPO / folder, copy / folder)
    shutil.copy(REPO / "Snakefile", copy / "Snakefile")
    graph = copy / "rules" / "graph.smk"
    text = graph.read_text(encoding="utf-8")
    assert '    group:\n        "analysis"\n' in text and 'code=rule_code("graph")' in text
    graph.write_text(text.replace('    group:\n        "analysis"\n', '    group:\n        "analysis"\n'
                                  '    localrule: True\n') + '''

rule graph_extra:
    output:
        "results/extra.txt",
    script:
        "../workflow/scripts/graph.py"
''', encoding="utf-8")
    metrics = copy / "rules" / "metrics.smk"
    metrics.write_text(metrics.read_text(encoding="utf-8").replace('code=rule_code("metrics")',
                                                                   'code=rule_code("graph")'), encoding="utf-8")
    found = disagreements(parsed_rules(tmp_path, copy / "Snakefile", NOT_LOCAL), {"resources": {"fetch_local": False}},
                          copy / "workflow" / "scripts")
    assert found == ["rule graph_extra has a script but no entry in thinkprobe/rulebook.py",
                     "rule graph is local, the rule book says the opposite",
                     "rule metrics: its code param is not the rule book's code hash of it"], found


# ------------------------------------------------------------------------------ the table itself, no Snakemake

@pytest.mark.fast
def test_every_script_is_a_declared_rules_and_every_flag_is_one_the_table_evaluates():
    assert {r.script for r in rulebook.RULES.values()} == {p.name for p in SCRIPTS.glob("*.py")}
    for fetch_local in (True, False):
        local = set(rulebook.local_rules({"resources": {"fetch_local": fetch_local}}))
        assert "aggregate" in local and "segment" not in local and "collect" not in local
        assert ("fetch_model" in local) is fetch_local and ("fetch_dataset" in local) is fetch_local
    assert {f"stats_fig_{n}" for n in rulebook.STATS_FIGURES} <= set(rulebook.RULES)
    assert {r.study for r in rulebook.RULES.values()} - {None} == set(rulebook.STUDY_WHEN)


@pytest.mark.fast
def test_the_rule_book_refuses_an_unknown_rule_a_code_hash_it_has_not_and_a_missing_script(tmp_path):
    with pytest.raises(KeyError, match="rule 'no_such_rule' is not declared .*aggregate, aggregate_typer, collect"):
        rulebook.rule("no_such_rule")
    with pytest.raises(ValueError, match=r"rule traj_sample has no code param on purpose \(protected continuations\)"):
        rulebook.code("traj_sample")
    with pytest.raises(rulebook.WorkflowFilesMissing, match=r"not in .* \(missing: graph.py\).*workflow/scripts"):
        rulebook.code("graph", tmp_path)
    with pytest.raises(ValueError, match="study='sometimes' is not one of"):
        rulebook.Rule("x.py", study="sometimes")


# ------------------------------------------------------------------ the package alone, without the rule files

_ALONE = r'''
import json, shutil, sys
from pathlib import Path
import thinkprobe
from thinkprobe import rulebook
from thinkprobe.stats import register
from thinkprobe.study import snapshot
from thinkprobe.study.study_jobs import study_jobs

config = json.loads(sys.argv[1])
out = {"package": thinkprobe.__file__, "jobs": study_jobs(config, 1),
       "register": str(register.register_path()), "claims": len(register.load_register()),
       "sha256": register.register_digest(), "stages": snapshot.stage_hashes(),
       "codes": {n: rulebook.code(n) for n, r in rulebook.RULES.items() if not r.no_code}}
shutil.rmtree(Path(thinkprobe.__file__).parents[1] / "workflow")  # the package alone, as pip installs it
out["jobs_alone"] = study_jobs(config, 1)
try:
    snapshot.stage_hashes()
except rulebook.WorkflowFilesMissing as exc:
    out["missing"] = str(exc)
print("ALONE " + json.dumps(out))
'''


@pytest.mark.fast
def test_the_package_without_the_rule_files_has_its_code_hashes_study_jobs_and_claim_register(tmp_path):
    """A copy of the package beside the workflow's scripts only (no rules/, no config/): the same code hashes and
    study-wide jobs as the checkout, and its own claim register; without the scripts too, the same study-wide jobs,
    and the code hashes fail saying the scripts are missing."""
    from thinkprobe.stats import register
    from thinkprobe.study import snapshot
    from thinkprobe.study.planner import study_config
    from thinkprobe.study.study_jobs import study_jobs

    pkg = tmp_path / "root"
    shutil.copytree(REPO / "thinkprobe", pkg / "thinkprobe", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SCRIPTS, pkg / "workflow" / "scripts")
    assert not (pkg / "rules").exists() and not (pkg / "config").exists()
    config = study_config([])
    config["stats"].update(enabled=True, sensitivity_encoder="a second encoder")  # every family of study-wide jobs
    proc = subprocess.run([sys.executable, "-c", _ALONE, json.dumps(config)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(pkg)})
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("ALONE ")), None)
    assert line, proc.stderr[-3000:]
    got = json.loads(line[len("ALONE "):])
    assert got["package"] == str(pkg / "thinkprobe" / "__init__.py")
    assert got["jobs"] == study_jobs(config, 1) and len(got["jobs"]) >= 25 and got["jobs_alone"] == got["jobs"]
    assert got["jobs"]["stats_sensitivity"] and not got["jobs"]["stats_kruskal"] and "traj_join" in got["jobs"]
    assert got["stages"] == snapshot.stage_hashes()
    assert got["codes"] == {n: rulebook.code(n) for n, r in rulebook.RULES.items() if not r.no_code}
    assert got["register"] == str(pkg / register.REGISTER)
    assert got["claims"] == len(register.load_register()) and got["sha256"] == register.register_digest()
    assert got["missing"].startswith(f"the rule scripts are not in {pkg / 'workflow' / 'scripts'} (missing: ")
    assert "a checkout of the repository holds beside the package" in got["missing"]


@pytest.mark.fast
def test_the_claim_register_has_one_home_shipped_as_package_data():
    import fnmatch
    import tomllib

    from thinkprobe.stats import register

    globs = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["thinkprobe"]
    inside = Path(register.REGISTER).relative_to("thinkprobe").as_posix()
    assert any(fnmatch.fnmatch(inside, g) for g in globs), f"{register.REGISTER} is not in pyproject's package-data"
    assert register.register_path() == REPO / register.REGISTER and register.register_path().is_file()
    assert not (REPO / "config" / "claims.yaml").exists()
