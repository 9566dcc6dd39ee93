"""The installable package: every pin of the locks (requirements*.txt) satisfies its range in pyproject.toml,
which lists every package, and
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
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .test_own_data import ROWS, vectors, write_csv  # noqa: F401 (vectors is a fixture)

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


# Each lock file and the groups of pyproject.toml whose ranges its pins must satisfy: what running needs (the
# GloVe 50d package is an extra of the package, pinned for the app), the documentation's tools, the tests' tools.
LOCKS = {"requirements.txt": ("dependencies", "glove50"), "requirements-docs.txt": ("docs",),
         "requirements-test.txt": ("test", "gpu", "captum", "nnsight")}


def pins(lock: str) -> dict[str, Requirement]:
    """A lock file's own pins by package name (the files it includes with -r are locks of their own)."""
    lines = (line.strip() for line in (ROOT / lock).read_text().splitlines())
    found = [Requirement(line) for line in lines if line and not line.startswith(("#", "-r "))]
    return {canonicalize_name(r.name): r for r in found}


def ranges(*groups: str) -> dict[str, Requirement]:
    """pyproject.toml's requirements of some groups ("dependencies" or an extra's name) by package name, less
    the package's own extras that an extra names."""
    project = PYPROJECT["project"]
    found = [Requirement(text) for group in groups
             for text in (project["dependencies"] if group == "dependencies" else project["optional-dependencies"][group])]
    return {canonicalize_name(r.name): r for r in found if canonicalize_name(r.name) != canonicalize_name(project["name"])}


@pytest.mark.parametrize("lock", LOCKS)
def test_every_pin_of_the_locks_satisfies_its_range_in_pyproject(lock):
    pinned, allowed = pins(lock), ranges(*LOCKS[lock])
    assert set(pinned) == set(allowed), "the lock and pyproject.toml name different packages"
    for name, pin in pinned.items():
        [exact] = pin.specifier
        assert exact.operator == "==", f"{lock}: {pin} is not an exact pin"
        assert allowed[name].specifier.contains(exact.version), f"{pin} is outside pyproject.toml's {allowed[name]}"
        assert allowed[name].marker == pin.marker, f"{name}: the lock and pyproject.toml apply it on other platforms"
        # a range admits the next minor releases but not the next major one, which may break the API
        major = int(exact.version.split(".")[0])
        assert not allowed[name].specifier.contains(f"{major + 1}.0.0"), f"{allowed[name]} has no ceiling"


def test_the_app_installs_no_test_or_documentation_tool():
    app = set(pins("requirements.txt"))
    assert not app & (set(pins("requirements-test.txt")) | set(pins("requirements-docs.txt")))
    assert {"pytest", "playwright", "mkdocs", "triton"}.isdisjoint(app)
    test_lock = (ROOT / "requirements-test.txt").read_text().splitlines()
    assert {"-r requirements.txt", "-r requirements-docs.txt"} <= set(test_lock)  # the tests build the docs too


def test_the_package_is_licensed_and_says_its_version():
    import disan
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert project["license-files"] == ["LICENSE"] and project["authors"] and project["keywords"]
    assert disan.__version__ == project["version"]
    versions = [c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if c.startswith("Programming Language :: Python :: 3.")]
    assert project["requires-python"] == f">={versions[0]}"  # the lowest Python the classifiers name


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
    code = ("from disan.data.paths import site; from disan.inspect.catalog import list_checkpoints; print(site()); "
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


# The Training page's run on an upload, in the installed package: the upload kept, the model trained (its resume
# file kept) where the page puts them, and an analysis result cached.
TRAIN_AS_THE_PAGE = """
import dataclasses, sys
from pathlib import Path
from disan.app import training
from disan.data import paths, uploads
from disan.store import diskcache, keys
from disan.training.train import train
kept = uploads.save_upload(paths.uploads_dir(), "mine.csv", Path(sys.argv[1]).read_bytes())
own = training.data_fields(kept, "review", None, "sentiment", "classify", 0.2, 0.2)
cfg = training.train_config("mine", own, (), task=None, encoder="disan", epochs=1, patience=1, lr=0.001,
                            optimizer="adam", dropout=0.0, d_h=6, vectors=sys.argv[2], seed=0, cap=0)
train(dataclasses.replace(cfg, keep_state=True, d_fc=6, extra_vocab=0, batch_size=16))
diskcache.cached(keys.key_of("a test", n=1), lambda: [1.5])
"""


def test_an_installed_package_trains_into_the_user_data_folder_never_into_its_own(installed, tmp_path, vectors):
    venv, _, env, _ = installed
    home, here = tmp_path / "home", tmp_path / "here"
    here.mkdir()
    env = {**env, "HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "XDG_CACHE_HOME": str(home / "cache")}
    for name in ("DISAN_LOGDIR", "DISAN_UPLOADS", "DISAN_CACHE_DIR", "DISAN_VECTORS_DIR", "DISAN_DATA_DIR"):
        env.pop(name, None)
    python = venv / "bin" / "python"
    package = Path(subprocess.run([str(python), "-c", "import disan; print(disan.__file__)"], env=env, cwd=here,
                                  capture_output=True, text=True, check=True).stdout.strip()).parent

    def files() -> set[Path]:
        return {p for p in package.rglob("*") if "__pycache__" not in p.parts}

    before = files()
    done = subprocess.run([str(python), "-c", TRAIN_AS_THE_PAGE, str(write_csv(tmp_path / "mine.csv", ROWS)), vectors],
                          env=env, cwd=here, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert files() == before and not any(here.iterdir())
    mine = home / "data" / "disan"
    assert (mine / "uploads" / "mine.csv").read_bytes() == (tmp_path / "mine.csv").read_bytes()
    assert (mine / "checkpoints" / "mine" / "model.safetensors").is_file()
    assert (mine / "checkpoints" / "mine.resume.pt").is_file()
    assert any((mine / "runs" / "tensorboard" / "mine").glob("events.out.tfevents.*"))
    assert [p.parent.name for p in (home / "cache" / "disan").rglob("*.npz")] == ["results"]


def test_disan_app_refuses_a_checkpoints_folder_that_is_not_there(tmp_path, capsys):
    from disan.__main__ import run
    assert run(["app", "--checkpoints", str(tmp_path / "none")]) == 1
    assert f"the checkpoints folder {tmp_path / 'none'} does not exist" in capsys.readouterr().err
