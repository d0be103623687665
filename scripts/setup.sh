#!/usr/bin/env bash
# Create .venv (if needed) and install thinkprobe with the workflow (Snakemake + SLURM executor plugin).
#   bash scripts/setup.sh          # what the main job needs
#   bash scripts/setup.sh --dev    # also the test tools (pytest, scipy, sentence-transformers on CPU torch)
# Idempotent: a second run only checks what is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
[[ ${1:-} == --dev ]] && dev=1
PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "setup: Python >= 3.11 is required ($PYTHON is $("$PYTHON" --version 2>&1))" >&2; exit 1; }

[[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
PIP=(.venv/bin/python -m pip --disable-pip-version-check -q)
if [[ $dev == 1 ]] && ! .venv/bin/python -c 'import torch' 2>/dev/null; then
  # CPU torch first, pinned: sentence-transformers would otherwise pull a multi-GB CUDA build.
  "${PIP[@]}" install torch==2.13.0
fi
extras="workflow"
[[ $dev == 1 ]] && extras="workflow,dev"
"${PIP[@]}" install -e ".[${extras}]"
# build the encoder's ONNX graph once, now, instead of inside the first job
.venv/bin/python -c 'from thinkprobe.encoder import load_encoder; load_encoder()'
echo "setup: thinkprobe installed in .venv (extras: ${extras})"
