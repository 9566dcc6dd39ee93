#!/usr/bin/env bash
# The GPU checks, as one short run on a machine with CUDA: the kernel tests on CUDA tensors (no
# interpreter), then the training-step table against cuDNN's Bi-LSTM. Usage: scripts/gpu_check.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
python -m pytest -p no:cacheprovider -q -k "triton or cuda" tests/test_triton.py tests/test_fast.py 2>&1 | tee "$out/gpu-tests.txt"
python -m disan bench --device cuda --models reference,fast,eager,bilstm,multihead 2>&1 | tee "$out/gpu-bench.txt"
