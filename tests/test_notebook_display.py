"""In Jupyter everything ``disan.viz`` returns shows itself as HTML beside plotly's own output: a prediction
(the predicted class with its probability, the class probabilities), a trace (each sentence's forward and
backward attention heatmaps), a drawing (its figures and captions), the feature atlas (its table and map).
The README's notebook block runs cell by cell in a real kernel, and plotly.js travels once, inline."""
import ast
import base64
import html
import importlib.util
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import disan
from disan.render import notebook, views
from disan.inspect.pipeline import Prediction
from tests.test_readme import BLOCKS, EXAMPLES, OPTIONAL

ROOT = Path(__file__).resolve().parent.parent
PLOTLY_JS = re.compile(r"\* plotly\.js v\d")  # the header of the plotly.js bundle
PLOTLY_MIME = "application/vnd.plotly.v1+json"

CALL = re.compile(r'Plotly\.newPlot\(\s*"[^"]+",\s*')


def plotted(page: str) -> list[tuple[list, dict]]:
    """(traces, layout) of every plotly figure in an HTML fragment: the JSON arguments of Plotly.newPlot."""
    decoder, out = json.JSONDecoder(), []
    for call in CALL.finditer(page):
        data, end = decoder.raw_decode(page, call.end())
        layout, _ = decoder.raw_decode(page, re.compile(r",\s*").match(page, end).end())
        out.append((data, layout))
    return out


def array(value) -> np.ndarray:
    """A plotted array: a JSON list, or plotly's typed-array encoding ({"dtype", "bdata", "shape"})."""
    if isinstance(value, dict):
        shape = [int(v) for v in str(value.get("shape", "-1")).split(",")]
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).reshape(shape).astype(float)
    return np.array(value, dtype=float)


@pytest.mark.quick
def test_a_prediction_shows_its_class_and_probabilities(make_checkpoint):
    pipe = disan.load(make_checkpoint("classify"))
    pred = pipe.predict(["the man is pouring tea"])[0]
    page = pred._repr_html_()
    assert f"prediction <b>{pred.label}</b> ({pred.probs[pred.label]:.3f})" in page
    (bars, _), = plotted(page)
    assert bars[0]["y"] == list(pred.probs) and array(bars[0]["x"]) == pytest.approx(list(pred.probs.values()))


@pytest.mark.quick
def test_a_trace_shows_the_prediction_and_both_directions(make_checkpoint):
    pipe = disan.load(make_checkpoint("classify"))
    result = pipe.trace("the man <b>is</b> pouring tea")
    page = result._repr_html_()
    assert html.escape(result.sentence.text) in page and "<b>is</b>" not in page
    figures = plotted(page)
    assert len(figures) == 2  # the class probabilities, then the attention pair
    heatmaps = [t for t in figures[1][0] if t["type"] == "heatmap"]
    assert len(heatmaps) == 2
    n = len(result.sentence.tokens)
    for trace, block in zip(heatmaps, result.sentence.trace.blocks):
        z = array(trace["z"])
        assert z.shape == (n, n)
        # rows are queries j, columns attended tokens i: forward fills only i < j, backward only i > j
        mask = block.mask.numpy()
        assert np.isnan(z[~mask]).all() and np.isfinite(z[mask]).all()
        assert mask[1, 0] != mask[0, 1]


@pytest.mark.quick
def test_a_pair_shows_both_sentences_and_a_relatedness_score(make_checkpoint):
    pipe = disan.load(make_checkpoint("relatedness"))
    result = pipe.trace(("the man is pouring tea", "a biker"))
    page = result._repr_html_()
    assert f"relatedness score <b>{result.prediction.score:.2f}</b>" in page
    assert "premise: <bdi>the man is pouring tea</bdi>" in page and "hypothesis: <bdi>a biker</bdi>" in page
    assert len(plotted(page)) == 3


@pytest.mark.quick
def test_without_a_registered_view_jupyter_falls_back_to_the_repr():
    class Other(Prediction):
        pass
    assert Other("x", {"x": 1.0})._repr_html_() is None


@pytest.mark.quick
def test_plotly_js_travels_once_and_never_from_a_cdn():
    fig = go.Figure(go.Bar(x=[1, 2]))
    first, second = notebook.figure_html(fig), notebook.figure_html(fig)
    assert not PLOTLY_JS.search(second) and "Plotly.newPlot" in second  # later outputs use the page's plotly.js
    assert not re.search(r"<script[^>]*src=", first + second)  # no script from elsewhere (a CDN)


@pytest.mark.quick
def test_a_drawing_shows_its_titles_captions_figures_tables_and_notes():
    fig = go.Figure(go.Bar(x=[1, 2], y=[3, 4]))
    table = pd.DataFrame({"token": ["<b>"]})
    drawing = views.Drawing([views.Row({"a": fig}, "First <row>", "Why & how"),
                             views.Row({"b": table, "c": views.Note("nothing <here>")})])
    page = drawing._repr_html_()
    assert "First &lt;row&gt;" in page and "Why &amp; how" in page and "nothing &lt;here&gt;" in page
    assert "&lt;b&gt;" in page and "<b>" not in page  # the table's cells escaped by pandas
    (bars, _), = plotted(page)
    assert array(bars[0]["y"]) == pytest.approx([3, 4])


def cells(block: str) -> list[str]:
    """A README block as notebook cells: the statements that start on one line form one cell."""
    lines, grouped = block.splitlines(), {}
    for statement in ast.parse(block).body:
        grouped.setdefault(statement.lineno, []).append(statement)
    return ["\n".join(lines[group[0].lineno - 1:group[-1].end_lineno]) for group in grouped.values()]


def test_the_readme_notebook_block_shows_every_result_in_a_kernel():
    nbclient, nbformat = pytest.importorskip("nbclient"), pytest.importorskip("nbformat")
    block = next(b for b in BLOCKS if "from disan import viz" in b)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells(block)])
    # a last cell asks the kernel which module each cell's value comes from (IPython's Out: count -> value)
    nb.cells.append(nbformat.v4.new_code_cell("{k: type(v).__module__ for k, v in Out.items()}"))
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()  # raises if a cell fails
    modules = ast.literal_eval(nb.cells.pop().outputs[0]["data"]["text/plain"])
    assert any(m.startswith("disan") for m in modules.values())  # the block shows disan objects at all
    shown = []  # the HTML outputs in notebook order
    for cell in nb.cells:
        data = [o["data"] for o in cell.outputs if o["output_type"] in ("execute_result", "display_data")]
        if modules.get(cell.get("execution_count"), "").startswith("disan"):  # it ends in a disan object
            assert any("text/html" in d for d in data), (cell.source, [list(d) for d in data])
        for d in data:
            if PLOTLY_MIME in d:
                assert "text/html" in d, cell.source  # beside plotly's own, for static viewers
            shown += [d["text/html"]] if "text/html" in d else []
    drawn = [page for page in shown if "Plotly.newPlot" in page]
    assert len(drawn) >= 2  # plotly.js in the first figure only: the others must do without it
    assert PLOTLY_JS.search(drawn[0]) and not any(PLOTLY_JS.search(page) for page in drawn[1:])
    assert not any(re.search(r"<script[^>]*src=", page) for page in shown)  # no script from elsewhere


PLAIN_LIMIT = 2_000  # the most characters a cell may show as plain text alone (a page of a notebook)


def shown_alone(output) -> str | None:
    """The text an output shows when it has nothing richer than plain text (a stream, or a value with no HTML)."""
    if output["output_type"] == "stream":
        return output["text"]
    if output["output_type"] in ("execute_result", "display_data") and set(output["data"]) == {"text/plain"}:
        return output["data"]["text/plain"]
    return None


def test_every_cell_of_the_notebook_page_shows_compactly_in_a_kernel():
    nbclient, nbformat = pytest.importorskip("nbclient"), pytest.importorskip("nbformat")
    blocks = [block for page, block in EXAMPLES if page == "docs/notebook.md"
              and not any(re.search(rf"^\s*(from|import) {name}\b", block, re.M) and importlib.util.find_spec(name) is None
                          for name in OPTIONAL)]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for block in blocks for c in cells(block)])
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()  # raises if a cell fails
    plain = {cell.source: [t for o in cell.outputs if (t := shown_alone(o)) is not None] for cell in nb.cells}
    long = {source: [len(t) for t in shown] for source, shown in plain.items() if any(len(t) > PLAIN_LIMIT for t in shown)}
    assert not long, long  # a tensor, a trace or a list printed whole runs to thousands of lines

    def outputs(start: str) -> list[dict]:
        return next(cell.outputs for cell in nb.cells if cell.source.startswith(start))

    # a list of predictions is a table; a block's trace and the list of blocks name their tensors by shape
    predicted = [o["data"] for o in outputs('pipe.predict(["A gorgeous, witty film"])') if "data" in o]
    assert any("<table" in d.get("text/html", "") and "p_very positive" in d["text/html"] for d in predicted)
    block = plain['t.backward                                     # the same for the backward block'][0]
    assert block.startswith("DirectionTrace(name='backward'") and "probs=Tensor(5, 5, 300)" in block
    blocks_shown = plain[next(s for s in plain if s.startswith("trace.blocks"))][0]
    assert blocks_shown.count("DirectionTrace(") == 2 and "mask=Tensor(2, 7, 7, bool)" in blocks_shown


def table_cells(page: str) -> list[list[str]]:
    """The text of each cell of each row of an HTML table (headers included)."""
    rows = []

    class Cells(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "tr":
                rows.append([])
            elif tag in ("td", "th"):
                rows[-1].append("")

        def handle_data(self, data):
            if rows and rows[-1]:
                rows[-1][-1] += data.strip()

    Cells().feed(page)
    return rows


@pytest.mark.quick
def test_a_list_of_predictions_is_a_table_and_a_trace_its_shapes(make_checkpoint):
    pipe = disan.load(make_checkpoint("classify"))
    texts = [f"the man is pouring tea {i}" for i in range(12)]
    predictions = pipe.predict(texts)
    header, _, *rows = table_cells(predictions._repr_html_())  # the columns, the index's name, a row per input
    assert header == ["", "prediction", *(f"p_{label}" for label in pipe.labels)]
    assert [row[1] for row in rows] == [p.label for p in predictions]
    np.testing.assert_allclose([[float(v) for v in row[2:]] for row in rows],
                               [list(p.probs.values()) for p in predictions], atol=5e-4)
    shown = repr(predictions)  # a console: the first few, and how many there are
    assert shown.count("Prediction(") < len(texts) and shown.endswith(f"({len(texts)} predictions)]")
    assert repr(predictions[:3]) == "[" + ", ".join(map(repr, predictions[:3])) + "]"  # a slice is a plain list
    result = pipe.trace("the man is pouring tea")
    n, sentence = len(result.sentence.tokens), repr(result.sentence)
    assert "the man is pouring tea" in sentence and f"{n} tokens" in sentence
    assert f"probs=Tensor({n}, {n}, " in sentence and "tensor(" not in repr(result) and len(repr(result)) < PLAIN_LIMIT
    scored = disan.load(make_checkpoint("relatedness")).predict([("a man", "a person")])
    assert table_cells(scored._repr_html_())[0][1] == "score"


@pytest.mark.quick
def test_a_loaded_model_shows_what_it_reads_and_predicts_not_an_object_address(make_checkpoint):
    shipped = ROOT / "checkpoints" / "sst5"
    shown = repr(disan.load(shipped))
    config = json.loads((shipped / "config.json").read_text())
    assert shown.startswith("Pipeline('sst5'") and "object at 0x" not in shown
    assert f"predicts {', '.join(config['labels'])};" in shown and "reads sentences" in shown
    # as the training run counted them, and the Models page shows them
    assert f"{config['n_params']:,} parameters without the embeddings" in shown
    # a relatedness model predicts a score, not five classes
    tiny = make_checkpoint("relatedness")
    shown = repr(disan.load(tiny))
    levels = json.loads((tiny / "config.json").read_text())["labels"]
    assert f"predicts a score from {levels[0]} to {levels[-1]};" in shown
    assert "reads (premise, hypothesis) pairs" in shown
