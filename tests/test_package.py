"""The installable package: pyproject.toml agrees with requirements.txt and lists every package, and
`pip install .` into a fresh virtual environment gives a `disan` command and an importable `disan`
that work from another folder (the C++ kernel built from the installed source, the app served)."""
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


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with the package installed from a copy of the source; its requirements, pip and
    setuptools come from this interpreter's site-packages through a .pth file (no network, no download)."""
    tmp = tmp_path_factory.mktemp("install")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "requirements.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", str(source_copy(tmp / "src"))], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(tmp / "extensions")}
    env.pop("PYTHONPATH", None)
    env.pop("DISAN_CHECKPOINTS", None)
    return venv, elsewhere, env


def test_the_disan_command_works_from_another_folder(installed, make_checkpoint):
    venv, elsewhere, env = installed
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


def test_import_disan_loads_the_installed_package_and_builds_its_kernel(installed, make_checkpoint):
    venv, elsewhere, env = installed
    code = ("import disan, sys; pipe = disan.load(sys.argv[1], kernel='cpp'); print(disan.__file__); "
            "print(pipe.predict(['the glass bottle'])[0].label)")
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code, str(make_checkpoint("classify"))], cwd=elsewhere,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    where, label = done.stdout.split()
    assert Path(where).is_relative_to(venv) and label in ("negative", "positive", "neutral")


def test_disan_app_serves_the_installed_app_and_its_checkpoints(installed):
    venv, elsewhere, env = installed
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
