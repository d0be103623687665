"""Rule ``validate_set``: one annotated set of the config's ``validity.sets`` through the code of
``thinkprobe validate`` (:func:`thinkprobe.validity.run.validate`, then
:func:`~thinkprobe.validity.run.write_outputs`), under the typer its ``analysis`` names (docs/validity.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping


def set_files(path: str) -> list[str]:
    """The files of an annotated set: ``path`` itself, or every file under it when it is a folder (the rule's
    inputs, so that an edit of one reruns the set)."""
    where = Path(path)
    return sorted(str(f) for f in where.rglob("*") if f.is_file()) if where.is_dir() else [str(where)]


def validate_set(entry: Mapping[str, Any], mapping_path: str, analysis: dict[str, Any], options: Mapping[str, int],
                 summary_path: str, page_path: str) -> dict[str, Any]:
    """Validate the set ``entry`` (``format``, ``path``, ``limit``) against the mapping file ``mapping_path``
    under the analysis parameters ``analysis``; writes ``summary.json`` and ``traces.csv`` beside
    ``summary_path`` and the run's page at ``page_path``. ``options``: ``tolerance``, ``draws``, ``seed``.
    The summary records the typer (``typer``) and the set's name (``set``)."""
    from ..encoder import load_encoder
    from ..params import Params
    from ..validity import mapping as mapping_mod
    from ..validity.run import validate, write_outputs

    params = Params.from_dict(dict(analysis))
    result = validate(entry["format"], [entry["path"]], mapping_mod.load(mapping_path), params,
                      load_encoder(params.encoder), tolerance=options["tolerance"], draws=options["draws"],
                      seed=options["seed"], limit=entry["limit"])
    result.summary.update(set=entry["name"], typer=params.classification.typer)
    write_outputs(result, Path(summary_path).parent, page_path,
                  f"Validity: {entry['name']} ({entry['format']}), {params.classification.typer} typer")
    return result.summary
