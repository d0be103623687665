"""The study's statistics (ThinkProbe paper sections 5.2-5.4, Appendices F, G and I; section 7's open items).

One module per analysis, each a set of functions that take pandas tables (the study's metrics and
profiles) and return tables; the workflow's ``stats`` rules write them to ``results/stats/*.parquet``:

- :mod:`.discriminability`: Kruskal-Wallis H, p, epsilon^2 per metric and dimension, by model and by
  domain, Bonferroni across targets, and the model-over-domain ratio (sections 5.2-5.3).
- :mod:`.posthoc`: Dunn's pairwise tests with Bonferroni correction (Appendix I, Figure 15).
- :mod:`.correlation`: Spearman matrix of the 19 metrics with a Ward clustering order (Figure 14).
- :mod:`.stability`: run-to-run coefficient of variation; cosine between model 5D-CP vectors (Figs 16-17).
- :mod:`.cycles`: simple directed cycles per Thought Graph, bounded, by edge-type subgraph (Appendix F).
- :mod:`.confound`: Spearman of each metric with trace length; the length-excluded profile (Appendix G).
- :mod:`.ablation`: mean metrics under the four cumulative pipeline stages (Table 6).
- :mod:`.sensitivity`: model rankings under a second sentence encoder (section 7, "Single embedding model").
- :mod:`.robustness`: equal-weight vs PCA-weighted aggregation (section 7, "Equal-weight aggregation").
- :mod:`.permutation`: permutation nulls of epsilon^2 and their Monte Carlo error (ours).
- :mod:`.blocked`: Friedman's test of the models within prompts, beside Kruskal-Wallis (ours).
- :mod:`.multiplicity`: Holm within a family; exceedances expected under the null.
- :mod:`.exact`: Spearman's rho with an exact permutation p for a handful of models.
- :mod:`.bootstrap`: the cluster bootstrap over prompts behind the checks' intervals.
- :mod:`.claims`: the checks against the paper: replications, identities, not comparable.
- :mod:`.results_text`, :mod:`.page_blocks`, :mod:`.snapshot`, :mod:`.retake`: the results as Markdown, the generated
  blocks of the documentation, the committed snapshot they are generated from (stale tables, re-derivation),
  and its re-take.
- :mod:`.config_checks`: the ``stats`` section's checks, run with the configuration.

scipy and scikit-posthocs do the tests; what they do not provide (epsilon^2, the bounded cycle census,
the PCA weighting) is written here and tested against an independent computation.
"""
