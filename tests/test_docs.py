"""The documentation (issue 27, item 1; issue 34, item 5): a README of at most 250 lines whose links resolve, a
site that builds in strict mode whose home page is the README, and a configuration reference generated from
config/schema.yaml, committed as docs/configuration.md and checked against the generator, that covers every
key and names the rules each key reruns, derived from the workflow."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import config_reference  # noqa: E402  (scripts/ is not a package)

sys.path.remove(str(REPO / "scripts"))

README = REPO / "README.md"
COMMANDS = ("bash scripts/setup.sh && .venv/bin/snakemake --profile profiles/local", "bash scripts/test.sh")


def _schema():
    from thinkprobe.config import load_schema

    return load_schema(REPO / "config" / "schema.yaml")


def _declared(node: dict, schema: dict, path: str = "") -> set[str]:
    """Every key the schema declares, walked here on its own (not with the generator's walker)."""
    if "$ref" in node:
        target = schema
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = {**target, **node}
    found = {path} if path else set()
    for name, child in node.get("properties", {}).items():
        found |= _declared(child, schema, f"{path}.{name}" if path else name)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and ("properties" in extra or "$ref" in extra):
        found |= _declared(extra, schema, f"{path}.<name>")
    items = node.get("items")
    if isinstance(items, dict) and ("properties" in items or "$ref" in items):
        found |= _declared(items, schema, f"{path}[]")
    return found


@pytest.mark.fast
def test_the_configuration_reference_covers_every_schema_key():
    schema = _schema()
    declared = _declared(schema, schema)
    assert len(declared) > 200 and "analysis.texttiling.window" in declared  # the analysis block is filled in
    keys = {k.path: k for k in config_reference.schema_keys(schema)}
    assert set(keys) == declared
    page = config_reference.markdown({"rules": {}, "planning": [], "edges": []})
    rows = set(re.findall(r"^\| `([^`]+)` \|", page, re.M))
    assert declared <= rows, sorted(declared - rows)
    window = keys["analysis.texttiling.window"]  # type, bounds, default and description reach the row
    assert (window.type, window.default) == ("integer (>= 1)", "3") and window.description
    assert "| `stats.cycle_cap` | integer (>= 1) | `10000` |" in page


@pytest.mark.fast
def test_the_committed_reference_has_a_row_for_every_schema_key_and_no_other():
    """The cheap half of the staleness check (the whole page is compared below, with the workflow): a key
    added to or removed from config/schema.yaml fails here, naming the command that regenerates the page."""
    schema = _schema()
    declared = _declared(schema, schema)
    page = config_reference.PAGE.read_text(encoding="utf-8")
    assert config_reference.MARKER in page
    keys = page.split(config_reference.MARKER, 1)[1].split("\n## What a rerun reaches", 1)[0]
    rows = set(re.findall(r"^\| `([^`]+)` \|", keys, re.M))
    rows = {r.replace("\\|", "|") for r in rows}
    assert rows == declared, (f"docs/configuration.md is stale: regenerate it with `{config_reference.WRITE_COMMAND}` "
                              f"(missing: {sorted(declared - rows)}, no longer in the schema: {sorted(rows - declared)})")


@pytest.mark.workflow
def test_the_committed_configuration_reference_is_what_the_generator_writes(tmp_path):
    assert config_reference.stale() is None, config_reference.stale()
    # a stale page fails naming the command that regenerates it
    page = tmp_path / "configuration.md"
    text = config_reference.PAGE.read_text(encoding="utf-8")
    page.write_text(text.replace("| `stats.cycle_cap` |", "| `stats.cycle_limit` |"), encoding="utf-8")
    derivation = config_reference.derived()
    why = config_reference.stale(page, derivation)
    assert why and "stats.cycle_limit" in why and config_reference.WRITE_COMMAND in why, why
    assert config_reference.stale(config_reference.PAGE, derivation) is None


def _metric_functions() -> dict[str, str]:
    """Abbreviation -> the function compute_metrics calls for it, read from its source."""
    import ast

    tree = ast.parse((REPO / "thinkprobe" / "metrics.py").read_text(encoding="utf-8"))
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Lambda) and isinstance(value.body, ast.Call):
                    out[key.value] = value.body.func.id
    return out


@pytest.mark.fast
def test_every_metric_docstring_has_its_references():
    import inspect

    from thinkprobe import metrics

    functions = _metric_functions()
    assert set(functions) == set(metrics.METRIC_NAMES)
    for abbrev, name in functions.items():
        doc = inspect.getdoc(getattr(metrics, name))
        assert doc.startswith(f"{abbrev} = ") or doc.startswith(f"{abbrev} "), (name, doc[:60])
        assert "\nReferences\n----------\n" in doc, f"thinkprobe/metrics.py: {name} has no References section"
        refs = doc.split("\nReferences\n----------\n", 1)[1]
        assert "ThinkProbe paper, section 3.5" in refs and "Table 2" in refs and "Appendix C" in refs, (name, refs)


@pytest.mark.fast
def test_readme_is_short_starts_with_the_two_commands_and_its_links_resolve():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    first_block = re.search(r"```bash\n(.*?)```", text, re.S).group(1).splitlines()
    assert [line.split("  #")[0].strip() for line in first_block] == list(COMMANDS)
    assert "bash scripts/test.sh" in (REPO / ".ci" / "run").read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert len(links) >= 10
    for link in links:
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = REPO / path
        assert target.exists(), f"README links to {link}: no such file"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)
            slugs = {re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", h.lower()).strip()) for h in headings}
            assert anchor in slugs, f"README links to {link}: no heading {anchor!r} in {path}"


@pytest.mark.workflow
def test_the_rules_a_key_reruns_are_derived_from_the_workflow():
    """The derivation reads the rules: its answers agree with what the rerun tests of the workflow observe
    (tests/test_workflow.py, tests/test_stats_workflow.py) and with the rules' params as written."""
    schema = _schema()
    derivation = config_reference.derived()
    reruns = config_reference.key_rules(config_reference.schema_keys(schema), derivation, schema)

    def rules(key):
        return set(reruns[key]["rules"])

    analysis_rules = {"import_traces", "segment", "graph", "metrics", "profiles"}
    assert rules("analysis.trajectory.elab_percentile") & analysis_rules == {"graph"}
    assert rules("analysis.metrics.redundancy_similarity") & analysis_rules == {"metrics"}
    assert rules("analysis.texttiling.window") & analysis_rules == {"segment"}
    assert rules("analysis.profile.dimensions") & analysis_rules == {"profiles"}
    assert rules("analysis.input.max_trace_bytes") & analysis_rules == {"import_traces", "segment"}
    assert {"stats_cycles", "stats_fig_cycles"} <= rules("stats.cycle_cap") and "stats_kruskal" not in rules("stats.cycle_cap")
    assert {"stats_kruskal", "stats_confound"} <= rules("stats.permutation_seed")
    assert "traj_sample" in rules("trajectories.sampling.temperature")
    assert "traj_sample" not in rules("trajectories.tau") and "traj_tables" in rules("trajectories.tau")
    # booleans of a model entry: one that decides a trace's sample reaches collection and sampling; an engine
    # tuning knob reaches the sampling key (it is part of its identity) but not collection's batch digest
    assert {"collect", "traj_sample"} <= rules("models.<name>.think_prefill")
    assert "traj_sample" in rules("models.<name>.engine.enforce_eager")
    assert "collect" not in rules("models.<name>.engine.enforce_eager")
    # resources are not parameters: no analysis rule takes them
    assert not rules("resources.encoder_device") & analysis_rules
    assert not rules("resources.analysis_threads") - {"plan"}
    assert reruns["grid.models"] == {"rules": [], "planning": True}
    downstream = dict(config_reference._downstream(derivation["edges"]))
    assert {"graph", "metrics", "aggregate", "profiles"} <= set(downstream["segment"])
    assert "segment" not in downstream["graph"]


@pytest.mark.workflow
def test_the_site_builds_in_strict_mode_with_the_generated_reference(tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    html = (site / "configuration.html").read_text(encoding="utf-8")
    schema = _schema()
    for key in _declared(schema, schema):
        assert key.replace("<", "&lt;").replace(">", "&gt;") in html, key
    assert "<code>segment</code>" in html and "config-reference" not in html
    api = (site / "api-metrics.html").read_text(encoding="utf-8")  # rendered from the docstrings
    for name in _metric_functions().values():
        assert f'id="thinkprobe.metrics.{name}"' in api, name
    assert api.count("References") >= len(_metric_functions()) and "Sokal and C. D. Michener" in api
    # the docstrings' doctests are code blocks (scripts/griffe_doctests.py), not '>>>' read as nested quotes
    assert "<blockquote>\n<blockquote>" not in api and '<span class="gp">&gt;&gt;&gt; </span>' in api
    home = (site / "index.html").read_text(encoding="utf-8")  # the README, its links made relative to docs/
    assert "Corpus study:" in home and 'href="workflow.html"' in home and "docs/workflow.md" not in home
    for page in ("cluster", "data", "answer-labels", "sampling-store", "results", "statistics", "reliability",
                 "glossary", "getting-started", "bad-input", "trajectories", "metrics", "pipeline", "planning"):
        assert (site / f"{page}.html").exists(), page
