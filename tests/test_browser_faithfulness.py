"""Faithfulness's tabs in Chromium. A module of its own: Playwright's sync API runs one browser per thread, and
tests/test_layout.py holds its browser open for the whole module."""
import re

from disan.analyses import progressive
from disan.tools.browser import CHROMIUM, VIEWPORT, chromium, server

from .test_layout import checkpoints, drawn  # noqa: F401  (checkpoints: the fixture with the 2-class model)


def test_a_faithfulness_button_keeps_its_tab_open_through_its_stages(checkpoints):
    # stages on (the suite turns them off): a progress bar and a partial drawing come and go inside the tab
    env = {"DISAN_CHECKPOINTS": str(checkpoints), progressive.FIRST_ENV: "2"}
    with server(env) as (_, url), chromium(CHROMIUM) as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{url}/faithfulness?model=two-class")
        drawn(page)
        for tab, button, heading in (("Interventions", "Replace the attention", "Attention interventions over"),
                                     ("Randomisation", "Cascading model randomisation", "Cascading model randomisation")):
            page.get_by_role("tab", name=tab).click()
            page.get_by_role("button", name=re.compile(f"^{re.escape(button)}")).click()
            result = page.get_by_role("heading", name=re.compile(f"^{re.escape(heading)}"))
            result.wait_for(state="attached", timeout=180_000)
            drawn(page)
            assert page.get_by_role("tab", name=tab).get_attribute("aria-selected") == "true"
            assert result.is_visible()
