"""The app sends nothing out: Chromium records every request while every page of the sidebar is visited (a
single-sentence model and a pair model, whose pages differ), and each goes to the app's own server or is
inline (data:, blob:). The tab's icon, fonts, scripts and styles all come from the server."""
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from disan.tools.browser import CHROMIUM, VIEWPORT, chromium, navigate, server, wait_idle
from tests.test_layout import PAGES, drawn


@pytest.fixture(scope="module")
def app():
    if not Path(CHROMIUM).exists():
        pytest.skip("install Debian's chromium: apt-get install -y chromium")
    with server() as (_, url), chromium(CHROMIUM) as browser:
        yield url, browser


def test_no_page_loads_anything_from_outside_the_server(app):
    url, browser = app
    page = browser.new_page(viewport=VIEWPORT)
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    own = urlsplit(url).netloc
    for model in ("sst5", "sick-e"):
        page.goto(f"{url}/?model={model}")
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
        drawn(page)
        for title, _ in PAGES + [("Feature atlas", False)]:
            navigate(page, title)
            wait_idle(page)
    icon = page.evaluate("() => document.querySelector(\"link[rel='shortcut icon']\").href")
    assert urlsplit(icon).scheme == "data" or urlsplit(icon).netloc == own, icon
    assert len(requested) > 20  # the pages were visited
    outside = sorted({u for u in requested if urlsplit(u).scheme not in ("data", "blob") and urlsplit(u).netloc != own})
    assert not outside, "\n".join(outside)
