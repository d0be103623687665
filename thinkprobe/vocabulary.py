"""The metric vocabulary: the 19 metric names, their 5D-CP dimensions and the dimension maps (paper §3.5-3.6,
Table 2, Appendix G).

A leaf module (it imports nothing from thinkprobe), so that what only needs the names (parameter
validation, statistics, tables, figures) neither imports the metric functions nor depends on their code:
editing a metric's formula reruns the rules that compute metrics, not those that only name them.

>>> len(METRIC_NAMES), sorted(DIMENSION_MAPS)
(19, ['app_g', 'table2'])
>>> set(LENGTH_METRICS) <= set(DIMENSIONS["Efficiency"])
True
"""

from __future__ import annotations

DIMENSIONS: dict[str, tuple[str, ...]] = {
    "Breadth": ("BF", "UPC", "DS", "FID"),
    "Depth": ("MEC", "MBD"),
    "Structure": ("EER", "BR", "CBC", "CI", "GD", "RvD"),
    "Metacognition": ("CHR", "HD", "PT"),
    "Efficiency": ("TPI", "RR", "AT", "ATU"),
}
METRIC_NAMES = tuple(m for ms in DIMENSIONS.values() for m in ms)
LENGTH_METRICS = ("AT", "ATU", "TPI")  # the length-confounded metrics of Appendix G

# The 5D-CP dimension maps (``analysis.profile.dimensions``). ``table2``: paper Table 2, all 19 metrics
# active (the default). ``app_g``: the only map under which Appendix G's arithmetic holds (Efficiency
# epsilon^2 0.385 -> 0.332 "driven entirely by the removal of TPI", and RR alone = 0.332): Efficiency is
# the mean of z_TPI and z_RR, and AT and ATU are verbosity baselines, z-scored and reported but in no
# dimension.
DIMENSION_MAPS: dict[str, dict[str, tuple[str, ...]]] = {
    "table2": DIMENSIONS,
    "app_g": {**DIMENSIONS, "Efficiency": ("TPI", "RR")},
}
