#!/usr/bin/env bash
# The GPU checks, as one run of under 10 minutes on a machine with CUDA and its own Python (torch and
# Triton; neither the app's packages nor the benchmark data nor GloVe, and no network):
#   1. the versions: GPU, driver, CUDA, Python, torch, Triton                      -> gpu.txt
#   2. the kernel tests on CUDA tensors (Triton and eager against dense, values and
#      gradients, every mask, padding, c = 100)                                    -> gpu-tests.txt
#   3. the training-step table, B = 64, n = 40 and 160: DiSAN with the Triton kernel
#      ("fast"), the dense path under torch.compile, cuDNN's Bi-LSTM + source2token;
#      then the same for the forward pass alone; with peak memory                 -> gpu-bench.txt
#   4. an SST-5 epoch of DiSAN and the Bi-LSTM (random word vectors; a synthetic
#      corpus with SST-5's lengths without the data), only where the training code
#      imports (it needs pandas, spaCy, safetensors, ...)                          -> gpu-epoch.txt
# Each part has its own time limit, so that one that hangs leaves the others their time; a part that
# fails does not stop the next. Usage: OUT=DIR scripts/gpu_check.sh (or scripts/gpu_check.sh DIR;
# default: the current folder). PYTHON names the interpreter (default: python, else python3).
#
# Without pytest in that Python the tests are skipped with a note, unless a folder gpu-pylib/ at the
# repository's root holds pytest and what it imports (pure Python: pytest, _pytest, pluggy, iniconfig,
# packaging, pygments, copied from a virtual environment that has them) and travels with the code.
set -uo pipefail
out=$(mkdir -p "${1:-${OUT:-.}}" && cd "${1:-${OUT:-.}}" && pwd)
cd "$(dirname "$0")/.."
py=${PYTHON:-$(command -v python || command -v python3)}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
start=$SECONDS

# ---- 1. versions
{
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  else
    echo "no nvidia-smi here"
  fi
  "$py" - << 'EOF'
import platform, sys
import torch
print(f"python {platform.python_version()}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
      f"cuDNN {torch.backends.cudnn.version()}, GPU available: {torch.cuda.is_available()}")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"{p.name}: compute capability {p.major}.{p.minor}, {p.total_memory / 2**30:.0f} GiB")
for name, why in (("triton", "the kernel"), ("numpy", "disan.data, which the bench imports")):
    try:
        print(f"{name} {__import__(name).__version__}")
    except ImportError as err:
        print(f"no {name} ({why} needs it): {err}")
EOF
} 2>&1 | tee "$out/gpu.txt"

# ---- 2. the kernel tests, on CUDA tensors (tests/__init__.py runs them in Triton's interpreter only
# without a GPU). --noconftest: tests/conftest.py imports the training code, which needs the app's
# packages; these tests use none of its fixtures. No plugins of that Python's own are loaded.
if ! "$py" -c "import pytest" 2> /dev/null && [ -d gpu-pylib ]; then
  export PYTHONPATH="$PYTHONPATH:$PWD/gpu-pylib"
fi
if "$py" -c "import pytest" 2> /dev/null; then
  PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 timeout 150 "$py" -m pytest --noconftest -p no:cacheprovider -rfEs -k "triton or cuda" \
    tests/test_triton.py tests/test_fast.py 2>&1 | tee "$out/gpu-tests.txt"
  echo "kernel tests: exit status ${PIPESTATUS[0]} (124: timed out)" | tee -a "$out/gpu-tests.txt"
else
  echo "pytest is not installed in $py (and no gpu-pylib/ here): the kernel tests were not run" \
    | tee "$out/gpu-tests.txt"
fi

# ---- 3. the table: a training step, then the forward pass alone (a worker process per cell; the
# compiled model last in each row, as its compilation takes the longest)
bench=("$py" -m disan.tools.bench --device cuda --batch 64 --sizes 40,160 --models fast,bilstm,compiled
       --mem-cap-gb 60)
{
  timeout 240 "${bench[@]}"
  echo "training-step table: exit status $? (124: timed out)"
  timeout 120 "${bench[@]}" --forward-only --no-trace
  echo "forward table: exit status $? (124: timed out)"
} 2>&1 | tee "$out/gpu-bench.txt"

# ---- 4. an epoch, where the training code imports
if "$py" -c "import disan.training.train" 2> "$out/gpu-epoch.txt"; then
  timeout 60 "$py" -m disan.tools.bench --epoch --device cuda --vectors random --batching bucketed \
    --models fast,bilstm --sample 300 2>&1 | tee "$out/gpu-epoch.txt"
else
  echo "no epoch: the training code does not import with $py: $(tail -n 1 "$out/gpu-epoch.txt")" \
    | tee -a "$out/gpu-epoch.txt"
fi
echo "gpu_check.sh: $((SECONDS - start)) s; results in $out"
