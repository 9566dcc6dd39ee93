"""Every lock and the package's own requirements resolve on every platform PyTorch has wheels for, at the lowest
and the highest Python the package supports, against the registry as a user's machine sees it.

``uv pip compile --python-platform`` resolves for another platform (pip's ``--platform`` evaluates environment
markers for the machine it runs on, so it cannot): with ``--no-build``, a package that has no wheel there fails the
resolution and is named. This machine's own pip settings (a folder of local wheels, a CPU build of torch) are left
out, so the registry's builds are what is resolved: on Linux the CUDA build of torch with its triton pin.
"""
import os
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# The platforms torch 2.13.0 has wheels for; its macOS wheels need macOS 14.
PLATFORMS = ("x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", "aarch64-apple-darwin", "x86_64-pc-windows-msvc")
SUPPORTED = [c.rsplit(" :: ", 1)[1] for c in PROJECT["classifiers"] if c.startswith("Programming Language :: Python :: 3.")]
LOWEST, HIGHEST = SUPPORTED[0], SUPPORTED[-1]
# pymdown-extensions, a tool of the documentation, needs Python 3.11.5 (the README says so)
LOWEST_WITH_DOCS = "3.11.5"

pytestmark = pytest.mark.skipif(shutil.which("uv", path=str(Path(sys.executable).parent)) is None
                                and shutil.which("uv") is None, reason="needs uv (requirements-test.txt)")


def compile_for(platform: str, python: str, *sources: str, extras: tuple[str, ...] = (),
                offline: bool = False) -> subprocess.CompletedProcess:
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["MACOSX_DEPLOYMENT_TARGET"] = "14.0"
    extra_flags = [flag for extra in extras for flag in ("--extra", extra)]
    return subprocess.run([uv, "pip", "compile", "--quiet", "--no-build", "--no-config", "--python-platform", platform,
                           "--python-version", python, "--output-file", os.devnull, *extra_flags, *sources,
                           *(["--offline"] if offline else [])],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def unresolved(done: subprocess.CompletedProcess) -> str:
    """uv's explanation, whose lines name the package that cannot be had."""
    return "\n".join(line for line in done.stderr.splitlines() if line.strip())[-3000:]


# What is resolved, at which Pythons (each resolution waits some 10-15 s on the registry's answers, so none is
# repeated): the tests' lock, which includes the app's and the documentation's, at the lowest and the highest
# Python; the app's lock alone at the lowest Python it supports, below the documentation's; pyproject.toml's
# ranges, which the wheel's metadata carries, with every extra.
CHECKS = {"requirements-test.txt": ((LOWEST_WITH_DOCS, HIGHEST), ()),
          "requirements.txt": ((LOWEST,), ()),
          "pyproject.toml": ((HIGHEST,), tuple(PROJECT["optional-dependencies"]))}


@pytest.fixture(scope="module")
def resolutions() -> dict:
    """Every check on every platform, run side by side: each waits mostly on the registry's answers."""
    jobs = {(source, platform, python): (platform, python, source, extras)
            for source, (pythons, extras) in CHECKS.items() for platform in PLATFORMS for python in pythons}
    with ThreadPoolExecutor(max_workers=8) as pool:
        done = {key: pool.submit(lambda a: compile_for(*a[:3], extras=a[3]), args) for key, args in jobs.items()}
        return {key: future.result() for key, future in done.items()}


@pytest.mark.parametrize("source", CHECKS)
@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_lock_and_the_package_resolve_on_every_platform_and_python(resolutions, source, platform):
    for python in CHECKS[source][0]:
        done = resolutions[source, platform, python]
        assert done.returncode == 0, f"{source} on {platform}, Python {python}:\n{unresolved(done)}"


def test_a_package_without_a_wheel_on_a_platform_is_named(resolutions, tmp_path):
    """The check fails, naming the package, for a lock like the one that pinned triton on every platform
    (offline: the resolutions above have just read triton's releases)."""
    lock = tmp_path / "requirements.txt"
    lock.write_text("triton==3.7.1\n")  # Triton has Linux wheels only
    done = compile_for("aarch64-apple-darwin", HIGHEST, str(lock), offline=True)
    assert done.returncode != 0 and "triton" in unresolved(done)
    assert compile_for("x86_64-unknown-linux-gnu", HIGHEST, str(lock), offline=True).returncode == 0
