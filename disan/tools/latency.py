"""What ``disan latency`` runs (its arguments: :mod:`disan.tools.parsers.latency`).

    python -m disan latency [CHECKPOINT] [--tokens 30] [--repeats 20]
    python -m disan latency --browser [CHECKPOINT] [--tokens 200] [--repeats 3] [--sentences 50] [--cache-mb MB]
    python -m disan latency --browser --pages analyses [--models sst5,sick-e] [--trace] [--baseline DIR]
    python -m disan latency --open [SESSIONS] [--baseline DIR]
    python -m disan latency --predict [CHECKPOINT] [--baseline DIR] [--installed PYTHON]
    python -m disan latency --draw [CHECKPOINT] [--tokens 200] [--repeats 5]
    python -m disan latency --soak [MINUTES] [--sessions 3] [--disk-mb 32] [--cache-mb MB]

The first form times the trace plus every figure of a page for one sentence, in this process, once
the model is loaded. A page's figures are its view in :data:`disan.render.views.VIEWS` with the
page's default options, the very function the page calls; they are also serialised to JSON as
Streamlit does (``plotly.io.to_json(figure, validate=False)``) before sending them to the browser.

``--browser`` measures what a user waits for: it starts ``streamlit run app.py``, drives Chromium
(Debian's, through Playwright, with :mod:`disan.tools.browser`, as the browser tests do) at 1600x1000, and
times each interaction from the key press or click until the script run has ended
(``data-test-script-state=notRunning``) and the figure that shows the change is drawn: typing a new
sentence, then changing the feature mode, the colour scale and the query token, and switching pages. With
``--sentences N`` it then types N different sentences and reports the server's resident memory after each,
against the trace cache's bound (``DISAN_TRACE_CACHE_MB``, set with ``--cache-mb``).

``--open`` times what a new browser session waits for on the first page: a server whose model is
loaded, then new sessions, each in a fresh browser context (nothing cached, plotly.js fetched again) and
in a new tab of one browser (what its HTTP cache holds is not fetched again), timed from the page's
request to its first drawn figure, with where the time went: the script run's end, the download of
Streamlit's plotly chunk, every figure drawn, and the bytes the page received. The same is measured for a
bare Streamlit page that draws one 2x2 plotly heatmap: the least any page with a plotly figure costs
on the machine.

``--predict`` times a checkout's first prediction of the SST-5 dev and test sentences (3,311), each in a
fresh process with a fresh extension folder (so the C++ kernel builds in the background while the eager
path serves, as at a checkout's first use), one thread: ``disan.load(...).predict`` and ``disan predict``
to a CSV, in wall time and the process's CPU time (the background build, at low priority, is not counted),
then the same with the kernel built; ``--installed PYTHON`` adds the same first prediction by the package
that interpreter has installed (``pip install .``), run outside the checkout with a fresh extension folder,
saying whether anything was compiled. ``--baseline DIR`` runs ``--browser``, ``--predict``, ``--open`` and
``--pages`` on another checkout too (``git archive REV | tar -x -C DIR``), side by side in one run.

``--draw`` times the browser's part alone: every figure of every registered view on a sentence of
``--tokens`` words, and the maps of Corpus senses (every occurrence of the test split's most frequent word,
k by silhouette, as the page starts) and of the Feature atlas (the features of a sample of the test split:
as many points as over the whole split), made by the functions the pages call, each drawn with
``Plotly.newPlot`` in a page of its own in Chromium (plotly.js of the plotly package), median of
``--repeats`` draws after a first one, with its traces' types and its JSON's size.

``--pages analyses`` times what a user waits for on each analysis page (Corpus senses, Attribution, Case
study, Feature atlas, Faithfulness): a server just started with an empty result cache, each page opened by its link in
a new browser session, timed to its first drawn corpus figure (a stage's sample) and to its final one (the
whole corpus); then a server started again on the same port, which finds the results on disk, and the
same again, in new browser sessions and in the browser that had the app open before the restart (as a user
who restarts the server and reloads the tab: Streamlit's and plotly's code come from its cache). A last row
times the same restarts of a bare Streamlit page that draws one 2x2 plotly heatmap and nothing else: the
least a page with a plotly figure costs a browser on the machine, measured in the same run. ``--trace`` adds
when each page's script run started and ended, as the browser hears of it (the seconds before the start
are the browser's loading and connecting), and the CPU seconds the server spent on each visit.

``--soak`` is a day of use in minutes (default 10): ``--sessions`` browser sessions (default 3) on one server
just started, with an empty result cache bounded to ``--disk-mb`` (default 32, so that it is trimmed as it
fills), each visiting a random page by its link (every page but Training) with a random shipped model and a
random sentence, all at once, round after round. It reports the exceptions any page showed, the visits not
done within five minutes, and, about once a minute, the server's resident memory and the cache's size on
disk: the memory's growth after the first round against the trace cache's bound (``--cache-mb``), the disk
cache against its own.
"""
from __future__ import annotations

import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from contextlib import contextmanager
from pathlib import Path

import plotly
import plotly.graph_objects as go
import plotly.io
import plotly.offline
import torch

from disan.app import early
from disan.store.memory import CACHE_ENV, budget
from disan.data.kinds import kind_of
from disan.data.paths import site
from disan.analyses import atlas
from disan.store import diskcache
from disan.analyses import corpus
from disan.inspect.catalog import default_checkpoint, list_checkpoints
from disan.render import atlas as atlas_render
from disan.render import corpus as corpus_render
from disan.render.views import VIEWS
from disan.inspect.pipeline import load
from disan.tools.browser import (ANALYSIS_PAGES, IDLE, VIEWPORT, choose, chromium, free_port, navigate, sentence,
                                 server, type_sentence, wait_drawn, wait_final, wait_idle)
from disan.tools.parsers.latency import ANALYSIS_MODELS, parser


def measure(path: str, n_tokens: int, repeats: int) -> list[tuple[str, float, float]]:
    """(page, median trace ms, median trace + figures + JSON ms) for every view in VIEWS."""
    pipe = load(path)
    torch.set_num_threads(1)  # as the app runs it (see disan.app.models.THREADS)
    text = sentence(n_tokens)
    pipe.trace_sentence(text)  # warm-up: first-call allocations, spaCy load
    rows = []
    for page, view in VIEWS.items():
        times, trace_times = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            traced = pipe.trace_sentence(text)
            t1 = time.perf_counter()
            for fig in view.draw(traced, view.options()).figures.values():
                plotly.io.to_json(fig, validate=False)
            times.append(time.perf_counter() - t0)
            trace_times.append(t1 - t0)
        rows.append((page, 1e3 * statistics.median(trace_times), 1e3 * statistics.median(times)))
    return rows


def page_figures(path: str, n_tokens: int, atlas_sentences: int = 200) -> dict[str, go.Figure]:
    """Every figure of every view in VIEWS on a sentence of ``n_tokens`` words, with the pages' default options,
    and the maps that Corpus senses and the Feature atlas draw first, over the model's test split."""
    pipe = load(path)
    torch.set_num_threads(1)  # as the app runs it (see disan.app.models.THREADS)
    traced = pipe.trace_sentence(sentence(n_tokens))
    figures = {key: fig for view in VIEWS.values() for key, fig in view.draw(traced, view.options()).figures.items()}
    test = corpus.trained_corpus(pipe.config, "test")
    senses = corpus.analyse(pipe, test, corpus.frequent_words(test)[0], pipe.vector_kinds[0])
    few = corpus.sample(test, atlas_sentences)
    features = atlas.profile(pipe, few.tokens, few.name)
    return {**figures, **corpus_render.drawing(senses).figures,
            **atlas_render.drawing(features, atlas.overview(features)).figures}


# ---------------------------------------------------------------- in the browser

# Plotly.newPlot of one figure, repeats + 1 times, each in a div of its own and with the layout the drawing
# forces; the first draw, which also compiles plotly's code for the figure's trace types, is left out.
_NEW_PLOT = """async ([json, repeats]) => {
  const times = [];
  for (let r = 0; r <= repeats; r++) {
    const copy = JSON.parse(json);  // afresh each time: plotly writes into what it is given
    const div = document.body.appendChild(document.createElement('div'));
    const t0 = performance.now();
    await Plotly.newPlot(div, copy.data, copy.layout);
    document.body.offsetHeight;
    if (r) times.push(performance.now() - t0);
    Plotly.purge(div);
    div.remove();
  }
  return times;
}"""
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def drawing_ms(figures: dict[str, str], repeats: int) -> dict[str, float]:
    """The median milliseconds of ``Plotly.newPlot`` of each figure (its JSON, as Streamlit sends it) in
    Chromium, over ``repeats`` draws after a first one (which also compiles plotly's code for the figure's
    trace types)."""
    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.set_content("<html><body style='width: 1400px'></body></html>")
        page.add_script_tag(path=str(PLOTLY_JS))
        return {key: statistics.median(page.evaluate(_NEW_PLOT, [json, repeats])) for key, json in figures.items()}


def timed(page, action, title: str) -> float:
    """Seconds from ``action()`` until a figure titled with ``title`` is drawn and the app is idle."""
    page.wait_for_function(IDLE, timeout=180_000)
    t0 = time.perf_counter()
    action()
    page.wait_for_timeout(50)  # let the rerun start, so that the previous idle state is not taken for the end
    wait_drawn(page, title)
    return time.perf_counter() - t0


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory of a process in MB (Linux): now (VmRSS), or its high-water mark (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc")


def browser_latency(checkpoint: str, n_tokens: int, repeats: int,
                    root: Path | None = None) -> list[tuple[str, list[float]]]:
    """(interaction, seconds of each round) on the Attention page and across pages, in Chromium, of the app of
    ``root`` (default: this checkout's)."""
    middle, other = n_tokens // 2, max(0, n_tokens // 2 - 10)
    rounds: dict[str, list[float]] = {}
    with server(root=root) as (_, url), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{url}/?model={checkpoint}")
        wait_drawn(page, "· query ")
        for r in range(repeats):
            marks = {middle: f"zebra{r}", other: f"giraffe{r}"}
            text = sentence(n_tokens, seed=r + 1, marks=marks)
            steps = [
                ("new sentence (trace and draw)", lambda: type_sentence(page, text), f"query {middle}: zebra{r}"),
                ("feature mode: max", lambda: choose(page, "max"), "max over features"),
                ("colour: probability", lambda: choose(page, "probability"),
                 "max over features, probability"),
                ("query token (a click on a token)",
                 lambda: page.locator('[data-testid="stButtonGroup"] button', has_text=f"giraffe{r}").first.click(),
                 f"query {other}: giraffe{r}"),
                ("feature mode: one feature", lambda: choose(page, "one feature"),
                 "feature k = "),  # the sharpest feature for the query, whichever it is
                ("page: Fusion gates", lambda: navigate(page, "Fusion gates"), "fusion gate F"),
                ("page: Source2token", lambda: navigate(page, "Source2token"), "source2token attention"),
                ("page: Attention", lambda: navigate(page, "Attention"), "· query "),
            ]
            for name, action, title in steps:
                rounds.setdefault(name, []).append(timed(page, action, title))
            # back to the defaults for the next round
            for label in ("mean", "lift over uniform"):
                choose(page, label)
                page.wait_for_timeout(300)
                wait_drawn(page, "DiSA")
    return list(rounds.items())


def browser_memory(checkpoint: str, n_tokens: int, sentences: int, cache_mb: float | None) -> dict:
    """The server's resident memory (MB) with the model loaded, after each of ``sentences`` different
    sentences of ``n_tokens`` tokens typed in Chromium, and its high-water mark; the trace memory bound in MB."""
    env = {} if cache_mb is None else {CACHE_ENV: str(cache_mb)}
    bound = (budget() if cache_mb is None else cache_mb * 2**20) / 2**20
    middle = n_tokens // 2
    with server(env) as (proc, url), chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{url}/?model={checkpoint}")
        wait_drawn(page, "· query ")
        base = rss_mb(proc.pid)
        after = []
        for k in range(sentences):
            text = sentence(n_tokens, seed=1000 + k, marks={middle: f"okapi{k}"})
            timed(page, lambda: type_sentence(page, text), f"query {middle}: okapi{k}")
            after.append(rss_mb(proc.pid))
        high = rss_mb(proc.pid, "VmHWM")
    return {"model_mb": base, "bound_mb": bound, "after_mb": after, "high_mb": high}


# ---------------------------------------------------------------- the analysis pages

# Streamlit gives an element drawn with a key the class st-key-<key>; plotly's .main-svg is there once drawn.
_FIGURE = """k => [...document.querySelectorAll(`[class*="st-key-"][class*="${k}"] .main-svg`)].length > 0"""
# Seconds since the page's navigation began (performance.now()) at which the page's script run first
# started and last ended, as the browser hears of them: what comes before the start is the browser loading
# the app and connecting, what comes after the end its drawing.
_RUN_TIMES = """(() => {
  const seen = window.__disanRun = {start: null, end: null};
  new MutationObserver(() => {
    const state = document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state');
    const now = performance.now() / 1000;
    if (state === 'running' && seen.start === null) seen.start = now;
    if (state === 'notRunning' && seen.start !== null) seen.end = now;
  }).observe(document, {subtree: true, childList: true, attributes: true,
                        attributeFilter: ['data-test-script-state']});
})()"""


def cpu_model() -> str:
    """The machine's CPU as /proc/cpuinfo names it (Linux), with the number of cores."""
    try:
        names = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                 if line.startswith("model name")]
    except OSError:
        names = []
    return f"{names[0] if names else 'unknown CPU'}, {os.cpu_count()} cores"


def new_page(opener):
    """A page of a browser (a new context: nothing cached) or of a browser context (its cache kept)."""
    return opener.new_page(viewport=VIEWPORT) if hasattr(opener, "new_context") else opener.new_page()


def analysis_visits(opener, models, cache_dir: str, port: int, root: Path | None = None,
                    timeout_s: float = 300) -> list[tuple]:
    """(model, page, seconds to its first corpus figure, seconds to its final figure, seconds to the start of
    its script run, seconds to the run's end, the server's CPU seconds meanwhile) for the first visit of
    each analysis page (its link, in a new page of ``opener``: a browser, so a new session with nothing
    cached, or a browser context, which keeps what it has cached) on a server of ``root``'s app (default:
    this checkout's) just started on ``port``, results kept in ``cache_dir`` (DISAN_CACHE_DIR)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    rows = []
    with server({"DISAN_CACHE_DIR": cache_dir}, root=root, port=port) as (proc, url):
        for model in models:
            for name, (path, key) in ANALYSIS_PAGES.items():
                page = new_page(opener)
                page.add_init_script(_RUN_TIMES)
                cpu = cpu_seconds([proc.pid])
                t0 = time.perf_counter()
                page.goto(f"{url}/{path}?model={model}")
                first = final = float("nan")  # NaN: not drawn within timeout_s (an error on the page, say)
                try:
                    page.wait_for_function(_FIGURE, arg=key, timeout=timeout_s * 1000, polling=50)
                    first = time.perf_counter() - t0
                    wait_final(page, key, timeout_s)
                    final = time.perf_counter() - t0
                except PlaywrightTimeout:
                    pass
                run = page.evaluate("window.__disanRun")
                rows.append((model, name, first, final, *(float("nan") if run[k] is None else run[k]
                                                          for k in ("start", "end")), cpu_seconds([proc.pid]) - cpu))
                page.close()
    return rows


def opened_before(context, port: int, root: Path | None = None, env: dict[str, str] | None = None) -> None:
    """The tab a user had open before restarting the server: the app of ``root`` served on ``port`` (this server
    is not timed), opened and closed in ``context``, whose HTTP cache then holds Streamlit's and plotly's code
    for that origin."""
    with server(env, root=root, port=port) as (_, url):
        page = context.new_page()
        page.goto(f"{url}/")
        wait_idle(page)
        page.close()


# The restarts :func:`analysis_latency` times: a new browser session (nothing cached), and the browser that
# had the app open before the restart (its HTTP cache holds Streamlit's and plotly's code), as when a user
# restarts the server and reloads the tab.
RESTARTS = ("new browser", "same browser")


def analysis_latency(models=ANALYSIS_MODELS, root: Path | None = None) -> tuple[list[tuple], dict[str, list[tuple]]]:
    """The rows of :func:`analysis_visits` for every analysis page's first visit on a fresh server with an
    empty result cache (a new browser session each), then for each of :data:`RESTARTS` on a server started
    again on the same port, which finds the first one's results on disk; the app of ``root`` (default: this
    checkout's)."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="disan-latency-cache-") as cache_dir, chromium() as browser:
        returning = browser.new_context(viewport=VIEWPORT)
        cold = analysis_visits(browser, models, cache_dir, port, root)
        opened_before(returning, port, root, {"DISAN_CACHE_DIR": cache_dir})
        restarted = {RESTARTS[0]: analysis_visits(browser, models, cache_dir, port, root),
                     RESTARTS[1]: analysis_visits(returning, models, cache_dir, port, root)}
    return cold, restarted


def bare_restarts() -> dict[str, float]:
    """Seconds from the link to the drawn figure of a bare Streamlit page (:data:`BARE_PAGE`) on a server
    started again, for each of :data:`RESTARTS`, as :func:`analysis_latency` times the app's pages: the least
    a restarted server's page with a plotly figure costs a browser on this machine."""
    port = free_port()
    seconds = {}
    with bare_app() as root, chromium() as browser:
        returning = browser.new_context(viewport=VIEWPORT)
        opened_before(returning, port, root)
        for how, opener in zip(RESTARTS, (browser, returning)):
            with server(root=root, port=port) as (_, url):
                page = new_page(opener)
                t0 = time.perf_counter()
                page.goto(f"{url}/")
                page.wait_for_function(f"() => {_SVGS}.length > 0", timeout=180_000, polling=50)
                seconds[how] = time.perf_counter() - t0
                page.close()
    return seconds


def _processes() -> dict[int, tuple[int, float]]:
    """Every process now: pid -> (parent pid, user + system CPU seconds) (Linux /proc)."""
    table = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after the name, which may hold spaces
        except OSError:  # a process that ended meanwhile
            continue
        table[int(stat.parent.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
    return table


def descendants(pid: int, table: dict | None = None) -> list[int]:
    """``pid`` and every process descended from it, parents before their children."""
    table = _processes() if table is None else table
    found, frontier = [], [pid]
    while frontier:
        found += frontier
        frontier = [p for p, (parent, _) in table.items() if parent in frontier and p not in found]
    return found


def cpu_seconds(pids) -> float:
    """User + system CPU seconds of the processes ``pids`` and all their descendants that are running now."""
    table = _processes()
    return sum(table[p][1] for p in {q for pid in pids for q in descendants(pid, table)} if p in table)


def own(selector: str) -> str:
    """A JavaScript array of the elements matching ``selector``, less those inside the hidden empty figure
    a session's first run sends first (disan.app.early)."""
    return f"[...document.querySelectorAll('{selector}')].filter(e => !e.closest('.st-key-{early.KEY}'))"


_SVGS = own(".js-plotly-plot .main-svg")  # the drawn figures' SVG layers
_FIGURES = own(".js-plotly-plot") + ".length"
# Marks, in the page's own clock (ms), the first moment each state is seen: the script run's states, and
# the number of plotly SVG layers drawn (three per figure).
_TIMELINE = """() => { window.__marks = {}; const mark = k => { if (!(k in window.__marks)) window.__marks[k] = performance.now(); };
  new MutationObserver(() => {
    const app = document.querySelector('[data-testid=stApp]');
    if (app) mark('script ' + app.getAttribute('data-test-script-state'));
    const drawn = """ + _SVGS + """.length;
    if (drawn) mark('svg ' + drawn);
  }).observe(document, {subtree: true, childList: true, attributes: true}); }"""
# Bytes the page fetched over HTTP (what a browser's cache served counts 0).
_HTTP_BYTES = """() => [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')]
  .reduce((total, e) => total + e.transferSize, 0)"""
_PLOTLY_CHUNK = """() => performance.getEntriesByType('resource').filter(e => e.name.includes('PlotlyChart'))
  .map(e => [e.startTime, e.responseEnd])[0] || [NaN, NaN]"""


def opening(sessions: int, root: Path | None = None, checkpoint: str | None = None,
            returning: bool = False) -> list[dict]:
    """The server's first session (it loads the model), then ``sessions`` more, each opening the app's first
    page (``?model=checkpoint``, or its default), on one server just started: seconds from the
    request to the first drawn figure, to the script run's end, to the plotly chunk's download, to the
    last figure; figures drawn; kB received over the WebSocket and fetched over HTTP. Each session is a new
    browser (nothing cached), or with ``returning`` a new tab of one browser (its HTTP cache kept, as for a
    user who has opened the app before)."""
    rows = []
    with server(root=root) as (proc, url), chromium() as browser:
        kept = browser.new_context(viewport=VIEWPORT) if returning else None
        for _ in range(sessions + 1):
            # Chromium's processes descend from this one through Playwright's driver, as the server does
            cpu_before = cpu_seconds([os.getpid()]) - cpu_seconds([proc.pid]), cpu_seconds([proc.pid])
            context = kept or browser.new_context(viewport=VIEWPORT)
            page = context.new_page()
            received = {"ws": 0}

            def on_socket(ws):
                ws.on("framereceived", lambda payload: received.__setitem__("ws", received["ws"] + len(payload)))

            page.on("websocket", on_socket)
            page.add_init_script(f"({_TIMELINE})()")
            page.goto(f"{url}/" + (f"?model={checkpoint}" if checkpoint else ""))
            page.wait_for_function(f"() => {_SVGS}.length > 0", timeout=180_000, polling=50)
            wait_idle(page)
            page.wait_for_timeout(1000)  # figures still being drawn after the run's end
            marks = page.evaluate("() => window.__marks")
            svg = {int(k.split()[1]): v for k, v in marks.items() if k.startswith("svg ")}
            _, chunk_end = page.evaluate(_PLOTLY_CHUNK)
            figures = page.evaluate(f"() => {_FIGURES}")
            server_cpu = cpu_seconds([proc.pid]) - cpu_before[1]
            browser_cpu = cpu_seconds([os.getpid()]) - cpu_seconds([proc.pid]) - cpu_before[0]
            rows.append({"first figure": min(svg.values()) / 1e3, "script end": marks.get("script notRunning", math.nan) / 1e3,
                         "plotly chunk": chunk_end / 1e3, "last figure": svg[max(svg)] / 1e3, "figures": figures,
                         "ws kB": received["ws"] / 1e3, "http kB": page.evaluate(_HTTP_BYTES) / 1e3,
                         "browser CPU": browser_cpu, "server CPU": server_cpu})
            (page if returning else context).close()
    return rows


# The least any Streamlit page with a plotly figure costs a browser on this machine: the same
# measurement of a page that draws one 2x2 heatmap and nothing else.
BARE_PAGE = """import plotly.graph_objects as go
import streamlit as st

st.plotly_chart(go.Figure(go.Heatmap(z=[[0, 1], [1, 0]])))
"""


@contextmanager
def bare_app():
    """A folder holding an ``app.py`` of :data:`BARE_PAGE`."""
    with tempfile.TemporaryDirectory(prefix="disan-bare-app-") as folder:
        (Path(folder) / "app.py").write_text(BARE_PAGE, encoding="utf-8")
        yield Path(folder)


# ---------------------------------------------------------------- a soak: sessions visiting pages at random

# Every page a soak visits by its link: the sentence pages, the Models page, and the analysis pages.
SOAK_PAGES = ("", "gates", "source2token", "word_senses", "counterfactuals", "compare_models", "models",
              *(path for path, _ in ANALYSIS_PAGES.values()))
SOAK_MODELS = ("sst5", "sick-e", "sick", "trec")
VISIT_TIMEOUT_S = 300  # a visit not done by then is counted as stalled
# True once the visit's script run has started and ended (with _RUN_TIMES as the page's init script).
_VISITED = f"() => window.__disanRun?.start != null && ({IDLE})()"


def soak(minutes: float, sessions: int = 3, pages=SOAK_PAGES, models=SOAK_MODELS, disk_mb: float = 32,
         trace_mb: float | None = None, seed: int = 0, visit_timeout_s: float = VISIT_TIMEOUT_S) -> dict:
    """``sessions`` browser sessions on one server just started (an empty result cache bounded to ``disk_mb``,
    the trace cache to ``trace_mb``, default its usual bound), each visiting a random page of ``pages`` by its
    link with a random model of ``models`` and a random sentence of 3-60 words, all at once, for ``minutes``.
    Returns the visits, the exceptions shown (their first lines), the visits not done within
    ``visit_timeout_s``, the bounds in MB and, after each round of visits: (seconds since the start, visits,
    server RSS in MB, result cache on disk in MB)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    rng = random.Random(seed)
    pairs = {e.name: kind_of(e.kind).pairs for e in list_checkpoints() if e.ok}
    with tempfile.TemporaryDirectory(prefix="disan-soak-cache-") as cache_dir:
        env = {diskcache.DIR_ENV: cache_dir, diskcache.BOUND_ENV: str(disk_mb),
               **({CACHE_ENV: str(trace_mb)} if trace_mb is not None else {})}
        before = {name: os.environ.get(name) for name in env}
        os.environ.update(env)  # for this process's look at the disk cache and its bounds
        try:
            out = {"visits": 0, "exceptions": [], "stalled": 0, "rounds": [],
                   "disk bound MB": diskcache.bound_bytes() / 2**20, "trace bound MB": budget() / 2**20}
            with server(env) as (proc, url), chromium() as browser:
                tabs = [browser.new_context(viewport=VIEWPORT).new_page() for _ in range(sessions)]
                for tab in tabs:
                    tab.add_init_script(_RUN_TIMES)
                start = time.time()
                while time.time() - start < minutes * 60:
                    for tab in tabs:  # at once: each returns as soon as the server answers
                        model = rng.choice(models)
                        query = {"model": model, "text": sentence(rng.randint(3, 60), seed=rng.randint(1, 10**6))}
                        if pairs[model]:
                            query["hypothesis"] = sentence(rng.randint(3, 20), seed=rng.randint(1, 10**6))
                        tab.goto(f"{url}/{rng.choice(pages)}?{urllib.parse.urlencode(query)}", wait_until="commit")
                    for tab in tabs:
                        try:
                            tab.wait_for_function(_VISITED, timeout=visit_timeout_s * 1000, polling=200)
                        except PlaywrightTimeout:  # counted, and the soak goes on
                            out["stalled"] += 1
                        shown = tab.locator('[data-testid="stException"]')
                        out["exceptions"] += [shown.nth(k).inner_text().splitlines()[0] for k in range(shown.count())]
                        out["visits"] += 1
                    disk = sum(size for _, size, _ in diskcache.listing()) / 2**20
                    out["rounds"].append((time.time() - start, out["visits"], rss_mb(proc.pid), disk))
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    return out


# ---------------------------------------------------------------- a checkout's first prediction

# What one fresh process does: import disan, read the sentences, load the model, predict; prints the
# seconds of the two parts and this process's CPU seconds.
_FIRST_PREDICT = """import sys, time
t0 = time.perf_counter()
import disan
texts = open(sys.argv[1], encoding="utf-8").read().splitlines()
pipe = disan.load(sys.argv[2])
t1 = time.perf_counter()
pipe.predict(texts)
print(t1 - t0, time.perf_counter() - t1, time.process_time())
"""


def predict_sentences() -> list[str]:
    """The SST-5 dev and test sentences (3,311), as ``python -m disan bench --predict`` reads them."""
    from disan.data.registry import load_task
    data = load_task("sst5", phrases=False)
    return [e.text.replace("\n", " ") for e in data.dev + data.test]


def first_predictions(root: Path | None, checkpoint: str, texts_file: str,
                      python: str = sys.executable) -> list[tuple[str, float, float, str]]:
    """(how, wall seconds, CPU seconds, what the wall time held) of a first prediction of the sentences in
    ``texts_file``: ``disan.load(...).predict`` and ``disan predict`` in a fresh process with a fresh extension
    folder each. From the checkout ``root``, the C++ kernel builds in the background meanwhile, and the first
    form is timed again with it built; with ``root`` None, the package that ``python`` has installed is timed
    from a folder outside any checkout, and the row says whether anything was compiled."""
    import resource

    rows = []
    with tempfile.TemporaryDirectory(prefix="disan-first-predict-") as scratch:
        commands = {"disan.load(...).predict": [python, "-c", _FIRST_PREDICT, texts_file, checkpoint],
                    "disan predict (CSV)": [python, "-m", "disan", "predict", checkpoint, texts_file,
                                            "--out", f"{scratch}/out.csv", "--no-progress", "--threads", "1"]}
        runs = [(how, command, f"{scratch}/ext-{k}") for k, (how, command) in enumerate(commands.items())]
        if root is not None:
            runs.append(("disan.load(...).predict, kernel built", commands["disan.load(...).predict"], runs[0][2]))
        for how, command, extensions in runs:
            env = {**os.environ, "TORCH_EXTENSIONS_DIR": extensions, "OMP_NUM_THREADS": "1"}
            if root is not None:
                env["PYTHONPATH"] = str(root)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            out = subprocess.run(command, cwd=root or scratch, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if out.returncode:
                raise RuntimeError(f"{how} failed in {root or python}: {out.stderr[-2000:]}")
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            parts = out.stdout.split()
            held = f"import and load {float(parts[0]):.1f} s, predict {float(parts[1]):.1f} s" if len(parts) == 3 else ""
            if root is None:
                compiled = Path(extensions).exists() and any(Path(extensions).iterdir())
                held = "; ".join(filter(None, (held, "compiled at run time" if compiled else "compiled nothing")))
            else:
                wait_for_build(Path(extensions))  # the background build, before the next run competes with it
            rows.append((how, wall, cpu, held))
    return rows


def wait_for_build(extensions: Path, timeout_s: float = 900) -> None:
    """Wait until the background build under ``extensions`` has made its library or failed; return at once
    where none started within a minute (an installed library, no compiler)."""
    start = time.time()
    while time.time() - start < timeout_s:
        logs = list(extensions.glob("*/build.log"))
        if list(extensions.glob("*/*.so")):
            time.sleep(2)  # the library is written just before the build step lets go of its lock
            return
        if any("rror" in log.read_text(errors="replace") for log in logs) or (not logs and time.time() - start > 60):
            return
        time.sleep(1)


def main(argv=None) -> None:
    """``python -m disan latency [CHECKPOINT]``: the latency table of every registered view."""
    p = parser()
    args = p.parse_args(argv)
    args.checkpoint = args.checkpoint or default_checkpoint()
    load_line = lambda: f"load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}"  # noqa: E731
    roots = {"this checkout": site(), **({f"baseline {args.baseline}": args.baseline} if args.baseline else {})}
    if args.predict:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8") as texts_file:
            texts = predict_sentences()
            texts_file.write("\n".join(texts) + "\n")
            texts_file.flush()
            checkpoint = args.checkpoint or str(site() / "checkpoints" / "sst5")
            print(f"{cpu_model()}; {load_line()} before; first prediction of {len(texts):,} sentences, one thread")
            print("| code | how | wall (s) | CPU (s) | of the wall time |\n|---|---|---:|---:|---|")
            runs = [(name, root, sys.executable) for name, root in roots.items()]
            runs += [(f"installed ({args.installed})", None, args.installed)] if args.installed else []
            for name, root, python in runs:
                for how, wall, cpu, held in first_predictions(root, checkpoint, texts_file.name, python):
                    print(f"| {name} | {how} | {wall:.1f} | {cpu:.1f} | {held} |", flush=True)
        print(f"{load_line()} after")
        return
    if args.open is not None:
        print(f"{cpu_model()}; {load_line()} before; Chromium {VIEWPORT['width']}x{VIEWPORT['height']}; the first "
              f"page in the server's first session (a server just started: imports and the model, as after "
              f"`streamlit run`) and in {args.open} new sessions after it (seconds from the request), each "
              "in a new browser (nothing cached) and in a new tab of a browser that has opened the app before; "
              "the bare page draws one 2x2 plotly heatmap and nothing else")
        print("| code | browser | session | first figure | script run ends | plotly chunk loaded | last figure | "
              "figures | WebSocket kB | HTTP kB | browser CPU (s) | server CPU (s) |\n"
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        with bare_app() as bare:
            for name, root in {**roots, "bare Streamlit page": bare}.items():
                for returning in (False, True):
                    for k, row in enumerate(opening(args.open, root, returning=returning)):
                        print(f"| {name} | {'same' if returning else 'new'} | {'later' if k else 'first'} | "
                              f"{row['first figure']:.2f} | "
                              f"{row['script end']:.2f} | {row['plotly chunk']:.2f} | {row['last figure']:.2f} | "
                              f"{row['figures']} | {row['ws kB']:.0f} | {row['http kB']:.0f} | "
                              f"{row['browser CPU']:.1f} | {row['server CPU']:.1f} |", flush=True)
        print(f"{load_line()} after")
        return
    if args.soak is not None:
        print(f"{cpu_model()}; {load_line()} before; {args.sessions} sessions, each visiting a random page by its "
              f"link with a random model and sentence, all at once, for {args.soak:g} minutes")
        run = soak(args.soak, args.sessions, disk_mb=args.disk_mb, trace_mb=args.cache_mb)
        rounds = run["rounds"]
        print("| minutes | visits | server RSS (MB) | result cache on disk (MB) |\n|---:|---:|---:|---:|")
        shown = -60.0
        for seconds, visits, rss, disk in rounds:
            if seconds - shown >= 60 or (seconds, visits, rss, disk) == rounds[-1]:  # about one a minute
                print(f"| {seconds / 60:.1f} | {visits} | {rss:.0f} | {disk:.1f} |")
                shown = seconds
        first, peak, disk = rounds[0][2], max(r[2] for r in rounds), max(r[3] for r in rounds)
        print(f"\n{run['visits']} visits, {len(run['exceptions'])} exceptions, {run['stalled']} not done within "
              f"{VISIT_TIMEOUT_S} s. Server RSS after the first round {first:.0f} MB, peak {peak:.0f} MB, last "
              f"{rounds[-1][2]:.0f} MB: growth {peak - first:.0f} MB against the trace cache's bound of "
              f"{run['trace bound MB']:.0f} MB ({'under' if peak - first <= run['trace bound MB'] else 'over'} it; "
              "the growth also holds the models loaded after the first round and the analyses' results kept in "
              f"memory). Result cache on disk: peak {disk:.1f} MB of its bound {run['disk bound MB']:g} MB "
              f"({'within' if disk <= run['disk bound MB'] else 'OVER'}).")
        for message in sorted(set(run["exceptions"])):
            print(f"exception: {message}")
        print(f"{load_line()} after")
        return
    if args.pages:
        models = [m for m in args.models.split(",") if m]
        print(f"{cpu_model()}; load average before {' / '.join(f'{x:.2f}' for x in os.getloadavg())}; Chromium "
              f"{VIEWPORT['width']}x{VIEWPORT['height']}; first visit of each page by its link (seconds to the "
              "first drawn corpus figure, and to the final one)")
        runs = {code: analysis_latency(models, root) for code, root in roots.items()}  # one after the other
        print("| code | model | page | first figure | final figure | "
              + " | ".join(f"after a restart, {how}: first | final" for how in RESTARTS) + " |\n"
              "|---|---|---|---:|---:|" + "---:|---:|" * len(RESTARTS))
        for code, (cold, restarted) in runs.items():
            for k, (model, page, first, final, *_) in enumerate(cold):
                again = " | ".join(f"{rows[k][2]:.1f} | {rows[k][3]:.1f}" for rows in restarted.values())
                print(f"| {code} | {model} | {page} | {first:.1f} | {final:.1f} | {again} |")
        floor = bare_restarts()
        print("| bare Streamlit page (one 2x2 heatmap) | | | | | "
              + " | ".join(f"{floor[how]:.1f} | {floor[how]:.1f}" for how in RESTARTS) + " |")
        if args.trace:
            print("\nWhere the seconds go, since the link was opened: the script run's start and end as the browser "
                  "hears of them (before the start: the browser loading the app and connecting; the end comes "
                  "after the browser has handled what the run sent before it), the first and final corpus "
                  "figure drawn, and the CPU seconds the server spent on the visit (its script run: imports, "
                  "model, corpus, stages, reading the disk cache)\n"
                  "| code | server | model | page | run starts | run ends | first figure | final figure | server CPU |\n"
                  "|---|---|---|---|---:|---:|---:|---:|---:|")
            for code, (cold, restarted) in runs.items():
                for label, rows in (("fresh", cold), *((f"restarted, {how}", r) for how, r in restarted.items())):
                    for model, page, first, final, start, end, cpu in rows:
                        print(f"| {code} | {label} | {model} | {page} | {start:.1f} | {end:.1f} | {first:.1f} "
                              f"| {final:.1f} | {cpu:.1f} |")
        print(f"load average after {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return
    if args.checkpoint is None:
        p.error("no checkpoint found; name one")
    if args.draw:
        tokens, repeats = args.tokens or 200, args.repeats or 5
        figures = page_figures(args.checkpoint, tokens)
        sent = {key: plotly.io.to_json(fig, validate=False) for key, fig in figures.items()}
        print(f"{cpu_model()}; {load_line()} before; Chromium, plotly.js {plotly.offline.get_plotlyjs_version()}; "
              f"checkpoint {Path(args.checkpoint).name}, {tokens} tokens; Plotly.newPlot of each figure, median of "
              f"{repeats}")
        print("| figure | traces | JSON kB | newPlot (ms) |\n|---|---|---:|---:|")
        for key, ms in drawing_ms(sent, repeats).items():
            kinds = sorted({trace.type for trace in figures[key].data})
            print(f"| {key} | {len(figures[key].data)} {', '.join(kinds)} | {len(sent[key]) / 1e3:.0f} | {ms:.0f} |",
                  flush=True)
        print(f"{load_line()} after")
        return
    if not args.browser:
        tokens, repeats = args.tokens or 30, args.repeats or 20
        print(f"checkpoint {args.checkpoint}, {tokens} tokens, median of {repeats}")
        print("| page | trace (ms) | trace + figures + JSON (ms) |\n|---|---:|---:|")
        for page, trace_ms, total_ms in measure(args.checkpoint, tokens, repeats):
            print(f"| {page} | {trace_ms:.1f} | {total_ms:.1f} |")
        return
    name = Path(args.checkpoint).name
    tokens, repeats = args.tokens or 200, args.repeats or 3
    print(f"Chromium {VIEWPORT['width']}x{VIEWPORT['height']}, checkpoint {name}, {tokens} tokens, "
          f"{repeats} rounds (seconds: median, max)")
    print(f"{cpu_model()}; {load_line()} before")
    print("| code | interaction | median (s) | max (s) |\n|---|---|---:|---:|")
    for code, root in roots.items():
        for interaction, seconds in browser_latency(name, tokens, repeats, root):
            print(f"| {code} | {interaction} | {statistics.median(seconds):.2f} | {max(seconds):.2f} |", flush=True)
    print(f"{load_line()} after")
    if args.sentences:
        memory = browser_memory(name, tokens, args.sentences, args.cache_mb)
        peak = max(memory["after_mb"])
        print(f"\nserver RSS with the model loaded: {memory['model_mb']:.0f} MB; trace memory bound "
              f"{memory['bound_mb']:.0f} MB; after {args.sentences} sentences of {tokens} tokens: peak {peak:.0f} MB, "
              f"last {memory['after_mb'][-1]:.0f} MB; peak - model = {peak - memory['model_mb']:.0f} MB "
              f"({'under' if peak - memory['model_mb'] <= memory['bound_mb'] else 'OVER'} the bound); high-water mark "
              f"{memory['high_mb']:.0f} MB, with a trace's temporaries")
        print("RSS after each sentence (MB): " + ", ".join(f"{mb:.0f}" for mb in memory["after_mb"]))


if __name__ == "__main__":
    main()
