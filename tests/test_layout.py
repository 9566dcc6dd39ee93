"""A layout audit in Chromium at 1600x1000, every page × every shape of model × sentences of 1, 9, 60 and 126
tokens: a 2-class model trained here from a small file in seconds, sick-e (3 classes, pairs: premise and
hypothesis side by side at half width), sst5 (5 classes) and sick (relatedness pairs). The pages that draw the
sidebar's sentence are audited at each length of the model's row of :data:`MATRIX`; the others (the corpus pages,
Models, Training, Faithfulness on 20 inputs with its tabs' buttons pressed for :data:`PRESSED`) once per model. In
every figure no two text elements overlap and no text is clipped by the figure's edges, the plot area is at least
150 px high, a prediction chart names every class of the model, and a token × token heatmap has at most 60 rows (a
longer sentence is windowed).

The boxes come from the DOM: each of plotly's SVG text elements (titles, subplot titles, axis titles, tick
labels, colour-bar ticks, legend entries) as the quadrilateral its local bounding box makes on the screen, so
that rotated tick labels are measured as drawn, not as their axis-aligned hull; the plot area and the traces
come from plotly's own state on the figure's element.

The tables are audited at a 1280-px window, on the pages that draw them (every tab of Faithfulness) for the
2-class model, sst5 and sick-e: no table scrolls sideways, no header or cell is cut, none shows None or nan, and a
column that shows “—” says why in its tooltip. Streamlit draws a table on a canvas (glide data grid), so the
columns, their widths, every cell's text and the grid's theme come from the grid's own React props, each text
measured with the canvas's measureText in the grid's font; the tooltips from the column configuration the page
sent.
"""
import json
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from disan.__main__ import run
from disan.data.kinds import kind_of
from disan.analyses import faithfulness
from disan.tools.browser import (
    CHROMIUM,
    VIEWPORT,
    chromium,
    navigate,
    sentence,
    server,
    type_sentence,
    wait_idle,
)
from tests.test_own_data import ROWS, WORDS, tiny, write_csv

ROOT = Path(__file__).resolve().parent.parent

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
         ("Training", False), ("Corpus senses", False), ("Case study", False), ("Feature atlas", False),
         ("Faithfulness", False)]
NEEDS_DATA = {"Corpus senses", "Case study", "Feature atlas", "Faithfulness"}
# the Faithfulness page's buttons, each in its tab: (tab, the start of the button's label); each click draws
# that tab's figures, which are audited as the page's others. Pressed for a single-sentence model and a pair
# model only: at 20 inputs the two cost about 2.5 min a model under load, and their charts are shaped by the
# explanations and stages, which every model shares, not by the classes.
FAITHFULNESS_TABS = (("Interventions", "Replace the attention"), ("Randomisation", "Cascading model randomisation"))
PRESSED = {"two-class", "sick-e"}


# For every figure: a plot area under 150 px, a token x token heatmap over 60 rows, a prediction chart (an x axis
# of probability) whose classes are not all those of one of the models.
SHAPES = """labelSets => {
  const problems = [];
  document.querySelectorAll('.js-plotly-plot').forEach((gd, f) => {
    const title = (gd.querySelector('.gtitle') || {textContent: 'figure ' + f}).textContent;
    const size = gd._fullLayout && gd._fullLayout._size;
    if (size && size.h < 150) problems.push(`${title}: a plot area ${Math.round(size.h)} px high`);
    for (const t of gd.data || [])
      if (t.type === 'heatmap' && t.x && String(t.x[0]).startsWith('attended') && t.y && t.y.length > 60)
        problems.push(`${title}: ${t.y.length} token rows`);
    const axis = gd.layout && gd.layout.xaxis && gd.layout.xaxis.title;
    if (axis && (axis.text || axis) === 'probability') {
      // the classes of a model, all of them (Compare models draws another model's beside this one's)
      const named = [...new Set((gd.data || []).flatMap(t => [...(t.y || [])].map(String)))].sort().join(' | ');
      if (!labelSets.some(set => [...set].sort().join(' | ') === named))
        problems.push(`${title}: the classes ${named} are not all those of a model`);
    }
  });
  return problems;
}"""

# model -> the sentence lengths its sentence pages are audited at: every length for the 2-class model and
# for a pair model, one length for the others (they share the code paths; the suite stays within its time)
MATRIX = {"two-class": (1, 9, 60, 126), "sick-e": (1, 9, 60, 126), "sst5": (9, 126), "sick": (60,)}


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
def checkpoints(tmp_path_factory):
    """A checkpoints folder: the shipped models and a 2-class model trained from a small file in seconds."""
    folder = tmp_path_factory.mktemp("checkpoints")
    for name in MATRIX:
        if (ROOT / "checkpoints" / name).is_dir():
            (folder / name).symlink_to(ROOT / "checkpoints" / name)
    work = tmp_path_factory.mktemp("two-class")
    vectors = work / "vectors.txt"
    vectors.write_text("".join(f"{w} " + " ".join(f"{(i * 7 + k) % 11 / 10 - 0.5:.2f}" for k in range(6)) + "\n"
                               for i, w in enumerate(WORDS)), encoding="utf-8")
    data = write_csv(work / "reviews.csv", ROWS)
    assert run(["train", "--data", str(data), "--text-column", "review", "--label-column", "sentiment",
                *tiny(str(vectors), folder / "two-class"), "--no-keep-state"]) == 0  # as the Training page
    return folder


@pytest.fixture(scope="module")
def app_page(checkpoints):
    if not Path(CHROMIUM).exists():
        pytest.skip("install Debian's chromium: apt-get install -y chromium")
    with server({"DISAN_CHECKPOINTS": str(checkpoints)}) as (_, url), chromium(CHROMIUM) as browser:
        page = browser.new_page(viewport=VIEWPORT)
        yield url, page


@pytest.mark.parametrize("model", list(MATRIX))
def test_no_text_of_a_figure_overlaps_or_is_clipped_and_every_figure_fits_the_model(app_page, model, checkpoints,
                                                                                     data_root_or_none):
    if not (checkpoints / model).is_dir():
        pytest.skip(f"no {model} checkpoint")
    configs = {path.name: json.loads((path / "config.json").read_text(encoding="utf-8"))
               for path in checkpoints.iterdir() if (path / "config.json").is_file()}
    labels = [[str(label) for label in c["labels"]] for c in configs.values()]  # every model's classes
    pairs = kind_of(configs[model]["kind"]).pairs
    url, page = app_page
    started = time.perf_counter()
    page.goto(f"{url}/?model={model}")
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
    drawn(page)
    problems = []
    spent = Counter()  # seconds per page
    for n in MATRIX[model]:
        text = sentence(n, seed=n)
        if pairs:  # premise and hypothesis: each of the length
            box = page.locator('[data-testid="stSidebar"] textarea').nth(1)
            box.fill(sentence(n, seed=n + 1))
            box.press("Control+Enter")
            wait_idle(page)
        type_sentence(page, text)
        for title, follows in PAGES:
            if not follows and n != MATRIX[model][0]:
                continue
            if title in NEEDS_DATA and data_root_or_none is None and model != "two-class":
                continue
            visited = time.perf_counter()
            navigate(page, title)
            if title == "Faithfulness":
                # the fewest test inputs that get a verdict, not the page's 100: every figure is drawn, at a fifth
                # of the cost (a new number stops the run that the visit started)
                sample = page.locator('[data-testid="stNumberInput"]', has_text="Test inputs sampled").locator("input")
                sample.fill(str(faithfulness.MIN_SENTENCES))
                sample.press("Enter")
            drawn(page)
            if title == "Faithfulness" and model in PRESSED:
                for tab, button in FAITHFULNESS_TABS:
                    problems += [f"{model}, {n} tokens, {title}: {p}"
                                 for p in audit(page) + page.evaluate(SHAPES, labels)]
                    page.get_by_role("tab", name=tab).click()
                    page.get_by_role("button", name=re.compile(f"^{re.escape(button)}")).click()
                    drawn(page)
            if title == "Models":  # every model card open, with its training curves
                for summary in page.locator('[data-testid="stExpander"] summary').all():
                    summary.click()
                drawn(page)
            problems += [f"{model}, {n} tokens, {title}: {p}" for p in audit(page) + page.evaluate(SHAPES, labels)]
            spent[title] += time.perf_counter() - visited
    # the matrix's cost, with pytest -s
    print(f"{model}: audited in {time.perf_counter() - started:.0f} s, of which Faithfulness "
          f"{spent['Faithfulness']:.0f} s")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- tables

TABLE_VIEWPORT = {"width": 1280, "height": 900}
TABLE_MODELS = ("two-class", "sst5", "sick-e")
# the pages that draw tables, and the tabs whose tables show only when opened (Plausibility: a model of SST's)
TABLE_PAGES = ("Faithfulness", "Feature atlas", "Case study", "Attribution", "Compare models", "Counterfactuals")
SHOWN_ON_CLICK = {"Counterfactuals": ("Occlusion",), "Faithfulness": ("Plausibility",)}

# a table on the page: not in a closed expander, nor in a tab that is not open
SHOWN = "d => d.offsetParent !== null && d.closest('details:not([open])') === null"
# Every shown table's problems as strings: columns past the table's box (a sideways scroll), a header or a cell
# wider than its column (a wrapped cell: more lines than its row holds), a cell that shows None or nan, and a
# column that shows “—” with no tooltip.
TABLES = """() => {
  const none = /(^|[^\\w])(None|nan|NaN|NaT|<NA>)([^\\w]|$)/;
  const ctx = document.createElement('canvas').getContext('2d');
  const fiber = e => e[Object.keys(e).find(k => k.startsWith('__reactFiber'))];
  const up = (f, test) => { while (f && !test(f.memoizedProps || {})) f = f.return; return f && f.memoizedProps; };
  const problems = [];
  [...document.querySelectorAll('[data-testid="stDataFrame"]')].filter(""" + SHOWN + """).forEach((df, t) => {
    const grid = up(fiber(df.querySelector('canvas[data-testid="data-grid-canvas"]')),
                    p => p.getCellContent && p.theme && p.columns);
    const element = up(fiber(df), p => p.element && typeof p.element.columns === 'string');
    const config = element && element.element.columns ? JSON.parse(element.element.columns) : {};
    // what the grid draws for a missing value: the table's placeholder, "None" without one
    const placeholder = element && element.element.placeholder != null ? element.element.placeholder : 'None';
    const {columns, rows, rowHeight, theme} = grid;
    const name = `table ${t + 1} (${columns.slice(0, 3).map(c => c.title).join(' | ')})`;
    const pad = theme.cellHorizontalPadding, size = parseFloat(theme.baseFontStyle.split(' ').pop());
    const measure = (text, font) => { ctx.font = `${font} ${theme.fontFamily}`; return ctx.measureText(text).width; };
    // glide's wrapping: words onto lines no wider than the cell's room
    const lines = (text, room) => text.split('\\n').reduce((n, para) => {
      let line = '', count = 1;
      for (const word of para.split(' ')) {
        const longer = line ? line + ' ' + word : word;
        if (line && measure(longer, theme.baseFontStyle) > room) { count++; line = word; } else line = longer;
      }
      return n + count;
    }, 0);
    const box = df.querySelector('.dvn-scroller').clientWidth;
    let right = 0;
    columns.forEach((c, i) => {
      right += c.width;
      if (right > box + 1)
        problems.push(`${name}: "${c.title}" ends ${Math.round(right - box)} px past the ${box}-px table (a scroll)`);
      if (measure(c.title, theme.headerFontStyle) + 2 * pad > c.width + 1)
        problems.push(`${name}: the header "${c.title}" is cut`);
      let cut = 0, example = '', dashes = 0;
      for (let r = 0; r < rows; r++) {
        const cell = grid.getCellContent([i, r]);
        const text = cell.isMissingValue ? placeholder : String(cell.displayData ?? cell.data ?? '');
        if (none.test(text)) problems.push(`${name}: "${c.title}" shows "${text}" in row ${r + 1}`);
        if (text.trim() === '\u2014') dashes++;
        const room = c.width - 2 * pad;
        const fits = cell.allowWrapping
          ? size + theme.lineHeight * size * (lines(text, room) - 1) + theme.cellVerticalPadding <= rowHeight
          : measure(text, theme.baseFontStyle) <= room + 1;
        if (!fits && !cut++) example = text;
      }
      if (cut) problems.push(`${name}: ${cut} of ${rows} cells of "${c.title}" are cut, as "${example}"`);
      const said = config[c.id && c.id.startsWith('_index') ? '_index' : c.title] || {};
      if (dashes && !said.help) problems.push(`${name}: "${c.title}" shows "\u2014" with no tooltip saying why`);
    });
  });
  return problems;
}"""


def tables_drawn(page) -> None:
    """Idle, every figure drawn, and every visible table's grid on its canvas."""
    drawn(page)
    page.wait_for_function(f"() => [...document.querySelectorAll('[data-testid=\"stDataFrame\"]')].filter({SHOWN})"
                           ".every(d => d.querySelector('canvas[data-testid=\"data-grid-canvas\"]'))", timeout=60_000)


@pytest.mark.parametrize("model", TABLE_MODELS)
def test_every_table_fits_a_1280_px_window_uncut_and_says_why_a_value_is_undefined(app_page, model, checkpoints,
                                                                                     data_root_or_none):
    if not (checkpoints / model).is_dir():
        pytest.skip(f"no {model} checkpoint")
    url, first = app_page
    page = first.context.browser.new_page(viewport=TABLE_VIEWPORT)
    started = time.perf_counter()
    problems = []
    try:
        page.goto(f"{url}/?model={model}")
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
        drawn(page)
        for title in TABLE_PAGES:
            if title in NEEDS_DATA and data_root_or_none is None and model != "two-class":
                continue
            navigate(page, title)
            if title == "Faithfulness":  # the fewest inputs that get a verdict: the widest cells
                sample = page.locator('[data-testid="stNumberInput"]', has_text="Test inputs sampled").locator("input")
                sample.fill(str(faithfulness.MIN_SENTENCES))
                sample.press("Enter")
            tables_drawn(page)
            for summary in page.locator('[data-testid="stExpander"] summary').all():  # the Feature atlas's table
                summary.click()
            tables_drawn(page)
            problems += [f"{model}, {title}: {p}" for p in page.evaluate(TABLES)]
            for tab in SHOWN_ON_CLICK.get(title, ()):
                if not page.get_by_role("tab", name=tab).count():
                    continue
                page.get_by_role("tab", name=tab).click()
                tables_drawn(page)
                problems += [f"{model}, {title}, {tab}: {p}" for p in page.evaluate(TABLES)]
            if title == "Faithfulness":
                for tab, button in FAITHFULNESS_TABS:
                    page.get_by_role("tab", name=tab).click()
                    page.get_by_role("button", name=re.compile(f"^{re.escape(button)}")).click()
                    tables_drawn(page)
                    problems += [f"{model}, {title}, {tab}: {p}" for p in page.evaluate(TABLES)]
    finally:
        page.close()
    print(f"{model}: tables audited in {time.perf_counter() - started:.0f} s")
    assert not problems, "\n".join(problems)
