"""What concerns a whole study configuration, above the rule bodies: planning it, checking it, and the
committed snapshot of its results.

Modules: ``planner`` (the study planner, ``thinkprobe plan``: units, jobs, GPUs, tokens and hours of every
rule, from the collection and trajectory jobs of a config), ``study_checks`` (start-up checks of the study
against the cluster and the models), ``planchecks`` (the config against its inputs and what was collected:
the study's size, grid models, trajectories of uncollected sets), ``snapshot`` (the results snapshot the
documentation quotes: taking it, stale tables, re-derivation) and ``retake`` (``thinkprobe summary
--retake``).

This package sits above :mod:`thinkprobe.generate`, :mod:`thinkprobe.trajectories`, :mod:`thinkprobe.stats`
and :mod:`thinkprobe.stages` because it uses all of them (the planner sizes collection and trajectory jobs;
the snapshot re-runs the stats rule bodies); none of them imports it (docs/development.md, "Layers and
imports"). Importing the package imports none of its modules.
"""
