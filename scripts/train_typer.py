"""Train the learned typer (classification.typer: learned) and record its scores (docs/validity.md, "Two typers").

    .venv/bin/python scripts/train_typer.py [--cache DIR] [FILE ...]

Reads step-labelled traces (the steering-thinking-llms corpus's annotated_response; the default FILEs are the
five R1-distill models' files of a checkout's ../shared/corpus, a development layout: name your own copy), runs
each through the pipeline under the paper typer, splits the prompts into train / tune / test
(thinkprobe.validity.typer_training), fits the classifier, and writes:

* the artifact with its provenance and its held-out scores (thinkprobe/typers/metacognition.json, package data);
* the scores of both typers on a small slice of the test prompts, run end to end through `thinkprobe validate`'s
  code (tests/test_learned_typer.py reruns that slice and compares);
* the generated block of the validity page (--page, default docs/validity.md).

Cost: every trace is encoded once (layer 2 encodes every sentence); ~30,000 sentences for the five default files.
--cache keeps the graphs between runs of the same analysis code and parameters.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path("../shared/corpus/steering-thinking-llms/compare-base-reasoning/results/vars")
MODELS = ("deepseek-r1-distill-llama-8b", "deepseek-r1-distill-llama-70b", "deepseek-r1-distill-qwen-1.5b",
          "deepseek-r1-distill-qwen-14b", "deepseek-r1-distill-qwen-32b")
SLICE_PROMPTS = 6  # the slice: this many test prompts (the lowest rows) of the first file


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", default=[str(CORPUS / f"reasoning_comparison_{m}.json") for m in MODELS])
    ap.add_argument("--mapping", default="config/validity/step_labels.yaml")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", default=None, metavar="DIR", help="keep the paper-typer graphs here between runs")
    ap.add_argument("--page", default=str(ROOT / "docs" / "validity.md"))
    args = ap.parse_args(argv)

    from thinkprobe import __version__
    from thinkprobe.encoder import load_encoder
    from thinkprobe.learned_typer import ARTIFACT, load_artifact
    from thinkprobe.outputs import atomic_write_text, sha256_file
    from thinkprobe.params import Params
    from thinkprobe.validity import mapping as mapping_mod
    from thinkprobe.validity import typer_page
    from thinkprobe.validity.typer_training import artifact_json, load_items, slice_scores, train

    t0 = time.perf_counter()
    files = [Path(f) for f in args.files]
    mapping = mapping_mod.load(args.mapping)
    params = Params()
    encoder = load_encoder(params.encoder)
    items, excluded = load_items(files, mapping, params, encoder, args.cache, log=lambda m: print(m, file=sys.stderr))
    art, record = train(items, params, args.seed, log=lambda m: print(m, file=sys.stderr))
    provenance = {
        "data": [{"file": f.name, "sha256": sha256_file(f)} for f in files],
        "data_source": "steering-thinking-llms (Venhoff et al. 2025), annotated_response: gpt-4.1's step labels "
                       "of R1-distill traces, one record per prompt",
        "mapping": {"file": args.mapping, "nodes": mapping.nodes},
        "excluded_traces": excluded, "traces_used": len(items),
        "encoder": {"model": params.encoder.model, "id": encoder.encoder_id},
        "thinkprobe": __version__, "command": "scripts/train_typer.py" + (" --cache DIR" if args.cache else ""),
    }
    out = ARTIFACT
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = artifact_json(art, provenance, record)
    atomic_write_text(out, json.dumps(doc, indent=1) + "\n")
    load_artifact.cache_clear()
    test_rows = record["split"]["prompts"]["test"][:SLICE_PROMPTS]
    doc["training"]["slice"] = slice_scores(files[0], test_rows, mapping, encoder)
    atomic_write_text(out, json.dumps(doc, indent=1) + "\n")
    typer_page.write(args.page, doc)
    print(json.dumps({"test": {k: {"kappa": v["kappa"], "CRT": v["per_type"]["CRT"], "MET": v["per_type"]["MET"]}
                               for k, v in record["test"].items()}, "chosen": record["chosen"],
                      "seconds": round(time.perf_counter() - t0, 1)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
