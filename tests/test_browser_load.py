"""A server's first visitors arriving together, and a restart with their browsers connected: K new browser
sessions at once on a server just started (a fresh HOME, an empty result cache), on the Attention page, then
on each analysis page in turn, then the server started again on the same port while the K tabs are open, and
each tab rerun at once. No session may show an exception, each draws its page's figures, and each result
the pages keep on disk is computed once for the K sessions.

The race this guards against: a session's run that starts while another session's thread is importing numpy,
a fraction of a second, so a cold start shows it in a few waves out of ten. Here the interleaving is forced:
the server imports numpy slowly (a sitecustomize on its PYTHONPATH holds numpy half-made in sys.modules for a
few seconds, and says when it starts), and the other K - 1 sessions start their runs meanwhile, so that a run
that depends on another session's import timing fails every time. The same sitecustomize logs each result
stored on disk.

Last, the machinery of ``python -m disan latency --soak`` on a few seconds of two sessions.
"""
import collections
import os
import time
from pathlib import Path

import pytest

from disan.store.memory import budget
from disan.nn.kernels import cpp
from disan.tools.browser import ANALYSIS_PAGES, CHROMIUM, VIEWPORT, chromium, free_port, server, wait_drawn, wait_final
from disan.tools.latency import soak

K = 4
MODEL = "trec"  # the shipped checkpoint with the smallest test split (500 questions)
EXCEPTION = '[data-testid="stException"]'

SERVER_SITE = """import importlib.abc, importlib.util, os, sys, time


class Patched(importlib.abc.MetaPathFinder):
    \"\"\"At the first import of the module ``name``: ``before()`` once it is in sys.modules, still empty, and
    ``after(module)`` once it is whole.\"\"\"
    def __init__(self, name, before=None, after=None):
        self.name, self.before, self.after = name, before, after

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):  # the module is in sys.modules already, still empty
            if self.before:
                self.before()
            run(module)
            if self.after:
                self.after(module)

        spec.loader.exec_module = exec_module
        return spec


def log_stores(diskcache):
    store = diskcache.store

    def logged(key, value):
        store(key, value)
        with open(os.environ["STORES_LOG"], "a") as log:
            log.write(f"{key} {type(value).__name__}\\n")

    diskcache.store = logged


def slowly():
    open(os.environ["NUMPY_IMPORTING"], "w").close()
    time.sleep(5)


sys.meta_path[:0] = [Patched("numpy", before=slowly),
                     Patched("disan.store.diskcache", after=log_stores)]
"""

# Counts the script runs that start in the page from now on.
COUNT_RUNS = """() => { window.__runs = 0; let last = null;
  new MutationObserver(() => {
    const state = document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state');
    if (state === 'running' && last !== 'running') window.__runs += 1;
    last = state;
  }).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-test-script-state']}); }"""


def no_exception(page) -> None:
    assert page.locator(EXCEPTION).count() == 0, page.locator(EXCEPTION).first.inner_text()


def draws_its_page(page, key: str | None) -> None:
    """The Attention page (``key`` None) or an analysis page (its corpus figure's key) drawn whole, without an
    exception; one shown first fails at once."""
    figure = ".js-plotly-plot .heatmaplayer" if key is None else f".st-key-{key} .main-svg"
    page.locator(f"{EXCEPTION}, {figure}").first.wait_for(timeout=300_000)
    no_exception(page)
    if key is None:
        wait_drawn(page, "· query ")
    else:
        wait_final(page, key)
    no_exception(page)


def rerun(pages, timeout_s: float = 120) -> None:
    """Rerun tabs (Streamlit's R key) as soon as they have reconnected to a restarted server."""
    waiting, deadline = list(pages), time.time() + timeout_s
    while waiting:
        assert time.time() < deadline, f"{len(waiting)} tabs did not rerun after the restart"
        for page in waiting:
            page.keyboard.press("r")
        pages[0].wait_for_timeout(300)
        waiting = [page for page in waiting if not page.evaluate("() => window.__runs > 0")]


def while_numpy_imports(marker: Path, first, others) -> None:
    """``first()`` starts a session's run, which imports numpy; ``others()`` the other sessions', once the
    server is inside that import."""
    marker.unlink(missing_ok=True)
    first()
    deadline = time.time() + 120
    while not marker.exists():
        assert time.time() < deadline, "the server never imported numpy"
        time.sleep(0.05)
    others()


@pytest.mark.usefixtures("data_root")  # the analysis pages read the checkpoint's test split
def test_k_sessions_at_once_on_a_fresh_server_and_through_a_restart(tmp_path):
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install -y chromium"
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SERVER_SITE, encoding="utf-8")
    stores, marker = tmp_path / "stores.log", tmp_path / "numpy-importing"
    env = {"HOME": str(tmp_path / "home"), "DISAN_CACHE_DIR": str(tmp_path / "cache"),
           "NUMPY_IMPORTING": str(marker), "STORES_LOG": str(stores),
           # the C++ kernel this machine has built, not a build of its own in the fresh HOME
           "TORCH_EXTENSIONS_DIR": str(cpp.build_directory().parent),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "site"), os.environ.get("PYTHONPATH")]))}
    port = free_port()
    with chromium() as browser:
        pages = [browser.new_context(viewport=VIEWPORT).new_page() for _ in range(K)]
        with server(env, port=port) as (_, url):
            def visit(page, path):
                page.goto(f"{url}/{path}?model={MODEL}", wait_until="commit")  # returns once the server answers

            while_numpy_imports(marker, lambda: visit(pages[0], ""), lambda: [visit(p, "") for p in pages[1:]])
            for page in pages:
                draws_its_page(page, None)
            for path, key in ANALYSIS_PAGES.values():
                for page in pages:  # at once
                    visit(page, path)
                for page in pages:
                    draws_its_page(page, key)
            for page in pages:
                page.evaluate(COUNT_RUNS)
        kinds = collections.Counter(line.split()[1] for line in stores.read_text().splitlines())
        assert {"Senses", "CaseStudy", "Atlas", "ErasureSummary"} <= set(kinds)  # the pages' corpus results
        times = collections.Counter(line.split()[0] for line in stores.read_text().splitlines())
        assert max(times.values()) == 1, times.most_common(3)
        with server(env, port=port):  # the tabs reconnect, and their users rerun them
            while_numpy_imports(marker, lambda: rerun(pages[:1]), lambda: rerun(pages[1:]))
            for page in pages:
                draws_its_page(page, key)  # the last analysis page's, which the tabs still show


def test_the_soak_counts_visits_and_watches_the_servers_memory_and_disk_cache():
    run = soak(0.1, sessions=2, pages=("", "gates"), models=("trec", "sick-e"), disk_mb=4)
    rounds = run["rounds"]
    assert run["exceptions"] == [] and run["stalled"] == 0
    assert run["visits"] == 2 * len(rounds) and [r[1] for r in rounds] == [2 * (k + 1) for k in range(len(rounds))]
    assert all(rss > 200 for _, _, rss, _ in rounds)  # the server's, with torch and a model loaded
    # each page traces its sentence, whose tokens are kept on disk: the soak reads the server's own cache
    assert 0 < rounds[-1][3] <= run["disk bound MB"] == 4
    assert run["trace bound MB"] == budget() / 2**20
