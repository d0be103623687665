#!/usr/bin/env bash
# The test command: install (with test tools), start the local SLURM cluster, run the whole test suite.
#   bash scripts/test.sh [pytest arguments]
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
exec .venv/bin/python -m pytest "$@"
