"""A session's first run asks the browser for plotly's code before the server's imports (disan.app.early)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from disan.app import early

from .test_app import APP, checkpoints  # noqa: F401  (the fixture)

ROOT = Path(APP).parent

# A fresh interpreter (nothing imported yet, as a server just started): the app's first run, then a second
# one, with early.start wrapped to record what was imported when it was called and what it returned.
FIRST_RUNS = """import json, sys
from streamlit.testing.v1 import AppTest
from disan.app import early
calls = []
real = early.start
def start():
    heavy = sorted(m for m in ("torch", "spacy", "disan.nn", "disan.inspect") if m in sys.modules)
    slot = real()
    calls.append({"imported": heavy, "sent": slot is not None})
    return slot
early.start = start
at = AppTest.from_file(sys.argv[1], default_timeout=120)
at.switch_page(sys.argv[2])
at.run()
assert not at.exception, at.exception
def left():
    return [c.key for c in at.get("plotly_chart") if c.key == early.KEY]
first = left()
at.run()
calls.append({"left": [first, left()], "charts": len(at.get("plotly_chart"))})
print(json.dumps(calls))
"""


def first_runs(page: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-c", FIRST_RUNS, APP, page], capture_output=True, text=True,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_early_module_imports_what_plotly_looks_up_and_leaves_torch_unimported():
    """Plotly uses numpy, pandas and PIL.Image if they are in sys.modules (get_module(..., should_load=False)):
    the early module imports them whole, so that no session's plotly finds one half-imported by another."""
    probe = ("import sys, disan.app.early\n"
             "from _plotly_utils import optional_imports\n"
             "looked_up = [m for m in ('numpy', 'pandas', 'PIL.Image') if optional_imports.get_module(m, False)]\n"
             "print(looked_up, sorted(m for m in ('torch', 'spacy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['numpy', 'pandas', 'PIL.Image'] []"


# The Attention page, and a page that stops early (st.stop: no model B takes the same input)
@pytest.mark.quick
@pytest.mark.parametrize("page, stops", [("app_pages/attention.py", False), ("app_pages/compare_models.py", True)])
def test_the_first_run_sends_the_hidden_figure_before_the_imports_and_removes_it(checkpoints, page, stops):  # noqa: F811
    first, second, after = first_runs(page)
    assert first == {"imported": [], "sent": True}
    assert not second["sent"]  # once per session
    # gone at the end of the first run, or of the next one when the page stopped early
    assert after["left"] == [[early.KEY] if stops else [], []]
    # the page's own figures only: the Attention page's five and the prediction's
    assert after["charts"] == (5 + 1 if page.endswith("attention.py") else 0)
