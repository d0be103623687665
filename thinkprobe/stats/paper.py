"""The ThinkProbe paper's reported results, in one place: what the study summary compares each finding with.

These are the paper's published numbers (4,200 traces, 7 models, 10 domains), not constants of the
analysis (those live in the config): :mod:`.results_text` prints them in its "paper" column and :mod:`.claims`
tests this run against them. Each entry cites where in the paper it is stated.
"""

from __future__ import annotations

CORPUS = "4,200 traces, 7 models"

# section 5.2 / 5.3: all 19 metrics discriminate models at p < 0.001, surviving Bonferroni for 19 comparisons
METRICS_SIGNIFICANT = 19
METRICS_TOTAL = 19
# section 7 / App. G: the largest effects, epsilon^2 by model
TOP_MODEL_EFFECTS = {"AT": 0.75, "ATU": 0.58, "BR": 0.43}
LARGE_EFFECT = 0.14  # the paper's threshold of a large epsilon^2 (Figure 3)
# section 5.3 / Table 15: model epsilon^2 > domain epsilon^2 on four of five dimensions; Structure the exception
DIMS_MODEL_OVER_DOMAIN = 4
STRUCTURE_MODEL_DOMAIN = (0.121, 0.156)
MAX_RATIO = "up to ~4x (AT 0.75 by model vs HD 0.19 by domain)"
# App. G, Table 15: Efficiency's model epsilon^2, full vs length-excluded profile
EFFICIENCY_FULL = 0.385
EFFICIENCY_EXCLUDED = 0.332
# App. F: cycle prevalence and counts (full graph and the seq+synt / elab+back subgraphs)
CYCLE_PREVALENCE = {"full": 0.956, "seq+synt": 0.975, "elab+back": 0.0}
CYCLE_MEAN = {"full": 49.2, "seq+synt": 67.8}  # App. F's subgraph paragraph (49.1 in its prevalence paragraph)
CYCLE_MEDIAN = 32
CYCLE_MEDIAN_LENGTH = 14
# section 7: equal-weight vs PCA-weighted rankings: rho >= 0.893 for four dimensions, Structure 0.357
ROBUSTNESS_MIN_RHO = 0.893
ROBUSTNESS_STRUCTURE = 0.357
# section 5.4, Table 6 (N = 50): BF 0.22 at +L3, MEC 3.18 at +L3, GD 0.17 at +L3 and 0.30 (its maximum) in
# full, RvD 0 -> 3.87 at +L4, CBC 0.05 at +L4 -> 0.22 in full
ABLATION = {"BF": {"l3": 0.22}, "MEC": {"l3": 3.18}, "GD": {"l3": 0.17, "full": 0.30},
            "RvD": {"l3": 0.0, "l4": 3.87}, "CBC": {"l4": 0.05, "full": 0.22}}
# section 5.4, Table 6 as the results page sets it beside the ablation of corpus sets (thinkprobe ablate):
# N = 50 traces; the boundary-class shares of the full pipeline are App. H.4's; TUs per trace App. H.2's
ABLATION_N = 50
ABLATION_SHARES = {"branch": 0.33, "convergence": 0.14, "soft": 0.32, "backtrack": 0.003}
TUS_PER_TRACE = 37.2
# App. H, Table 16: boundary F1 (+-2 sentences), pipeline vs the second expert annotator, and between humans
AGREEMENT_F1_PIPELINE_EA2 = 0.705
AGREEMENT_F1_HUMANS = 0.582

# the "paper" column of the summary, one line per finding
COLUMN = {
    "metrics_p001": "19 / 19 (all survive Bonferroni)",
    "largest_metric": "AT 0.75 (then ATU 0.58, BR 0.43)",
    "chance": "not reported (uncorrected epsilon^2 only)",
    "dims_model_gt_domain": "4 / 5 (Structure: domain 0.156 > model 0.121), uncorrected",
    "max_ratio": MAX_RATIO,
    "cycle_prevalence": "full 95.6%, seq+synt 97.5% (more than full: impossible, see below), elab+back 0%",
    "cycle_counts": "median 32, mean 49.1 (Q1-Q3 13-66, max 7,051); median length 14",
    "length_excluded": "Efficiency 0.385 -> 0.332 (-14%); model > domain preserved",
    "robustness": "rho >= 0.893 for four dimensions, 0.357 for Structure",
    "sensitivity": "not run (section 7's open item)",
    "ablation": "BF 0.22 at l3; GD 0.17 at l3, 0.30 in full; RvD 0 -> 3.87 at l4; CBC 0.05 at l4 -> 0.22 in full",
    "agreement": "human study (not LLM labels): F1 0.705 pipeline vs EA2, 0.582 between humans",
}
