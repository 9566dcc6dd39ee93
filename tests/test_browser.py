"""The explorer in a real browser: Debian's Chromium driven by Playwright against `streamlit run app.py`,
at 1600x1000, on the shipped checkpoints plus a truncated copy sorted before them.

Screenshots of every page are saved under test-artifacts/screenshots/.
"""
import re
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from disan.app.links import version
from disan.render import figures, views
from disan.nn import checkpoint
from disan.tools.browser import (
    CHROMIUM,
    VIEWPORT,
    chromium,
    navigate,
    sentence,
    server,
    type_sentence,
    wait_drawn,
    wait_idle,
)

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "test-artifacts" / "screenshots"
PAGES = [("Attention", "Token2token attention"), ("Fusion gates", "Fusion gates"),
         ("Source2token", "Source2token attention"), ("Word senses", "Word senses"), ("Training", "Training"),
         ("Models", "Models")]


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    """The app on the shipped checkpoints and "0-broken", a copy of trec whose weights lost their last bytes."""
    root = tmp_path_factory.mktemp("checkpoints")
    for shipped in sorted((ROOT / "checkpoints").iterdir()):
        (root / shipped.name).symlink_to(shipped, target_is_directory=True)
    broken = root / "0-broken"
    shutil.copytree(ROOT / "checkpoints" / "trec", broken)
    weights = broken / checkpoint.WEIGHTS
    weights.write_bytes(weights.read_bytes()[:-4096])
    with server({"DISAN_CHECKPOINTS": str(root)}) as (_, address):
        yield address


@pytest.fixture(scope="module")
def browser():
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install -y chromium"
    with chromium(CHROMIUM) as b:
        yield b


@pytest.fixture
def page(browser):
    p = browser.new_page(viewport=VIEWPORT)
    yield p
    p.close()


def no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator(
        '[data-testid="stException"]').first.inner_text()


def texts(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, "els => els.map(e => e.textContent)")


def chosen(page, where: str) -> str:
    """What the first select box in ``where`` (stSidebar, stMain) shows."""
    return page.locator(f'[data-testid="{where}"] [data-testid="stSelectbox"] input').first.input_value()


def test_every_page_renders_and_tokens_stay_text(url, page):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(url)
    wait_drawn(page, "· query ")
    assert page.title() == "Attention · DiSAN Explorer"
    assert page.locator('[data-testid="stAppDeployButton"]').count() == 0  # client.toolbarMode = minimal
    type_sentence(page, "A man is pouring <b>hot</b> **tea** $x$")  # 16 tokens: "<", "b", ">", "hot</b", ...
    wait_drawn(page, "query 8: >")
    # the HTML and Markdown in the sentence are shown as text: in the axis labels, the token buttons and the
    # shaded sentence, never rendered
    assert page.locator(".js-plotly-plot b, [data-testid='stHtml'] b, [data-testid='stButtonGroup'] b").count() == 0
    assert page.locator("[data-testid='stButtonGroup'] strong, [data-testid='stButtonGroup'] .katex").count() == 0
    pills = texts(page, "[data-testid='stButtonGroup'] button")
    assert {"<", "hot</b", "*", "x$"} <= set(pills), pills
    assert "hot</b" in texts(page, "[data-testid='stHtml'] span")
    no_exception(page)
    for title, header in PAGES:
        navigate(page, title)  # through the sidebar, as a user does: the session and the sentence stay
        page.get_by_role("heading", name=header).first.wait_for(timeout=120_000)
        wait_idle(page)
        no_exception(page)
        assert page.title() == f"{title} · DiSAN Explorer"
        if title in ("Attention", "Fusion gates", "Source2token"):
            page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
            assert "pouring" in texts(page, ".js-plotly-plot .ytick text"), title
        if title == "Word senses":
            page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
        page.screenshot(path=str(SHOTS / f"{title.lower().replace(' ', '-')}.png"))


def test_two_browser_contexts_trace_their_own_sentences(url, browser):
    pages = [browser.new_context(viewport=VIEWPORT).new_page() for _ in range(2)]
    sentences = ["the glass bottle is big", "volleyball match is in progress between ladies"]
    for p, text in zip(pages, sentences):
        p.goto(url)
        wait_drawn(p, "· query ")
        type_sentence(p, text)
    for i, (p, text) in enumerate(zip(pages, sentences)):
        words = text.split()
        middle = len(words) // 2
        wait_drawn(p, f"query {middle}: {words[middle]}")  # the middle token is the default query
        p.screenshot(path=str(SHOTS / f"context-{i}.png"))
        no_exception(p)
        p.context.close()


def test_a_click_on_a_token_picks_the_query(url, page):
    page.goto(url)
    wait_drawn(page, "· query 4: in")  # "Families have some dogs in front of a carousel": the middle token
    page.locator("[data-testid='stButtonGroup'] button", has_text="carousel").first.click()
    wait_drawn(page, "forward · query 8: carousel")
    notes = texts(page, "[data-testid='stAlert']")
    assert any("In the backward block, query 8 “\u2068carousel\u2069” attends to no token: it has no later token." in n
               for n in notes), notes


def test_pair_models_show_premise_and_hypothesis_side_by_side(url, page):
    page.goto(f"{url}/?model=sick-e")
    wait_drawn(page, "· query ")
    heads = page.eval_on_selector_all("h3", "els => els.map(e => [e.textContent, e.getBoundingClientRect().x, "
                                            "e.getBoundingClientRect().y])")
    (premise, hypothesis) = [h for h in heads if h[0] in ("Premise", "Hypothesis")]
    assert premise[0] == "Premise" and hypothesis[0] == "Hypothesis"
    assert premise[2] == pytest.approx(hypothesis[2], abs=2) and hypothesis[1] > premise[1] + 400  # one row
    assert page.locator(".js-plotly-plot .heatmaplayer").count() >= 2 * 4
    page.screenshot(path=str(SHOTS / "pair-model.png"))
    no_exception(page)


def test_a_link_opens_its_model_and_sentence_and_the_url_follows_the_input(url, page):
    page.goto(f"{url}/?model=trec&text=What+is+the+capital+of+France+%3F")
    wait_drawn(page, "query 3: capital")
    assert chosen(page, "stSidebar").startswith("trec — ")
    assert page.locator('[data-testid="stMetricValue"]').first.inner_text() == "LOC"
    type_sentence(page, "Who wrote Hamlet ?")
    wait_drawn(page, "query 2: Hamlet")
    page.wait_for_function("() => location.search.includes('Hamlet')", timeout=30_000)
    assert parse_qs(urlparse(page.url).query) == {"model": ["trec"], "text": ["Who wrote Hamlet ?"],
                                                  "digest": [version(ROOT / "checkpoints" / "trec")]}
    page.goto(f"{url}/?model=nonexistent&text=" + "word+" * 300)
    wait_drawn(page, "· query ")
    warnings = " ".join(texts(page, '[data-testid="stAlert"]'))
    assert "not a working checkpoint" in warnings and "the limit is 200" in warnings
    no_exception(page)


def test_a_link_to_a_page_is_the_first_visit_of_a_server_just_started(browser):
    """A shared link names its page (/gates?...): opened on a server nobody has visited yet, it must run
    app.py's navigation and sidebar around the page, not the page's script alone."""
    with server() as (_, address):
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{address}/gates?model=trec&text=Who+wrote+Hamlet+%3F")
        wait_drawn(page, "mean fusion gate per token")
        # the sidebar's widgets draw once their own browser code has loaded, which may be after the figure
        wait_idle(page)
        assert chosen(page, "stSidebar").startswith("trec — ")
        expect(page.locator('[data-testid="stSidebar"] textarea').first).to_have_value("Who wrote Hamlet ?")
        links = texts(page, '[data-testid="stSidebarNav"] a')  # each an icon's name, then the page's title
        titles = re.findall(r'title="([^"]+)"', (ROOT / "app.py").read_text())
        assert len(links) == len(titles) and all(link.endswith(title) for link, title in zip(links, titles))
        assert page.get_by_text("No model is selected").count() == 0
        no_exception(page)
        page.close()


def test_a_broken_checkpoint_sorted_first_is_listed_never_chosen(url, page):
    page.goto(url)
    wait_drawn(page, "· query ")
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert chosen(page, "stSidebar").startswith("sst5 — ")  # the first working single-sentence model
    sidebar.locator('[data-testid="stSelectbox"] input').first.click()
    options = texts(page, '[role="option"]')
    assert options and not any("0-broken" in o for o in options), options
    page.keyboard.press("Escape")
    assert "1 broken checkpoint" in sidebar.inner_text()
    navigate(page, "Models")
    page.get_by_role("heading", name="Models").first.wait_for()
    wait_idle(page)
    page.get_by_text(re.compile(r"^0-broken — broken: .*corrupt or truncated")).first.click()
    assert "0-broken cannot be used" in page.locator('[data-testid="stAlert"]').first.inner_text()
    no_exception(page)


def test_a_200_token_sentence_shows_a_window_with_thinned_ticks(url, page):
    page.goto(url)
    wait_drawn(page, "· query ")
    type_sentence(page, sentence(200, seed=7, marks={100: "zebra", 95: "giraffe"}))
    wait_drawn(page, "query 100: zebra")
    start, stop = views.default_window(200, 100)
    assert any(f"tokens {start}–{stop - 1} of 200" in t for t in texts(page, ".js-plotly-plot .gtitle"))
    page.wait_for_selector('[data-testid="stSlider"]', timeout=60_000)  # rendered after the heatmaps on a loaded machine
    assert page.locator('[data-testid="stSlider"]').count() == 1
    for axis in ("xtick", "ytick"):
        labels = page.eval_on_selector(".js-plotly-plot", f"e => [...e.querySelectorAll('.{axis} text')].length")
        assert 0 < labels <= figures.MAX_TICKS
    page.locator("[data-testid='stButtonGroup'] button", has_text="giraffe").first.click()
    wait_drawn(page, "query 95: giraffe")
    page.screenshot(path=str(SHOTS / "long-sentence.png"))
    no_exception(page)


def test_a_one_token_sentence_is_explained(url, page):
    page.goto(url)
    wait_drawn(page, "· query ")
    type_sentence(page, "tea")
    page.get_by_text("has 1 token, and no token may attend another").first.wait_for(timeout=120_000)
    wait_idle(page)
    assert page.locator(".js-plotly-plot .heatmaplayer").count() == 0  # no blank boxes
    no_exception(page)


def test_word_senses_control_and_chart_agree_after_sentences_without_a_shared_word(url, page):
    page.goto(f"{url}/word_senses")
    wait_drawn(page, "“glass”: source2token")
    radio = page.locator('[data-testid="stRadio"]')
    radio.get_by_text("outputs u", exact=False).first.click()
    wait_drawn(page, "“glass”: outputs u")
    box = page.get_by_label("Sentences, one per line")
    box.fill("one cat\ntwo dogs")
    box.press("Control+Enter")
    page.get_by_text("The sentences share no word").first.wait_for(timeout=120_000)
    wait_idle(page)
    assert chosen(page, "stMain") == "(your own sentences)"  # the preset box follows the edited text
    box.fill("the glass bottle\nglass of tea")
    box.press("Control+Enter")
    wait_drawn(page, "“glass”: ")
    shown = texts(page, '[data-testid="stMain"] [data-testid="stRadio"] label:has(input:checked)')
    title = next(t for t in texts(page, ".js-plotly-plot .gtitle") if "“glass”" in t)
    assert len(shown) == 1 and shown[0].split(" (")[0] in title, (shown, title)  # the widget shows what is drawn
    radio.get_by_text("source2token probabilities", exact=False).first.click()  # and a click changes the chart
    wait_drawn(page, "“glass”: source2token")
    page.screenshot(path=str(SHOTS / "word-senses-sequence.png"))
    no_exception(page)


# (sidebar title, screenshot name, the fewest figures the page draws with its defaults)
ANALYSES = [("Corpus senses", "corpus_senses", 1), ("Counterfactuals", "counterfactuals", 3),
            ("Attribution", "attribution", 4), ("Compare models", "compare_models", 8), ("Case study", "case_study", 5)]


@pytest.mark.usefixtures("data_root")  # corpus senses and the case study read the benchmark's test split
def test_the_analysis_pages_render_in_chromium(url, page):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(url)
    wait_drawn(page, "· query ")
    type_sentence(page, "A man is pouring <b>hot</b> tea")
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot .ytick text')]"
                           ".some(e => e.textContent === 'pouring')", timeout=180_000)
    wait_idle(page)
    for title, slug, fewest in ANALYSES:
        navigate(page, title)
        page.get_by_role("heading", name=title).first.wait_for(timeout=120_000)
        wait_idle(page)
        no_exception(page)
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
        assert page.locator(".js-plotly-plot").count() >= fewest, title
        assert page.locator(".js-plotly-plot b").count() == 0, title  # the sentence's HTML is never rendered
        page.screenshot(path=str(SHOTS / f"{slug}.png"), full_page=True)


@pytest.mark.quick
def test_the_harness_sentences_have_the_length_asked_and_their_marks_in_place():
    from disan.data.text import check_text
    from disan.tools import browser

    for n in (1, 9, 40, 126):
        assert len(check_text(browser.sentence(n))) == n
    marked = check_text(browser.sentence(30, marks={0: "carousel", 29: "dogs"}))
    assert marked[0] == "carousel" and marked[29] == "dogs"
    shuffled = browser.sentence(30, seed=3)
    assert shuffled != browser.sentence(30) and sorted(shuffled.split()) == sorted(browser.sentence(30).split())
