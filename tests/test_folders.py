"""Where files go: caches in the user's cache folder, what an installed package's user makes (models, uploads,
event files) in the user's data folder beside the shipped checkpoints it lists with them, and checkpoints
named from any folder by the commands and ``disan.load``."""
import sys
from pathlib import Path

import pytest

import disan
from disan.__main__ import run
from disan.data import glove100, paths
from disan.inspect import catalog
from disan.store import diskcache, keys
from disan.nn import checkpoint
from disan.training import board

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ["sick", "sick-e", "sst5", "trec"]


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_CACHE_HOME is the Linux convention")
def test_the_caches_follow_xdg_cache_home_unless_their_variables_say_otherwise(tmp_path, monkeypatch):
    monkeypatch.delenv(diskcache.DIR_ENV, raising=False)
    monkeypatch.delenv(glove100.VECTORS_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert diskcache.cache_dir() == tmp_path / "xdg" / "disan"
    assert glove100.cache_dir() == tmp_path / "xdg" / "disan" / "vectors"
    diskcache.cached(keys.key_of("a test", n=1), lambda: [1.5])
    assert [p.parent.name for p in (tmp_path / "xdg" / "disan").rglob("*.npz")] == ["results"]
    monkeypatch.setenv(diskcache.DIR_ENV, str(tmp_path / "mine"))
    monkeypatch.setenv(glove100.VECTORS_ENV, str(tmp_path / "vectors"))
    assert diskcache.cache_dir() == tmp_path / "mine" and glove100.cache_dir() == tmp_path / "vectors"


def test_a_checkout_keeps_its_layout(monkeypatch):
    for name in (paths.CHECKPOINTS_ENV, paths.UPLOADS_ENV, board.LOGDIR_ENV):
        monkeypatch.delenv(name, raising=False)
    assert paths.checkout()
    assert paths.checkpoints_dir() == ROOT / "checkpoints" and paths.checkpoint_folders() == [ROOT / "checkpoints"]
    assert paths.uploads_dir() == ROOT / "uploads" and board.logdir_root() == ROOT / "runs" / "tensorboard"
    ignored = (ROOT / ".gitignore").read_text().split()
    assert {"/runs/", "/uploads/", "/checkpoints/*"} <= set(ignored)


@pytest.fixture
def installed_layout(tmp_path, monkeypatch):
    """This source laid out as an installed package (not a checkout), its user data folder under
    XDG_DATA_HOME in tmp_path, and the working directory another folder."""
    if sys.platform != "linux":
        pytest.skip("XDG_DATA_HOME is the Linux convention")
    monkeypatch.setattr(paths, "checkout", lambda: False)
    for name in (paths.CHECKPOINTS_ENV, paths.UPLOADS_ENV, board.LOGDIR_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return tmp_path / "data" / "disan"


def test_an_installed_package_keeps_what_its_user_makes_in_the_user_data_folder(installed_layout):
    mine = installed_layout
    assert paths.checkpoints_dir() == mine / "checkpoints" and paths.uploads_dir() == mine / "uploads"
    assert board.logdir_root() == mine / "runs" / "tensorboard"
    assert paths.checkpoint_folders() == [ROOT / "checkpoints", mine / "checkpoints"]


def test_the_shipped_checkpoints_and_the_users_are_listed_together_and_found_by_name(installed_layout,
                                                                                       make_checkpoint):
    mine = installed_layout / "checkpoints"
    make_checkpoint("classify", name="data/disan/checkpoints/reviews")
    make_checkpoint("classify", name="data/disan/checkpoints/sst5")  # hidden by the shipped one of that name
    listed = catalog.list_checkpoints()
    assert [(e.name, e.shipped, e.ok) for e in listed] == [
        *((name, True, True) for name in SHIPPED), ("reviews", False, True), ("sst5", False, False)]
    assert "rename its folder" in listed[-1].error
    assert checkpoint.locate("reviews") == mine / "reviews"
    assert checkpoint.locate("sst5") == ROOT / "checkpoints" / "sst5"
    assert disan.load("reviews").path == mine / "reviews"
    with pytest.raises(checkpoint.CheckpointError) as refused:
        checkpoint.locate("nope")
    assert str(refused.value).endswith(f"the names there: {', '.join(sorted({*SHIPPED, 'reviews'}))}")
    assert str(mine) in str(refused.value)


def test_the_commands_take_a_checkpoint_by_name_and_a_path_that_exists_wins(tmp_path, make_checkpoint, monkeypatch,
                                                                             capsys):
    monkeypatch.setenv(paths.CHECKPOINTS_ENV, str(tmp_path / "checkpoints"))
    make_checkpoint("classify", name="checkpoints/tiny")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    Path("in.txt").write_text("the man is pouring tea\n")
    assert run(["predict", "tiny", "in.txt", "--out", "out.csv", "--no-progress"]) == 0
    assert Path("out.csv").read_text().splitlines()[0] == "text,prediction,p_negative,p_positive,p_neutral"
    assert run(["report", "tiny", "the man is pouring tea", "--out", "r.html", "--steps", "2"]) == 0
    assert "pouring" in Path("r.html").read_text()
    capsys.readouterr()
    assert run(["evaluate", "nope"]) == 1
    assert capsys.readouterr().err == (f"error: no checkpoint at nope, nor one of that name in "
                                       f"{tmp_path / 'checkpoints'}; the names there: tiny\n")
    Path("tiny").mkdir()  # a folder of that name here is what the command means
    with pytest.raises(checkpoint.CheckpointError, match="tiny is not a checkpoint"):
        disan.load("tiny")


def test_disan_app_without_checkpoints_leaves_the_listing_to_the_server(monkeypatch):
    from argparse import Namespace

    from disan.tools.app import command
    monkeypatch.delenv(paths.CHECKPOINTS_ENV, raising=False)
    _, env, _ = command(Namespace(checkpoints=None, port=8642, headless=True))
    assert paths.CHECKPOINTS_ENV not in env  # the server lists the folders of checkpoint_folders()
