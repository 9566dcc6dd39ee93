#!/usr/bin/env bash
# The GPU checks, as one short run on a machine with CUDA: the kernel tests on CUDA tensors (no
# interpreter), the training-step table against cuDNN's Bi-LSTM, then an SST-5 epoch of both. Usage:
# scripts/gpu_check.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
python -m pytest -p no:cacheprovider -q -k "triton or cuda" tests/test_triton.py tests/test_fast.py 2>&1 | tee "$out/gpu-tests.txt"
python -m disan bench --device cuda --models reference,fast,eager,bilstm,multihead 2>&1 | tee "$out/gpu-bench.txt"
# the paper's per-epoch comparison: a whole SST-5 epoch (its real lengths, length-bucketed batches). It
# reads the SST files and GloVe 100d, which a machine without them needs carried: DISAN_DATA_DIR names the
# data folder, DISAN_VECTORS_DIR the vectors' folder.
if python -c "from disan.data.loaders import data_dir; data_dir()" 2> /dev/null; then
  python -m disan bench --epoch --device cuda --sample 0 --batching bucketed --models fast,bilstm 2>&1 \
    | tee "$out/gpu-epoch.txt"
else
  echo "no benchmark data here: the SST-5 epoch is not timed (set DISAN_DATA_DIR)" | tee "$out/gpu-epoch.txt"
fi
