"""The app in a real browser, as the browser tests and ``disan latency`` drive it: ``streamlit run app.py``
on a free local port (:func:`server`), Debian's Chromium at /usr/bin/chromium through Playwright's sync API
(:func:`chromium`; never ``playwright install``), and what a user does on a page: type a sentence, open a
page, choose an option, then wait until the script run has ended (``[data-testid=stApp]`` with
``data-test-script-state=notRunning``) and the change is drawn.

Playwright is imported only when a browser starts, so importing this module costs nothing a test without
one would not pay.
"""
from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from disan.data.paths import site

SENTENCE = ("families have some dogs in front of a carousel while a man is pouring a glass of tea and "
            "the volleyball match is in progress between ladies near the big fountain at the restaurant")
CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps trying hosts that a closed network refuses.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1600, "height": 1000}


def sentence(n_tokens: int, seed: int = 0, marks: dict[int, str] | None = None) -> str:
    """A sentence of ``n_tokens`` words from :data:`SENTENCE` (shuffled unless seed is 0), with ``marks``
    (position -> word) put in place, so that a figure's title can tell the new sentence has been drawn."""
    words = SENTENCE.split()
    words = (words * (n_tokens // len(words) + 1))[:n_tokens]
    if seed:
        random.Random(seed).shuffle(words)
    for position, word in (marks or {}).items():
        words[position] = word
    return " ".join(words)


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server(env: dict[str, str] | None = None, timeout: float = 120, root: Path | None = None,
           port: int | None = None):
    """``streamlit run app.py`` of ``root`` (default: this checkout's site) on ``port`` (default: a free local
    one; a restarted server given the port of the one before keeps the origin a browser has cached): yields
    (process, URL); stopped on exit."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=root or site(), env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"streamlit did not start (exit code {proc.poll()})") from None
                time.sleep(0.3)
        yield proc, url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def chromium(executable: str = CHROMIUM):
    """A headless Chromium driven by Playwright (never ``playwright install``: the system's browser)."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


# True once the script run has ended.
IDLE = """() => document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state') === 'notRunning'"""
# True once the script run has ended and a figure title contains the text: the change is drawn.
_DRAWN = f"""t => ({IDLE})()
  && [...document.querySelectorAll('.js-plotly-plot .gtitle, .js-plotly-plot .annotation-text')]
       .some(e => e.textContent.includes(t))"""


def wait_drawn(page, title: str, timeout_s: float = 180) -> None:
    """Wait until the app is idle and a figure whose title contains ``title`` is drawn."""
    page.wait_for_function(_DRAWN, arg=title, timeout=timeout_s * 1000)


def wait_idle(page, timeout_s: float = 180) -> None:
    """Wait until the script run has ended and its widgets are drawn."""
    page.wait_for_timeout(300)  # let a rerun that was just triggered start
    page.wait_for_function(IDLE, timeout=timeout_s * 1000)
    # a widget whose frontend code is still loading is a grey skeleton after the run has ended
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stSkeleton\"]')", timeout=timeout_s * 1000)


def type_sentence(page, text: str) -> None:
    """Replace the sidebar's sentence and submit it, as a user does (Ctrl+Enter)."""
    box = page.locator('[data-testid="stSidebar"] textarea').first
    box.fill(text)
    box.press("Control+Enter")


def navigate(page, title: str) -> None:
    """Open a page through the sidebar's navigation, as a user does."""
    page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()


def choose(page, option: str) -> None:
    """Click a radio button's option by its label."""
    page.locator('[data-testid="stRadio"]').get_by_text(option, exact=True).first.click()


# Each analysis page by its link, and the key of its corpus figure: drawn under "stage-N-" + key for a
# stage's sample (disan.app.runner.run), under the key itself for the whole corpus.
ANALYSIS_PAGES = {"Corpus senses": ("corpus_senses", "corpus-scatter"),
                  "Attribution": ("attribution", "attr-corpus-0"),
                  "Case study": ("case_study", "case-received"),
                  "Feature atlas": ("feature_atlas", "atlas-map"),
                  "Faithfulness": ("faithfulness", "faith-erasure-bars")}
_FINAL = f"""k => ({IDLE})() && !!document.querySelector(`.st-key-${{k}} .main-svg`)
  && !document.querySelector('[data-testid="stProgress"]')"""


def wait_final(page, key: str, timeout_s: float = 300) -> None:
    """Wait until an analysis page's script run has ended with its corpus figure ``key`` (of
    :data:`ANALYSIS_PAGES`) drawn for the whole corpus: no stage's progress bar left."""
    page.wait_for_function(_FINAL, arg=key, timeout=timeout_s * 1000, polling=50)
