"""`pip install .` builds the C++ token2token kernel, so that an installed package never compiles at run time.

One library, for the instruction set PyTorch dispatches to on the building machine (AVX512, AVX2 or
neither), named by :func:`disan.nn.kernels.cpp.library_name`; where that name differs at run time
(another instruction set, another torch build), the package builds at run time as a checkout does.
Where it cannot be built (not Linux, no C++ compiler:
:func:`disan.nn.kernels.cpp.build_unavailable`), the package installs without it and the portable PyTorch
path serves. The rest of the metadata is in pyproject.toml. The build needs torch (pinned in its [build-system]); to build
against the torch already installed instead of downloading it into an isolated environment:
``pip install --no-build-isolation .``.

The app's shipped checkpoints are the ones git tracks (.gitignore keeps the Training page's runs out of
it), so that a run left in checkpoints/ is not installed; without git (an sdist, an archive) the folder
holds only the shipped ones. Intermediate files go to a temporary folder, not into the checkout.
"""
import atexit
import importlib.util
import shutil
import subprocess
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = Path(__file__).resolve().parent
KERNEL = Path("disan/nn/kernels/cpp.py")


def kernel_module():
    """disan/nn/kernels/cpp.py alone (it imports nothing of disan): its naming and flags, without disan's imports."""
    spec = importlib.util.spec_from_file_location("disan_kernel_build", ROOT / KERNEL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shipped_checkpoint_files() -> list[str]:
    """The files under checkpoints/ that git tracks, relative to the root (the package dir of disan.site)."""
    tracked = subprocess.run(["git", "ls-files", "-z", "checkpoints"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode == 0:
        return sorted(filter(None, tracked.stdout.split("\0")))
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "checkpoints").glob("*/*") if p.is_file())


def scratch() -> str:
    folder = tempfile.mkdtemp(prefix="disan-build-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


class BuildKernel(BuildExtension):
    """The kernel is not needed to install: where it does not compile (no C++ compiler, say), the package
    builds it at run time, or runs the eager path, as a checkout does."""

    def build_extensions(self):
        try:
            super().build_extensions()
        except Exception as err:  # the compiler's and ninja's errors come as several types
            self.warn(f"the C++ kernel was not built, so it will be at run time where it can be: {err}")


class BuildPy(build_py):
    """disan.site is the repository's root: its module is the app's script, not this file."""

    def find_package_modules(self, package, package_dir):
        return [m for m in super().find_package_modules(package, package_dir) if m[:2] != ("disan.site", "setup")]


cpp = kernel_module()
unavailable = cpp.build_unavailable()
if unavailable is not None:
    print(f"disan-explorer: the C++ kernel is not built ({unavailable}); the portable PyTorch path will serve")
setup(
    ext_modules=[] if unavailable else [
        CppExtension(f"disan.nn.kernels.{cpp.library_name()}", [str(cpp.SOURCE.relative_to(ROOT))],
                     extra_compile_args=cpp.compile_flags(), extra_link_args=list(cpp.LINK_FLAGS))],
    cmdclass={"build_ext": BuildKernel, "build_py": BuildPy},
    # the kernel's source, for a run-time build where the installed library does not fit
    package_data={"disan.nn.kernels": ["csrc/*.cpp"],
                  "disan.site": ["app_pages/*.py", ".streamlit/config.toml", *shipped_checkpoint_files()]},
    options={"build": {"build_base": scratch()}, "egg_info": {"egg_base": scratch()}},
)
