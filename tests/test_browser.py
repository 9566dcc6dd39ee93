"""The explorer in a real browser: Debian's Chromium driven by Playwright against `streamlit run app.py`.

Screenshots of every page are saved under test-artifacts/screenshots/.
"""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps trying hosts that this closed network refuses.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
NAV = {"": "Attention", "gates": "Fusion gates", "source2token": "Source2token", "word_senses": "Word senses",
       "training": "Training", "models": "Models"}
PAGES = [("", "Token2token attention"), ("gates", "Fusion gates"), ("source2token", "Source2token attention"),
         ("word_senses", "Word senses"), ("training", "Training"), ("models", "Models")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DISAN_CHECKPOINTS"}  # the shipped checkpoints
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit did not start: " + proc.stdout.read().decode(errors="replace")[-2000:])
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install -y chromium"
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator(
        '[data-testid="stException"]').first.inner_text()


def settle(page) -> None:
    """Wait until Streamlit has finished the script run."""
    page.wait_for_timeout(300)
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=120_000)


def wait_for_tick(page, text: str) -> None:
    """Wait until a heatmap axis shows ``text`` as a tick label: the page has redrawn for the new input."""
    page.wait_for_function(
        "t => [...document.querySelectorAll('.js-plotly-plot .xtick text')].some(e => e.textContent === t)",
        arg=text, timeout=120_000)


def test_every_page_renders_in_chromium(server, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.goto(server)
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    sentence = page.locator('[data-testid="stSidebar"] textarea').first
    sentence.fill("A man is pouring <b>hot</b> tea")
    sentence.press("Control+Enter")
    wait_for_tick(page, "pouring")
    settle(page)
    assert page.locator(".js-plotly-plot").count() >= 4
    # the HTML in the sentence is shown as text in the axis labels, never rendered
    assert page.locator(".js-plotly-plot b").count() == 0
    ticks = page.eval_on_selector_all(".js-plotly-plot .xtick text", "els => els.map(e => e.textContent)")
    assert "<" in ticks and "hot</b" in ticks, ticks  # spaCy splits "<b>hot</b>" into <, b, >, hot</b, >
    no_exception(page)
    for slug, header in PAGES:
        # through the sidebar, as a user does: the session, and the typed sentence, stay
        page.locator('[data-testid="stSidebarNav"] a', has_text=NAV[slug]).first.click()
        page.get_by_role("heading", name=header).first.wait_for(timeout=120_000)
        settle(page)
        no_exception(page)
        if slug in ("", "gates", "source2token"):
            page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
            ticks = page.eval_on_selector_all(".js-plotly-plot .ytick text", "els => els.map(e => e.textContent)")
            assert "pouring" in ticks, (slug, ticks)
        if slug == "word_senses":
            page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
        page.screenshot(path=str(SHOTS / f"{slug or 'attention'}.png"), full_page=True)
    page.close()


def test_two_browser_contexts_trace_their_own_sentences(server, browser):
    pages = [browser.new_context(viewport={"width": 1400, "height": 1000}).new_page() for _ in range(2)]
    for p, text in zip(pages, ["the glass bottle is big", "volleyball match is in progress between ladies"]):
        p.goto(server)
        p.wait_for_selector(".js-plotly-plot", timeout=120_000)
        box = p.locator('[data-testid="stSidebar"] textarea').first
        box.fill(text)
        box.press("Control+Enter")
    for i, (p, last) in enumerate(zip(pages, ["big", "ladies"])):
        wait_for_tick(p, last)
        settle(p)
        p.screenshot(path=str(SHOTS / f"context-{i}.png"), full_page=True)
        # the query view defaults to the sentence's last token; its title names it
        titles = p.eval_on_selector_all(".js-plotly-plot .gtitle", "els => els.map(e => e.textContent)")
        assert any(t.startswith("query ") and t.endswith(f": {last}") for t in titles), titles
        no_exception(p)


def test_switching_to_a_pair_model_asks_for_premise_and_hypothesis(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server)
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
    page.get_by_role("option").filter(has_text="sick-e").first.click()
    settle(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("Premise").first.wait_for(timeout=120_000)
    sidebar.get_by_text("Hypothesis").first.wait_for(timeout=120_000)
    page.get_by_text("premise").first.wait_for(timeout=120_000)  # the sentence chooser of pair models
    page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
    no_exception(page)
    page.screenshot(path=str(SHOTS / "pair-model.png"), full_page=True)
    page.close()


# (sidebar title, screenshot name, the fewest figures the page draws with its defaults)
ANALYSES = [("Corpus senses", "corpus_senses", 1), ("Counterfactuals", "counterfactuals", 3),
            ("Attribution", "attribution", 4), ("Compare models", "compare_models", 8), ("Case study", "case_study", 5)]


def finished(page) -> None:
    """Wait until the script run is over: the app marks it on its root element."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state') === 'notRunning'",
        timeout=240_000)


def test_the_analysis_pages_render_in_chromium(server, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.goto(server)
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    sentence = page.locator('[data-testid="stSidebar"] textarea').first
    sentence.fill("A man is pouring <b>hot</b> tea")
    sentence.press("Control+Enter")
    wait_for_tick(page, "pouring")
    finished(page)
    for title, slug, figures in ANALYSES:
        page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
        page.get_by_role("heading", name=title).first.wait_for(timeout=120_000)
        finished(page)
        no_exception(page)
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
        assert page.locator(".js-plotly-plot").count() >= figures, title
        assert page.locator(".js-plotly-plot b").count() == 0, title  # the sentence's HTML is never rendered
        page.screenshot(path=str(SHOTS / f"{slug}.png"), full_page=True)
    page.close()
