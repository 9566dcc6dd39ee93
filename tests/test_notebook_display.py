"""In Jupyter a prediction and a trace show themselves (``_repr_html_``): the predicted class with its
probability, the class probabilities, and each sentence's forward and backward attention heatmaps."""
import base64
import html
import json
import re

import numpy as np
import pytest

import disan
from disan.inspect.pipeline import Prediction

pytestmark = pytest.mark.quick

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


def test_a_prediction_shows_its_class_and_probabilities(make_checkpoint):
    pipe = disan.load(make_checkpoint("classify"))
    pred = pipe.predict(["the man is pouring tea"])[0]
    page = pred._repr_html_()
    assert f"prediction <b>{pred.label}</b> ({pred.probs[pred.label]:.3f})" in page
    (bars, _), = plotted(page)
    assert bars[0]["y"] == list(pred.probs) and array(bars[0]["x"]) == pytest.approx(list(pred.probs.values()))


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


def test_a_pair_shows_both_sentences_and_a_relatedness_score(make_checkpoint):
    pipe = disan.load(make_checkpoint("relatedness"))
    result = pipe.trace(("the man is pouring tea", "a biker"))
    page = result._repr_html_()
    assert f"relatedness score <b>{result.prediction.score:.2f}</b>" in page
    assert "premise: the man is pouring tea" in page and "hypothesis: a biker" in page
    assert len(plotted(page)) == 3


def test_without_a_registered_view_jupyter_falls_back_to_the_repr():
    class Other(Prediction):
        pass
    assert Other("x", {"x": 1.0})._repr_html_() is None
