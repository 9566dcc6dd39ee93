"""The Feature atlas page in Chromium on the shipped checkpoints: it renders with its defaults, and its link
opens the Attention page on the sentence and the feature it names. A screenshot is saved under
test-artifacts/screenshots/."""
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import pytest

from disan.tools.browser import CHROMIUM, VIEWPORT, chromium, navigate, server, wait_drawn, wait_idle

from .test_browser import ROOT, SHOTS, no_exception


@pytest.fixture(scope="module")
def url():
    with server({"DISAN_CHECKPOINTS": str(ROOT / "checkpoints")}) as (_, address):
        yield address


@pytest.fixture(scope="module")
def page():
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install -y chromium"
    with chromium(CHROMIUM) as browser:
        p = browser.new_page(viewport=VIEWPORT)
        yield p
        p.close()


@pytest.mark.usefixtures("data_root")  # the atlas measures the checkpoint's test split
def test_the_atlas_renders_and_its_link_opens_the_attention_page_on_the_feature(url, page):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(url)
    wait_drawn(page, "· query ")
    navigate(page, "Feature atlas")
    wait_drawn(page, "attention features of 2 blocks", timeout_s=300)
    no_exception(page)
    assert page.title() == "Feature atlas · DiSAN Explorer"
    assert page.locator(".js-plotly-plot").count() >= 4  # the map and the sharpest sentences' heatmaps
    page.screenshot(path=str(SHOTS / "feature-atlas.png"), full_page=True)
    link = page.locator('[data-testid="stLinkButton"] a').first
    href = link.get_attribute("href")
    params = parse_qs(urlparse(href).query)
    assert params["model"] == ["sst5"] and params["feature"][0].isdigit()
    feature, text = int(params["feature"][0]), params["text"][0]
    page.goto(urljoin(page.url, href))
    page.get_by_role("heading", name="Token2token attention").first.wait_for(timeout=120_000)
    wait_drawn(page, f"feature k = {feature},")
    wait_idle(page)
    no_exception(page)
    assert page.locator('[data-testid="stSidebar"] textarea').first.input_value() == text
    checked = page.locator('[data-testid="stMain"] [data-testid="stRadio"] input:checked').first
    assert checked.evaluate("e => e.closest('label').textContent") == "one feature"
    chosen = page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').filter(has_text="Feature k").first
    assert f"k = {feature} ·" in chosen.locator("input").input_value()  # the list shows the linked feature
