"""A SLURM job that was preempted ends as a failure (issue 32 item 3): snakemake-executor-plugin-slurm polls a
PREEMPTED job forever, and the workflow never lets SLURM requeue one (SBATCH_NO_REQUEUE), so
thinkprobe.study.slurm_states reports it as failed; these tests read the installed plugin's own source so that
a release that changes its status handling shows here."""

from __future__ import annotations

import inspect
import re

import pytest

from .conftest import installed


@pytest.mark.slow
def test_the_plugin_polls_preempted_jobs_and_the_workflow_reports_them_as_failed():
    installed("snakemake_executor_plugin_slurm", "the SLURM executor plugin is not installed (scripts/setup.sh)")
    import snakemake_executor_plugin_slurm as plugin

    from thinkprobe.study import slurm_states

    source = inspect.getsource(plugin.Executor.check_active_jobs)
    # the plugin still treats PREEMPTED as running (if a release fixes it, this wrapper can go) ...
    assert re.search(r'status == "PREEMPTED"', source) and '"PREEMPTED"' not in source.split("fail_stati = (")[1].split(")")[0]
    # ... and looks its status query up as a module global at each poll, so the wrapped one is the one it calls
    assert "await query_job_status(" in source
    original = plugin.query_job_status

    class Workflow:
        executor_settings = type("S", (), {"requeue": False})()

    try:
        assert slurm_states.install(Workflow())
        assert plugin.query_job_status is not original and plugin.query_job_status.thinkprobe_wrapped
        assert slurm_states.install(Workflow())  # once only
        assert plugin.query_job_status.__wrapped__ is original
    finally:
        plugin.query_job_status = original
    assert slurm_states.ended({"1": "PREEMPTED", "2": "TIMEOUT"}, requeue=False)[0] == {"1": "FAILED", "2": "TIMEOUT"}
