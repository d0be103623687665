#!/usr/bin/env bash
# The test command: install (with test tools), start the local SLURM cluster, run the whole test suite.
#   bash scripts/test.sh                       # the whole suite (parallel part, then the `serial` tests alone)
#   bash scripts/test.sh [pytest arguments]    # exactly `pytest [arguments]`, e.g. -m fast -n auto --dist loadfile
# As root on Debian this installs and starts a one-node SLURM cluster (scripts/slurm-cluster.sh) for the
# tests that submit real jobs; elsewhere those tests report that the cluster is not running.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh --dev
if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  bash scripts/slurm-cluster.sh start
  # a real browser for the trace-page tests (Debian's chromium; Playwright drives it, see tests/browser.py)
  command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }
else
  echo "test: not root on Debian: the SLURM tests will say the cluster is not running, the browser tests" \
       "that chromium is missing (apt-get install chromium)" >&2
fi
# With arguments: exactly that pytest command. Without: the whole suite in two parts. First every test not marked
# `serial`, spread over TEST_WORKERS processes (3 by default: most of the suite's time is spent waiting for
# subprocesses, Snakemake, SLURM and engines, so three workers keep two cores busy); then the `serial` tests alone,
# because they observe what every engine on the node does (shared memory, a killed job's leftovers). Both parts
# always run; the command fails when either fails.
if (($#)); then
  exec .venv/bin/python -m pytest "$@"
fi
rc=0
.venv/bin/python -m pytest -m "not serial" -n "${TEST_WORKERS:-3}" --dist loadfile || rc=$?
.venv/bin/python -m pytest -m serial || { r=$?; ((rc)) || rc=$r; }
exit "$rc"
