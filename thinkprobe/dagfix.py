"""A correction of Snakemake's planning for jobs that depend on a rerunning job only through ``ancient`` inputs.

Why (issue 37, items 7 and 8). The rules that read collected traces take the collection job's manifest as an
``ancient`` input once their units' trace files exist (``trace_inputs``, rules/common.smk), so that a rerun of
the collection job reruns nothing downstream of the units it already wrote. Snakemake 9 plans in two passes
(``DAG.update_needrun``): it first evaluates each job's own reasons (missing output, code, params, ...) in
topological order, and *masks* every job downstream of a job that must run, skipping its own evaluation on the
promise that the second pass (a breadth-first walk from the jobs that must run) marks it; that walk then skips a
downstream job whose files from the rerunning job are all ancient and present ("no other reason to run").
Together, a job whose upstream collection reruns is never evaluated at all:

- ``snakemake results/continuations/<m>/<s>/b0000.json`` (missing) while the collection must rerun planned only
  the collection and exited 0 with the target missing (item 7);
- after ``results/`` was moved to a fresh checkout, every script is newer than its outputs ("Code has changed",
  Snakemake's ``outputs_older_than_script_or_notebook``); the collection jobs reran in the first run and masked
  the jobs downstream of their ancient manifests (``traj_sample``, the segment jobs of collected units), which
  the next run then found changed and ran, with everything after them (item 8).

The correction: the mask does not cross an edge whose files are all ancient, so a job reached from a rerunning
job only through ancient inputs is evaluated on its own reasons in the first pass, as every other job is. The
second pass is unchanged (it still does not rerun it for the upstream job alone). :func:`install` applies it
(the Snakefile calls it before any rule); it refuses, naming what it expected, a Snakemake whose planning code
is not the one it corrects.
"""

from __future__ import annotations

import inspect

# The line of DAG.update_needrun that masks the jobs downstream of a job that must run.
MASK_LINE = "masked.update(self.bfs(self.depending, job))"
_INSTALLED = "_thinkprobe_ancient_mask"


class DagFixError(RuntimeError):
    """The installed Snakemake's planning code is not the one this correction was written for."""


def not_through_ancient(dag, job) -> list:
    """The jobs downstream of ``job`` (itself included) reached through at least one non-ancient file on every
    edge of the path: the jobs Snakemake may mask once ``job`` must run."""
    seen = {job}
    queue = [job]
    out = []
    while queue:
        current = queue.pop(0)
        out.append(current)
        for job_, files in dag.depending[current].items():
            if job_ in seen or (files and all(f.is_ancient for f in files)):
                continue
            seen.add(job_)
            queue.append(job_)
    return out


def install() -> None:
    """Correct ``DAG.update_needrun`` of the running Snakemake (module docstring). Idempotent."""
    import snakemake.api  # noqa: F401  (snakemake.dag alone is a circular import outside a workflow)
    from snakemake import dag as dag_module

    cls = dag_module.DAG
    if getattr(cls, _INSTALLED, False):
        return
    try:
        source = inspect.getsource(cls.update_needrun)
    except (OSError, TypeError) as exc:
        raise DagFixError(f"cannot read snakemake.dag.DAG.update_needrun ({exc})") from exc
    if source.count(MASK_LINE) != 1:
        raise DagFixError(
            "snakemake.dag.DAG.update_needrun no longer masks downstream jobs with "
            f"{MASK_LINE!r}: thinkprobe.dagfix was written for Snakemake 9's planning; check whether the "
            "correction is still needed (tests/test_dagfix_workflow.py) and update it")
    original_bfs = cls.bfs

    def bfs(self, direction, *jobs, stop=lambda job: False):
        # Only the mask of update_needrun calls bfs(self.depending, job) with one job and no stop criterion
        # while _masking is set (below); every other traversal is Snakemake's own.
        if getattr(self, "_thinkprobe_masking", False) and direction is self.depending and len(jobs) == 1:
            return iter(not_through_ancient(self, jobs[0]))
        return original_bfs(self, direction, *jobs, stop=stop)

    original_update = cls.update_needrun

    async def update_needrun(self, *args, **kwargs):
        self._thinkprobe_masking = True
        try:
            return await original_update(self, *args, **kwargs)
        finally:
            self._thinkprobe_masking = False

    cls.bfs = bfs
    cls.update_needrun = update_needrun
    setattr(cls, _INSTALLED, True)
