"""Validity of a Thought Graph: thinkprobe's units, node types and edges compared with other people's
annotations of the same traces (``thinkprobe validate``; docs/validity.md).

The paper validated its segmentation only (App. H: boundary F1 against a human annotator). This package
measures the rest on published annotation formats, one reader per format (:mod:`.formats`, a registry):

- :mod:`.annotation`: the common form every reader returns (an annotated trace: text, typed units by
  character offsets, typed edges between units, an optional per-unit outcome measure);
- :mod:`.mapping`: the mapping from a format's labels to thinkprobe's node and edge types, declared in a
  committed file before the comparison;
- :mod:`.compare`: the scores of one trace (boundaries, node types per sentence, edges per type, and where
  the outcome measure moves);
- :mod:`.run`: a whole annotated set through the pipeline, the per-trace exclusions, the pooled summary;
- :mod:`.run_page`: the Markdown page of one run.
"""

#: The defaults of ``thinkprobe validate`` and :func:`thinkprobe.validity.run.validate` (one home; this module
#: imports nothing, so the command line reads them without loading the analysis).
TOLERANCE = 2  # boundary match window in sentences: the paper's primary metric is F1 at +-2 (App. H.2)
DRAWS = 1000  # random position-matched sets per scored set (the outcome analysis)
SEED = 0
#: The defaults of the config's ``validity:`` section (config/schema.yaml reads them: ``x-defaults-from``): both
#: targets off, the command line's tolerance, draws and seed.
WORKFLOW_DEFAULTS = {"compare_typers": False, "sets": [], "tolerance": TOLERANCE, "draws": DRAWS, "seed": SEED}
