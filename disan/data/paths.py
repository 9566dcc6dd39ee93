"""Where the project's folders are, in a checkout and in an installed package.

A checkout's root holds disan/, the app's script (app.py, app_pages/, .streamlit/) and the shipped
checkpoints/. An installed package carries the app's script and the shipped checkpoints inside it, in
disan/site/ (pyproject.toml's ``disan.site``); the checkout's other folders (results/, docs/, runs/)
exist in a checkout only.

What a user makes goes to :func:`user_folder` (trained models and their resume files in ``checkpoints/``,
TensorBoard logs in ``runs/tensorboard/``, uploads in ``uploads/``): a checkout's root, where git ignores
them, or else the platform's user data folder, because pip owns an installed package's folder and a
reinstall deletes what is in it. Caches (analysis results, converted word vectors) go to
:func:`cache_folder`, the platform's user cache folder, in a checkout too. docs/data.md tables the folders
on each platform.
"""
from __future__ import annotations

import os
from pathlib import Path

import platformdirs

PACKAGE = Path(__file__).resolve().parents[1]  # disan/
REPO_ROOT = PACKAGE.parent                     # the checkout's root (site-packages/ when installed)
# Where the app's script is: inside the installed package, or at the root of a checkout.
SITES = (PACKAGE / "site", REPO_ROOT)
CHECKPOINTS_ENV = "DISAN_CHECKPOINTS"
DATA_ENV = "DISAN_DATA_DIR"  # the benchmark data folder
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
UPLOADS_ENV = "DISAN_UPLOADS"
NAME = "disan"  # the folder's name in the platform's user data and cache folders
# How a command's checkpoint argument is read (disan.nn.checkpoint.locate), for its --help.
CHECKPOINT_HELP = "a checkpoint directory, or the name of a shipped or trained one from any folder (e.g. sst5)"


def holds_app(folder: Path) -> bool:
    """Whether ``folder`` holds the app's script: app.py and app_pages/."""
    return (folder / "app.py").is_file() and (folder / "app_pages").is_dir()


def checkout() -> bool:
    """Whether disan runs from a checkout (the app's script beside disan/, as git holds them; an editable
    install is one too) rather than from an installed package, whose folder it never writes into."""
    return holds_app(REPO_ROOT)


def site() -> Path:
    """The folder that holds app.py, app_pages/ and the shipped checkpoints; OSError when there is none."""
    for folder in SITES:
        if holds_app(folder):
            return folder
    raise FileNotFoundError(f"the app's script is missing: no app.py with app_pages/ in {' or '.join(map(str, SITES))}")


def shipped_checkpoints() -> Path:
    """The checkpoints that come with the project, beside the app's script."""
    return site() / "checkpoints"


def user_folder() -> Path:
    """Where what a user makes goes: a checkout's root, else the platform's user data folder (XDG_DATA_HOME
    on Linux, ~/Library/Application Support on macOS, %LOCALAPPDATA% on Windows)."""
    return REPO_ROOT if checkout() else platformdirs.user_data_path(NAME, appauthor=False)


def cache_folder() -> Path:
    """The platform's user cache folder of disan (XDG_CACHE_HOME on Linux, ~/Library/Caches on macOS,
    %LOCALAPPDATA% on Windows): what can be made again never goes into a checkout either."""
    return platformdirs.user_cache_path(NAME, appauthor=False)


def checkpoints_dir() -> Path:
    """Where the app trains models into: ``$DISAN_CHECKPOINTS``, else ``checkpoints/`` of :func:`user_folder`
    (in a checkout, the shipped checkpoints' own folder)."""
    return Path(os.environ.get(CHECKPOINTS_ENV) or user_folder() / "checkpoints").expanduser()


def checkpoint_folders() -> list[Path]:
    """Where checkpoints are listed and found by name: ``$DISAN_CHECKPOINTS`` alone when it is set, else
    the shipped checkpoints, then the user's (one folder in a checkout)."""
    if os.environ.get(CHECKPOINTS_ENV):
        return [checkpoints_dir()]
    return list(dict.fromkeys([shipped_checkpoints(), checkpoints_dir()]))


def uploads_dir() -> Path:
    """Where the Training page keeps uploaded files: ``$DISAN_UPLOADS``, else ``uploads/`` of
    :func:`user_folder`; never the benchmark data folder, which may be shared and read-only."""
    return Path(os.environ.get(UPLOADS_ENV) or user_folder() / "uploads").expanduser()
