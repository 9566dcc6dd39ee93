"""Where neither Triton nor a C++ compiler is: macOS and Windows (Triton has Linux wheels only, and the C++ kernel
is built on Linux only), or a Linux machine without build tools. The quick tier's prediction tests and the app's
first page run there on the portable PyTorch path, which says so in one warning and never with a traceback.

Simulated here in a subprocess: a ``triton`` package that cannot be imported first on the path, a PATH with the
interpreter's folder alone (no ``c++``), an empty ``TORCH_EXTENSIONS_DIR`` and no library beside the package.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "disan" / "nn" / "kernels"
UNAVAILABLE = "the C++ token2token kernel is unavailable"

FIRST_PAGE = """
import warnings
from streamlit.testing.v1 import AppTest
from disan.nn import kernels
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    at = AppTest.from_file("app.py", default_timeout=240)
    at.run()
    print(kernels.resolve())
assert not at.exception, at.exception
print(len(at.get("plotly_chart")))
print(sum("C++ token2token" in str(w.message) for w in said))
for w in said:
    if "C++ token2token" in str(w.message):
        print(w.message)
"""


def bare_machine(tmp_path: Path) -> dict:
    """The environment of a machine with neither Triton nor a compiler nor a built kernel."""
    blocked = tmp_path / "blocked" / "triton"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('No module named triton (blocked by the test)')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CXX", "CC", "DISAN_KERNEL", "PYTHONPATH")}
    env.update(PATH=str(Path(sys.executable).parent), PYTHONPATH=f"{blocked.parent}{os.pathsep}{ROOT}",
               TORCH_EXTENSIONS_DIR=str(tmp_path / "extensions"), HOME=str(tmp_path / "home"),
               DISAN_CACHE_DIR=str(tmp_path / "cache"), PYTHONWARNINGS="default")
    assert shutil.which("c++", path=env["PATH"]) is None and shutil.which("g++", path=env["PATH"]) is None
    assert not list(KERNELS.glob("disan_token2token_*"))  # no library beside the package
    return env


def test_predictions_and_the_first_page_need_neither_triton_nor_a_compiler(tmp_path):
    env = bare_machine(tmp_path)
    probe = subprocess.run([sys.executable, "-c", "import triton"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "blocked by the test" in probe.stderr
    tests = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/test_predict.py"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    summary = next(line for line in reversed(tests.stdout.splitlines()) if " passed" in line)
    assert "failed" not in summary and "error" not in summary
    assert UNAVAILABLE in tests.stdout  # pytest's summary of warnings: the eager path served, and said why

    page = subprocess.run([sys.executable, "-c", FIRST_PAGE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert page.returncode == 0, page.stderr[-3000:]
    path, figures, warned, *message = page.stdout.strip().splitlines()
    assert path == "eager" and int(figures) >= 1
    assert warned == "1" and "no C++ compiler (c++) on PATH" in message[0]  # said once, the reason named
    assert "Traceback" not in page.stderr
    said = [line for line in tests.stdout.splitlines() if UNAVAILABLE in line]
    assert len(said) == 1 and said[0].strip().startswith("disan.nn.kernels:0: RuntimeWarning:")  # one line
    assert not (tmp_path / "extensions").exists() or not any((tmp_path / "extensions").iterdir())  # no build began


ELSEWHERE = """
import sys, warnings
import torch
from disan.nn import kernels
from disan.nn.kernels import cpp
sys.platform = sys.argv[1]  # after the imports: what the kernel's build reads when it is asked for
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    paths = [kernels.resolve() for _ in range(3)]
    x = torch.randn(2, 5, 4)
    kernels.token2token(x, x, x, torch.ones(2, 5, 5, dtype=torch.bool))
try:
    kernels.resolve("cpp")
    cpp.load()
except RuntimeError as err:
    print("refused:", err)
print(*paths, len(said), said[0].message if said else "", sep="\\n")
"""


@pytest.mark.quick
@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_on_macos_and_windows_nothing_is_built_and_the_eager_path_serves(tmp_path, platform):
    """macOS's clang has no OpenMP and Windows builds with MSVC: the kernel is not built there, at run time or
    (setup.py asks the same function) at install, and asking for it by name says why."""
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(tmp_path / "extensions")}
    env.pop("DISAN_KERNEL", None)
    done = subprocess.run([sys.executable, "-c", ELSEWHERE, platform], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    refused, *paths, warned, message = done.stdout.strip().splitlines()
    assert refused == f"refused: it is built on Linux only, not on {platform}"
    assert paths == ["eager"] * 3 and warned == "1" and f"not on {platform}" in message
    assert not (tmp_path / "extensions").exists()  # no build was started
