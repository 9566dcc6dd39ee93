"""A layout audit in Chromium at 1600x1000: on every page, for a single-sentence model (sst5) and a pair model
(sick-e, whose premise and hypothesis are drawn side by side at half width), with sentences of 8, 25 and 120
tokens, no two text elements of a figure overlap and no text of a figure is clipped by its edges.

The boxes come from the DOM: each of plotly's SVG text elements (titles, subplot titles, axis titles, tick
labels, colour-bar ticks, legend entries) as the quadrilateral its local bounding box makes on the screen, so
that rotated tick labels are measured as drawn, not as their axis-aligned hull.
"""
from pathlib import Path

import pytest

from disan.tools.latency import (
    CHROMIUM,
    VIEWPORT,
    chromium,
    navigate,
    sentence,
    server,
    type_sentence,
    wait_idle,
)

TEXT = ".gtitle, .g-gtitle text, .annotation-text, .xtick text, .ytick text, .xtitle, .ytitle, .legendtext"

# For every figure on the page: pairs of overlapping text elements and texts that leave the figure, as strings.
AUDIT = """sel => {
  const quad = e => {
    const b = e.getBBox(), m = e.getScreenCTM();
    if (!m || b.width === 0 || b.height === 0) return null;
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  // separating axis test of two convex quadrilaterals; they overlap when no axis separates them by
  // less than 1 px of overlap
  const overlap = (p, q) => {
    for (const poly of [p, q]) for (let i = 0; i < 4; i++) {
      const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4];
      const len = Math.hypot(x2 - x1, y2 - y1) || 1, nx = (y1 - y2) / len, ny = (x2 - x1) / len;
      const proj = r => r.map(([x, y]) => x * nx + y * ny);
      const a = proj(p), b = proj(q);
      if (Math.min(Math.max(...a), Math.max(...b)) - Math.max(Math.min(...a), Math.min(...b)) < 1) return false;
    }
    return true;
  };
  const visible = e => e.textContent.trim() !== '' && getComputedStyle(e).display !== 'none'
    && getComputedStyle(e).visibility !== 'hidden' && e.closest('[display="none"]') === null
    && parseFloat(getComputedStyle(e).opacity || 1) > 0;
  const problems = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot, f) => {
    const title = (plot.querySelector('.gtitle') || {textContent: 'figure ' + f}).textContent;
    const frame = plot.querySelector('.main-svg').getBoundingClientRect();
    const texts = [...new Set(plot.querySelectorAll(sel))].filter(visible)
      .map(e => ({name: e.textContent, q: quad(e)})).filter(t => t.q);
    // a text's box holds its font's whole line height: the glyphs of a title at the top edge are inside the
    // figure when its box pokes out by a few pixels
    for (const t of texts) {
      const xs = t.q.map(p => p[0]), ys = t.q.map(p => p[1]);
      if (Math.min(...xs) < frame.left - 1 || Math.max(...xs) > frame.right + 1
          || Math.min(...ys) < frame.top - 5 || Math.max(...ys) > frame.bottom + 5)
        problems.push(`${title}: "${t.name}" is clipped`);
    }
    for (let i = 0; i < texts.length; i++) for (let k = i + 1; k < texts.length; k++)
      if (overlap(texts[i].q, texts[k].q))
        problems.push(`${title}: "${texts[i].name}" overlaps "${texts[k].name}"`);
  });
  return problems;
}"""

# (page in the sidebar, whether it draws the sidebar's sentence)
PAGES = [("Attention", True), ("Fusion gates", True), ("Source2token", True), ("Counterfactuals", True),
         ("Attribution", True), ("Compare models", True), ("Word senses", False), ("Models", False),
         ("Training", False), ("Corpus senses", False), ("Case study", False)]
NEEDS_DATA = {"Corpus senses", "Case study"}
LENGTHS = (8, 25, 120)


def drawn(page) -> None:
    """Idle, and every figure drawn (plotly draws after the run has ended)."""
    wait_idle(page)
    page.wait_for_function("() => [...document.querySelectorAll('.stPlotlyChart')].every("
                           "c => c.querySelector('.js-plotly-plot .main-svg'))", timeout=60_000)
    page.wait_for_timeout(600)  # plotly's automargin redraw


def audit(page) -> list[str]:
    return page.evaluate(AUDIT, TEXT)


@pytest.fixture(scope="module")
def data_root_or_none(request):
    """The benchmark folder, or None without it: the pages that read a corpus are then left out."""
    try:
        return request.getfixturevalue("data_root")
    except pytest.skip.Exception:
        return None


@pytest.fixture(scope="module")
def app_page():
    if not Path(CHROMIUM).exists():
        pytest.skip("install Debian's chromium: apt-get install -y chromium")
    with server() as (_, url), chromium(CHROMIUM) as browser:
        page = browser.new_page(viewport=VIEWPORT)
        yield url, page


@pytest.mark.parametrize("model", ["sst5", "sick-e"])
def test_no_text_of_a_figure_overlaps_or_is_clipped(app_page, model, data_root_or_none):
    url, page = app_page
    page.goto(f"{url}/?model={model}")
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
    drawn(page)
    problems = []
    for n in LENGTHS:
        text = sentence(n, seed=n)
        if model == "sick-e":  # premise and hypothesis: each of the length
            box = page.locator('[data-testid="stSidebar"] textarea').nth(1)
            box.fill(sentence(n, seed=n + 1))
            box.press("Control+Enter")
            wait_idle(page)
        type_sentence(page, text)
        for title, follows in PAGES:
            if not follows and n != LENGTHS[0]:
                continue
            if title in NEEDS_DATA and data_root_or_none is None:
                continue
            navigate(page, title)
            drawn(page)
            if title == "Models":  # every model card open, with its training curves
                for summary in page.locator('[data-testid="stExpander"] summary').all():
                    summary.click()
                drawn(page)
            problems += [f"{model}, {n} tokens, {title}: {p}" for p in audit(page)]
    assert not problems, "\n".join(problems)
