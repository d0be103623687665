"""Every way a SLURM job ends reaches Snakemake as an end: a preempted job is a failure, not a job still running.

snakemake-executor-plugin-slurm (2.6.1, and 2.8.0, the newest release) reads ``PREEMPTED`` as a job that SLURM
will resume: it warns once and keeps polling. That holds only when SLURM may requeue the job. The workflow
forbids requeueing (``rules/common.smk`` exports ``SBATCH_NO_REQUEUE=1``: a requeued job would run beside
Snakemake's retry of it), so a preempted job never comes back and the run would poll it forever: the study
never ends and ``resources.gpu_retries`` never fire. ``NODE_FAIL``, ``TIMEOUT``, ``OUT_OF_MEMORY``,
``CANCELLED``, ``BOOT_FAIL`` and ``DEADLINE`` the plugin already reports as failures.

:func:`install` wraps the plugin's status query (its module-level ``query_job_status``, which the plugin's
``check_active_jobs`` looks up at each poll) so that, unless the run itself asks SLURM to requeue
(``slurm-requeue: true``), a ``PREEMPTED`` job is reported as ``FAILED`` after a warning that names it and
says why. Snakemake then retries it (the generation rules have ``retries: gpu_retries``; the retry resumes
from the job's store) or, out of retries, fails it, and with ``keep-going`` the rest of the study goes on.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

# states SLURM ends a job in that the plugin (2.6.1-2.8.0) does not report as an end when requeueing is off
ENDS_WHEN_NOT_REQUEUED = ("PREEMPTED",)
REPORTED_AS = "FAILED"  # one of the plugin's failure states: Snakemake's retries apply


def ended(states: dict[str, str], requeue: bool) -> tuple[dict[str, str], list[str]]:
    """``states`` (SLURM job id -> state, as the plugin's status query returns them) with every state in
    :data:`ENDS_WHEN_NOT_REQUEUED` replaced by :data:`REPORTED_AS` unless ``requeue``; and the ids replaced.

    >>> ended({"7": "PREEMPTED", "8": "RUNNING"}, requeue=False)
    ({'7': 'FAILED', '8': 'RUNNING'}, ['7'])
    >>> ended({"7": "PREEMPTED"}, requeue=True)
    ({'7': 'PREEMPTED'}, [])
    """
    if requeue:
        return states, []
    changed = [job for job, state in states.items() if state in ENDS_WHEN_NOT_REQUEUED]
    return {job: REPORTED_AS if job in changed else state for job, state in states.items()}, changed


def _wrap(query: Callable[..., Any], requeue: Callable[[], bool]) -> Callable[..., Any]:
    @functools.wraps(query)
    async def query_job_status(command, logger, *args, **kwargs):
        states, duration = await query(command, logger, *args, **kwargs)
        if states:
            states, changed = ended(states, requeue())
            for job in changed:
                logger.warning(f"SLURM job {job} was PREEMPTED and SLURM will not requeue it (the workflow sets "
                               "SBATCH_NO_REQUEUE): reported as failed, so that Snakemake retries it "
                               "(resources.gpu_retries for the generation rules, which resume from their store)")
        return states, duration

    query_job_status.thinkprobe_wrapped = True
    return query_job_status


def install(workflow: Any) -> bool:
    """Wrap the SLURM plugin's status query (the module docstring says why); False when the plugin is not
    installed or has no ``query_job_status`` (a release this was not written for: the run keeps its
    behaviour). ``workflow`` is Snakemake's, read at each poll for the executor's ``requeue`` setting."""
    try:
        import snakemake_executor_plugin_slurm as plugin
    except ImportError:
        return False
    query = getattr(plugin, "query_job_status", None)
    if query is None:
        return False
    if getattr(query, "thinkprobe_wrapped", False):
        return True

    def requeue() -> bool:
        return bool(getattr(getattr(workflow, "executor_settings", None), "requeue", False))

    plugin.query_job_status = _wrap(query, requeue)
    return True
