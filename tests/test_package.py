"""The installable package: pyproject.toml agrees with requirements.txt and lists every package, and
`pip install .` from a checkout into a fresh virtual environment gives a `disan` command and an importable
`disan` that work from another folder (the C++ kernel built by the install, the app served), packs only the
shipped checkpoints and leaves the checkout clean; the checkout and the package build the kernel once."""
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirement_lines() -> tuple[list[str], list[str]]:
    """(the runtime pins, the test pins) of requirements.txt: the test ones follow its '# tests' line."""
    runtime, tests = [], []
    current = runtime
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.strip().lower() == "# tests":
            current = tests
        elif line.strip() and not line.startswith("#"):
            current.append(line.strip())
    return runtime, tests


def test_dependencies_are_those_of_requirements_txt():
    runtime, tests = requirement_lines()
    assert PYPROJECT["project"]["dependencies"] == runtime
    assert PYPROJECT["project"]["optional-dependencies"]["test"] == tests


def test_every_package_is_listed():
    found = sorted(".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "disan").rglob("__init__.py"))
    listed = PYPROJECT["tool"]["setuptools"]["packages"]
    assert sorted(name for name in listed if name != "disan.site") == found


def source_copy(dest: Path) -> Path:
    """The files of the working tree that git tracks or would (not those it ignores): a clean checkout."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True)
    if files.returncode != 0:
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(".git", "runs", "__pycache__", "*.egg-info", "build"))
        return dest
    for name in filter(None, files.stdout.split("\0")):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def git(*args, cwd) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


# A model the Training page left in checkpoints/ (git ignores it): not one of the shipped ones.
LEFT_BY_TRAINING = "trec-disan-20260101-120000"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with the package installed from a checkout (a git repository of a copy of the source)
    holding a model left by the Training page; its requirements, pip and setuptools come from this
    interpreter's site-packages through a .pth file (no network, no download, no build isolation)."""
    if shutil.which("git") is None or shutil.which("c++") is None:
        pytest.skip("needs git and a C++ compiler")
    tmp = tmp_path_factory.mktemp("install")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "requirements.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    checkout = source_copy(tmp / "src")
    git("init", "-q", cwd=checkout)
    git("add", "-A", cwd=checkout)
    git("-c", "user.name=test", "-c", "user.email=test@localhost", "commit", "-qm", "source", cwd=checkout)
    shutil.copytree(checkout / "checkpoints" / "trec", checkout / "checkpoints" / LEFT_BY_TRAINING)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "."], cwd=checkout, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(tmp / "extensions")}
    env.pop("PYTHONPATH", None)
    env.pop("DISAN_CHECKPOINTS", None)
    return venv, elsewhere, env, checkout


def test_the_package_holds_only_the_shipped_checkpoints_and_leaves_the_checkout_clean(installed):
    venv, elsewhere, env, checkout = installed
    shipped = {Path(name).parts[1] for name in git("ls-files", "checkpoints", cwd=checkout).split()}
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "from disan.data.paths import site; print(site())"],
                          cwd=elsewhere, env=env, capture_output=True, text=True, check=True).stdout.strip()
    packed = {p.name for p in (Path(site) / "checkpoints").iterdir()}
    assert "sst5" in shipped and LEFT_BY_TRAINING not in shipped and packed == shipped
    assert not (Path(site) / "setup.py").exists()  # the root's build script is not part of the app
    assert git("status", "--porcelain", cwd=checkout) == ""


def test_the_disan_command_works_from_another_folder(installed, make_checkpoint):
    venv, elsewhere, env, _ = installed
    shown = subprocess.run([str(venv / "bin" / "disan"), "--help"], cwd=elsewhere, env=env, capture_output=True,
                           text=True)
    assert shown.returncode == 0 and shown.stdout.startswith("usage: disan")
    for cmd in ("train", "evaluate", "predict", "bench", "app", "download"):
        assert cmd in shown.stdout
    (elsewhere / "in.txt").write_text("the man is pouring tea\na biker\n")
    done = subprocess.run([str(venv / "bin" / "disan"), "predict", str(make_checkpoint("classify")), "in.txt",
                           "--out", "out.csv", "--no-progress"], cwd=elsewhere, env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert (elsewhere / "out.csv").read_text().splitlines()[0] == "text,prediction,p_negative,p_positive,p_neutral"


def test_import_disan_loads_the_installed_package_and_its_kernel_without_building(installed, make_checkpoint):
    venv, elsewhere, env, _ = installed
    code = ("import disan, sys, torch; pipe = disan.load(sys.argv[1], kernel='cpp'); print(disan.__file__); "
            "print(pipe.predict(['the glass bottle'])[0].label); print(*torch.ops.loaded_libraries)")
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code, str(make_checkpoint("classify"))], cwd=elsewhere,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    where, label, library = done.stdout.split()
    assert Path(where).is_relative_to(venv) and label in ("negative", "positive", "neutral")
    assert Path(library).is_relative_to(venv) and not Path(env["TORCH_EXTENSIONS_DIR"]).exists()


# Run in a checkout (its folder is the working directory, so `import disan` finds it) or with the installed
# package: the path "auto" takes at once, then (args "wait") the eager path's s and, once the background
# build is done, the C++ path's, which must agree; and the library loaded.
KERNEL_USE = """
import sys, time, torch
from disan.nn import kernels
from disan.nn.masks import attention_mask
first = kernels.resolve()
print(first)
if sys.argv[1:] == ["wait"]:
    g = torch.Generator().manual_seed(0)
    key, query, values = (torch.randn(3, 9, 8, generator=g) for _ in range(3))
    mask = attention_mask(torch.tensor([[True] * 9, [True] * 5 + [False] * 4, [True] * 9]), "forward")
    served = kernels.token2token(key, query, values, mask)
    deadline = time.time() + 600
    while kernels.resolve() != "cpp" and time.time() < deadline:
        time.sleep(0.5)
    print(torch.allclose(served, kernels.token2token(key, query, values, mask), atol=1e-6))
print(*torch.ops.loaded_libraries)
"""


def test_a_checkout_and_the_installed_package_build_the_kernel_once(installed, tmp_path):
    """The installed package brings its library for this machine's instruction set; for a lower one (as where
    the package moved to another machine) it builds at run time, into the folder a checkout of the same
    source builds into: whichever comes first builds, and neither rebuilds the other's. The eager path
    serves while the checkout builds in the background."""
    import torch
    other = {"AVX512": "avx2", "AVX2": "default"}.get(torch.backends.cpu.get_cpu_capability())
    if other is None:
        pytest.skip("needs a CPU with AVX2, to run on a lower instruction set than the installed library's")
    venv, elsewhere, env, checkout = installed
    env = {**env, "HOME": str(tmp_path)}
    del env["TORCH_EXTENSIONS_DIR"]  # PyTorch's default under $HOME, as a user has it
    env.pop("XDG_CACHE_HOME", None)
    builds = tmp_path / ".cache" / "torch_extensions"

    def use(python, cwd, capability=None, *args):
        run_env = {**env, "ATEN_CPU_CAPABILITY": capability} if capability else env
        done = subprocess.run([str(python), "-c", KERNEL_USE, *args], cwd=cwd, env=run_env, capture_output=True,
                              text=True, timeout=900)
        assert done.returncode == 0, done.stderr
        return done.stdout.split("\n")

    installed_python = venv / "bin" / "python"
    first, library, _ = use(installed_python, elsewhere)
    assert first == "cpp" and Path(library).is_relative_to(venv) and not builds.exists()

    first, agree, library, _ = use(sys.executable, checkout, other, "wait")
    assert first == "eager" and agree == "True"
    [folder] = builds.iterdir()
    assert Path(library) == folder / f"{folder.name}.so" and (folder / "token2token.cpp").is_file()
    built = {f.name: f.stat().st_mtime_ns for f in folder.iterdir()}

    for python, cwd in ((installed_python, elsewhere), (sys.executable, checkout)):
        first, library, _ = use(python, cwd, other)
        assert first == "cpp" and Path(library) == folder / f"{folder.name}.so"
    assert [p.name for p in builds.iterdir()] == [folder.name]
    assert {f.name: f.stat().st_mtime_ns for f in folder.iterdir()} == built  # nothing rebuilt, nothing rewritten


def test_disan_app_serves_the_installed_app_and_its_checkpoints(installed):
    venv, elsewhere, env, _ = installed
    code = ("from disan.data.paths import site; from disan.explore.catalog import list_checkpoints; print(site()); "
            "print(*(e.name for e in list_checkpoints() if e.ok))")
    where, listed = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=elsewhere, env=env,
                                   capture_output=True, text=True, check=True).stdout.splitlines()
    assert Path(where).is_relative_to(venv) and (Path(where) / "checkpoints" / "sst5" / "config.json").is_file()
    assert "sst5" in listed.split()  # the shipped checkpoints are listed without $DISAN_CHECKPOINTS
    port = free_port()
    app = subprocess.Popen([str(venv / "bin" / "disan"), "app", "--port", str(port), "--headless"], cwd=elsewhere,
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline, health = time.time() + 180, None
        while time.time() < deadline and app.poll() is None:
            try:
                health = urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5).read()
                break
            except OSError:
                time.sleep(1)
        assert health == b"ok", app.stdout.read() if app.poll() is not None else "no answer in 180 s"
    finally:
        app.terminate()
        app.wait(30)


def test_disan_app_refuses_a_checkpoints_folder_that_is_not_there(tmp_path, capsys):
    from disan.__main__ import run
    assert run(["app", "--checkpoints", str(tmp_path / "none")]) == 1
    assert f"the checkpoints folder {tmp_path / 'none'} does not exist" in capsys.readouterr().err
