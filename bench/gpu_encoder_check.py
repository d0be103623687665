"""GPU encoding check (issue 9, item 6): does the encoder really run on the GPU, and give the CPU's vectors?

    .venv/bin/python bench/gpu_encoder_check.py [--sentences 2000]

``check()`` returns a dict (for ``bench/gpu_smoke.py`` and other callers); run as a script it prints it as a
table. It loads the default encoder twice, on ``cpu`` and on ``cuda``, encodes the same sentences with both
and reports: the providers onnxruntime offers, the device each encoder actually used (and the warning when
CUDA fell back to the CPU), sentences per second on each, and the largest absolute difference between the
two sets of vectors. On a machine without a GPU the CUDA run falls back to the CPU, and ``ok`` is False.
When torch with CUDA is installed, the sentence-transformers backend is checked the same way.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from table import print_table  # noqa: E402


def _sentences(n: int) -> list[str]:
    subjects = ["The model", "A careful reader", "The proof", "Our estimate", "The second approach", "This bound"]
    verbs = ["suggests", "contradicts", "refines", "depends on", "simplifies", "revisits"]
    objects = ["the earlier claim", "a hidden assumption", "the boundary case", "the sum over all terms",
               "the answer from step three", "an unexpected symmetry"]
    return [f"{subjects[i % 6]} {verbs[(i // 6) % 6]} {objects[(i // 36) % 6]} (case {i})." for i in range(n)]


def _timed(encoder, texts: list[str]) -> tuple[Any, float]:
    encoder.backend.encode(texts[:32])  # warm-up (CUDA kernels, allocator)
    t0 = time.perf_counter()
    vectors = encoder.backend.encode(texts)
    return vectors, time.perf_counter() - t0


def check(n_sentences: int = 2000, backend: str = "onnx") -> dict[str, Any]:
    """Encode the same sentences on CPU and on CUDA; return devices, speeds and the largest vector difference."""
    import numpy as np

    from thinkprobe.encoder import load_encoder
    from thinkprobe.params import EncoderParams

    params = EncoderParams(backend=backend)
    texts = _sentences(n_sentences)
    result: dict[str, Any] = {"backend": backend, "sentences": n_sentences}
    if backend == "onnx":
        import onnxruntime as ort

        result["onnxruntime"] = ort.__version__
        result["providers_available"] = ",".join(ort.get_available_providers())
    else:
        import torch

        result["torch"] = torch.__version__
        result["torch_cuda_available"] = torch.cuda.is_available()
    cpu = load_encoder(params, device="cpu")
    cuda = load_encoder(params, device="cuda")
    result["cuda_encoder_device"] = cuda.device
    if cuda.device_note:
        result["cuda_warning"] = cuda.device_note
    v_cpu, t_cpu = _timed(cpu, texts)
    v_cuda, t_cuda = _timed(cuda, texts)
    result["cpu_sentences_per_s"] = round(n_sentences / t_cpu, 1)
    result["cuda_sentences_per_s"] = round(n_sentences / t_cuda, 1)
    result["max_abs_diff"] = float(np.max(np.abs(v_cpu - v_cuda)))
    result["ok"] = cuda.device == "cuda" and result["max_abs_diff"] < 1e-4
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--backend", choices=("onnx", "sentence-transformers"), default="onnx")
    args = ap.parse_args()
    result = check(args.sentences, args.backend)
    print_table([(k, str(v)) for k, v in result.items()])
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
