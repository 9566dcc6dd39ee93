"""``disan app [--port N] [--checkpoints DIR]``: the Streamlit app, started from wherever one stands.

The app's script (app.py, app_pages/ and .streamlit/) lives at the repository's root, where
``streamlit run app.py`` runs it; an installed package carries a copy in ``disan/site/`` (see
pyproject.toml), with the shipped checkpoints. The command runs the first of the two it finds, in the
script's folder so that its .streamlit/config.toml applies. The checkpoints listed (and trained into)
are --checkpoints, else $DISAN_CHECKPOINTS, else the shipped ones and the user's
(:func:`disan.data.paths.checkpoint_folders`).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from disan.data.paths import CHECKPOINTS_ENV, site


def command(args: argparse.Namespace) -> tuple[list[str], dict, Path]:
    """(argv, environment, working folder) of the streamlit process that serves the app."""
    folder = site()
    env = dict(os.environ)
    if args.checkpoints:
        checkpoints = Path(args.checkpoints).expanduser()
        if not checkpoints.is_dir():
            raise FileNotFoundError(f"the checkpoints folder {checkpoints} does not exist")
        env[CHECKPOINTS_ENV] = str(checkpoints.resolve())  # the server runs in the script's folder
    argv = [sys.executable, "-m", "streamlit", "run", str(folder / "app.py"), "--server.port", str(args.port)]
    if args.headless:
        argv += ["--server.headless", "true"]
    return argv, env, folder


def parser() -> argparse.ArgumentParser:
    """The ``app`` command's arguments."""
    p = argparse.ArgumentParser(prog="disan app", description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=8501, help="the port to serve on (default: 8501)")
    p.add_argument("--checkpoints", help=f"the checkpoints folder (default: ${CHECKPOINTS_ENV}, else the shipped ones "
                                            "and the user's)")
    p.add_argument("--headless", action="store_true", help="do not open a browser")
    return p


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    argv, env, folder = command(args)
    os.chdir(folder)
    os.execve(sys.executable, argv, env)  # the app replaces this process: Ctrl-C and exit status are its own


if __name__ == "__main__":
    sys.exit(main())
