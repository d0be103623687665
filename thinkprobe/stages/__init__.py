"""What each workflow rule does, as plain functions: rule scripts only pass Snakemake's paths and params.

One module per stage (ingest, segment, graph, metrics, tables); :mod:`.unitfiles` holds the per-unit
file format they share, and :mod:`.joblog` the job log every rule script writes (stderr and, when the
job fails, its traceback). Every per-unit file carries the unit, a status (``ok``, ``missing``,
``excluded`` or ``absent``: outside its question set's grid, see :mod:`.unitfiles`), the reason and stage of an exclusion, and a provenance block.
"""
