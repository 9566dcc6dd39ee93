"""The explorer's state in a real browser (the fixtures of test_browser: Chromium at 1600x1000 against
`streamlit run app.py` on the shipped checkpoints): the highlighted query token is always the query the
figures draw, on one sentence and on both sides of a pair, the view settings follow the user across
pages, and a link carries them. Screenshots go to test-artifacts/screenshots/state-*.png.
"""
import re
from urllib.parse import parse_qs, urlencode, urlparse

from disan.tools.browser import choose, navigate, sentence, type_sentence, wait_drawn, wait_idle

from .test_browser import SHOTS, browser, no_exception, page, texts, url  # noqa: F401 (fixtures)

FIRST = "Although the plot is thin , the cast is warm ."  # 11 tokens: the middle one is 5 ","
SECOND = "The soundtrack is lively and the editing is brisk , but the story never finds a reason to exist ."  # 20


def highlighted(page) -> list[tuple[int, str]]:
    """(position, text) of the highlighted token of each token picker, in page order ((-1, None): none)."""
    return [tuple(x) for x in page.eval_on_selector_all(
        "[data-testid='stButtonGroup']",
        "groups => groups.map(g => { const b = [...g.querySelectorAll('button')];"
        " const i = b.findIndex(x => x.getAttribute('aria-checked') === 'true');"
        " return [i, i >= 0 ? b[i].textContent.replaceAll('\\u200b', '') : null]; })")]


def queries(page) -> set[tuple[int, str]]:
    """The query tokens the figures draw: (j, token) from every "query j: token ·" in a figure title."""
    titles = texts(page, ".js-plotly-plot .gtitle")
    return {(int(j), token) for t in titles for j, token in re.findall(r"query (\d+): (.+?) ·", t)}


def click_token(page, text: str, group: int = 0, nth: int = 0) -> None:
    """Click the ``nth`` token showing ``text`` in the ``group``-th token picker."""
    buttons = page.locator("[data-testid='stButtonGroup']").nth(group).locator("button")
    buttons.filter(has_text=re.compile(rf"^{re.escape(text)}\u200b*$")).nth(nth).click()


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"state-{name}.png"), full_page=True)


def test_the_highlighted_token_is_the_query_the_figures_draw(url, page):
    page.goto(url)
    wait_drawn(page, "· query ")
    type_sentence(page, FIRST)
    wait_drawn(page, "query 5: ,")
    assert highlighted(page) == [(5, ",")] and queries(page) == {(5, ",")}
    click_token(page, "is")
    wait_drawn(page, "query 3: is")
    assert highlighted(page) == [(3, "is")] and queries(page) == {(3, "is")}
    # a new sentence starts both the highlighted token and the figures at its middle
    type_sentence(page, SECOND)
    wait_drawn(page, "query 10: but")
    assert highlighted(page) == [(10, "but")] and queries(page) == {(10, "but")}
    shot(page, "second-sentence")
    click_token(page, "but")  # the highlighted token: nothing changes, both stay in step
    wait_idle(page)
    assert highlighted(page) == [(10, "but")] and queries(page) == {(10, "but")}
    click_token(page, "is")
    wait_drawn(page, "query 2: is")
    assert highlighted(page) == [(2, "is")] and queries(page) == {(2, "is")}
    # a 120-token sentence: the middle again, and a click moves the window with the query
    type_sentence(page, sentence(120, seed=3, marks={60: "hinge", 30: "otter"}))
    wait_drawn(page, "query 60: hinge")
    assert highlighted(page) == [(60, "hinge")] and queries(page) == {(60, "hinge")}
    assert any("tokens 30–89 of 120" in t for t in texts(page, ".js-plotly-plot .gtitle"))
    shot(page, "long-sentence")
    click_token(page, "otter")
    wait_drawn(page, "query 30: otter")
    assert highlighted(page) == [(30, "otter")] and queries(page) == {(30, "otter")}
    assert any("tokens 0–59 of 120" in t for t in texts(page, ".js-plotly-plot .gtitle"))
    type_sentence(page, FIRST)
    wait_drawn(page, "query 5: ,")
    assert highlighted(page) == [(5, ",")] and queries(page) == {(5, ",")}
    no_exception(page)


def test_each_side_of_a_pair_keeps_its_own_query_in_step_and_downloads_by_name(url, page):
    page.goto(f"{url}/?model=sick-e&text=A+man+is+pouring+a+glass+of+tea&hypothesis=A+man+is+drinking+tea")
    wait_drawn(page, "query 4: a")  # each side's figures are drawn on their own: wait for both
    wait_drawn(page, "query 2: is")
    wait_idle(page)  # the run goes on after the figures (the reading under them): read the pills once it ends
    assert highlighted(page) == [(4, "a"), (2, "is")] and queries(page) == {(4, "a"), (2, "is")}
    click_token(page, "tea", group=1)
    wait_drawn(page, "query 4: tea")
    wait_drawn(page, "query 4: a")
    wait_idle(page)
    assert highlighted(page) == [(4, "a"), (4, "tea")] and queries(page) == {(4, "a"), (4, "tea")}
    for nth, side in enumerate(("premise", "hypothesis")):  # each side's trace downloads under its own name
        with page.expect_download(timeout=120_000) as download:
            page.locator("[data-testid='stDownloadButton'] button", has_text="Trace as NPZ").nth(nth).click()
        assert download.value.suggested_filename == f"disan-trace-{side}.npz"
    # a new premise starts the premise at its middle; the hypothesis keeps the token clicked
    box = page.locator('[data-testid="stSidebar"] textarea').first
    box.fill(sentence(61, seed=2, marks={30: "wet"}))
    box.press("Control+Enter")
    wait_drawn(page, "query 30: wet")
    wait_drawn(page, "query 4: tea")
    wait_idle(page)
    assert highlighted(page) == [(30, "wet"), (4, "tea")] and queries(page) == {(30, "wet"), (4, "tea")}
    click_token(page, "tea", group=1)  # the highlighted token: nothing changes
    wait_idle(page)
    assert highlighted(page) == [(30, "wet"), (4, "tea")] and queries(page) == {(30, "wet"), (4, "tea")}
    # in its half-width column the premise's 61 tokens wrap onto rows: none hidden in a sideways scroll
    overflow = page.eval_on_selector_all("[data-testid='stButtonGroup'] [role='radiogroup']",
                                         "gs => gs.map(g => g.scrollWidth - g.clientWidth)")
    assert len(overflow) == 2 and max(overflow) <= 1, overflow
    shot(page, "pair")
    no_exception(page)


def test_view_settings_follow_the_user_across_pages(url, page):
    page.goto(url)
    wait_drawn(page, "· query ")
    type_sentence(page, sentence(160, seed=5, marks={150: "walrus", 80: "heron"}))
    wait_drawn(page, "query 80: heron")
    choose(page, "max")
    wait_drawn(page, "max over features, lift over uniform")
    choose(page, "probability")
    wait_drawn(page, "max over features, probability")
    click_token(page, "walrus")
    wait_drawn(page, "query 150: walrus")
    navigate(page, "Fusion gates")
    page.get_by_role("heading", name="Fusion gates").first.wait_for(timeout=120_000)
    wait_idle(page)
    navigate(page, "Attention")
    wait_drawn(page, "query 150: walrus")
    titles = texts(page, ".js-plotly-plot .gtitle")
    assert any("max over features, probability, tokens 100–159 of 160" in t for t in titles), titles
    checked = texts(page, '[data-testid="stMain"] [data-testid="stRadio"] label:has(input:checked)')
    assert checked == ["max", "probability"], checked
    assert highlighted(page) == [(150, "walrus")] and queries(page) == {(150, "walrus")}
    legend = texts(page, "[data-testid='stHtml'] div div")
    assert any("max over features, each query's row rescaled to sum to 1" in t for t in legend), legend
    shot(page, "settings-kept")
    # a new sentence resets only what depends on the sentence: the query, not the mode or the colour scale
    type_sentence(page, FIRST)
    wait_drawn(page, "query 5: ,")
    assert any("max over features, probability" in t for t in texts(page, ".js-plotly-plot .gtitle"))
    assert highlighted(page) == [(5, ",")]
    no_exception(page)


def test_a_link_opens_the_page_with_its_settings_and_the_url_follows_them(url, page, browser):
    text = sentence(120, seed=4, marks={70: "otter"})
    page.goto(f"{url}/?" + urlencode({"model": "sst5", "text": text, "attention-mode": "max",
                                      "attention-scale": "probability", "attention-query-sentence": "70",
                                      "attention-window-sentence": "50-109"}))
    wait_drawn(page, "query 70: otter")
    wait_idle(page)
    titles = texts(page, ".js-plotly-plot .gtitle")
    assert any("max over features, probability, tokens 50–109 of 120" in t for t in titles), titles
    checked = texts(page, '[data-testid="stMain"] [data-testid="stRadio"] label:has(input:checked)')
    assert checked == ["max", "probability"], checked
    assert highlighted(page) == [(70, "otter")] and queries(page) == {(70, "otter")}
    # a change shows in the URL at once (the default scale leaves it), and the URL opens the same page elsewhere
    choose(page, "lift over uniform")
    wait_drawn(page, "max over features, lift over uniform, tokens 50–109 of 120")
    params = parse_qs(urlparse(page.url).query)
    assert "attention-scale" not in params and params["attention-window-sentence"] == ["50-109"], params
    assert params["attention-query-sentence"] == ["70"] and params["model"] == ["sst5"]
    shared = browser.new_context(viewport=page.viewport_size).new_page()
    shared.goto(page.url)
    titles = texts(page, ".js-plotly-plot .gtitle")
    shared.wait_for_function("n => document.querySelectorAll('.js-plotly-plot .gtitle').length >= n",
                             arg=len(titles), timeout=180_000)
    wait_idle(shared)
    assert texts(shared, ".js-plotly-plot .gtitle") == titles
    shot(shared, "shared-link")
    shared.context.close()
    # a tab is a setting too; a value the page cannot show gets a message, and the rest of the link is followed
    page.goto(f"{url}/counterfactuals?" + urlencode({"model": "sst5", "text": "the cast is warm", "cf-op": "swap",
                                                     "cf-tab": "Attention knockout"}))
    page.get_by_role("heading", name="Counterfactuals").first.wait_for(timeout=120_000)
    wait_idle(page)
    assert page.locator('[role="tab"][aria-selected="true"]').inner_text() == "Attention knockout"
    warnings = " ".join(texts(page, '[data-testid="stAlert"]'))
    assert "edit “\u2068swap\u2069” is not among this page's choices" in warnings, warnings
    no_exception(page)
