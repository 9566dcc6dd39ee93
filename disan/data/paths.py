"""Where the project's folders are, in a checkout and in an installed package.

A checkout's root holds disan/, the app's script (app.py, app_pages/, .streamlit/) and the shipped
checkpoints/. An installed package carries the app's script and the shipped checkpoints inside it, in
disan/site/ (pyproject.toml's ``disan.site``); the checkout's other folders (results/, docs/, runs/)
exist in a checkout only.
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # disan/
REPO_ROOT = PACKAGE.parent                     # the checkout's root (site-packages/ when installed)
# Where the app's script is: inside the installed package, or at the root of a checkout.
SITES = (PACKAGE / "site", REPO_ROOT)
CHECKPOINTS_ENV = "DISAN_CHECKPOINTS"


def site() -> Path:
    """The folder that holds app.py, app_pages/ and the shipped checkpoints; OSError when there is none."""
    for folder in SITES:
        if (folder / "app.py").is_file() and (folder / "app_pages").is_dir():
            return folder
    raise FileNotFoundError(f"the app's script is missing: no app.py with app_pages/ in {' or '.join(map(str, SITES))}")


def shipped_checkpoints() -> Path:
    """The checkpoints that come with the project, beside the app's script."""
    return site() / "checkpoints"


def checkpoints_dir() -> Path:
    """Where checkpoints are listed and trained into: ``$DISAN_CHECKPOINTS``, else the shipped ones."""
    return Path(os.environ.get(CHECKPOINTS_ENV) or shipped_checkpoints())
