"""The registry of what the pages draw (disan.explore.views), on tiny untrained models."""
from dataclasses import replace

import numpy as np
import pytest
import torch

from disan.explore import views
from disan.explore.pipeline import Pipeline
from disan.tools import latency

from .conftest import make_model

TEXT = "the glass bottle is big"


def sentence(encoder="disan", text=TEXT):
    model, vocab = make_model("classify", encoder)
    return Pipeline(model, vocab, {}, {}).trace_sentence(text)


def test_the_registry_holds_the_functions_the_pages_call():
    assert views.VIEWS["attention"].draw is views.attention
    assert views.VIEWS["gates"].draw is views.gates
    assert views.VIEWS["source2token"].draw is views.source2token


def test_the_latency_tool_times_the_registry_views_with_default_options(make_checkpoint, monkeypatch):
    calls = []

    def spy(name, draw):
        def call(sentence, options):
            calls.append((name, options))
            return draw(sentence, options)
        return call

    for name, view in list(views.VIEWS.items()):
        monkeypatch.setitem(views.VIEWS, name, replace(view, draw=spy(name, view.draw)))
    threads = torch.get_num_threads()
    try:
        rows = latency.measure(str(make_checkpoint()), 6, 1)
    finally:
        torch.set_num_threads(threads)  # measure runs single-threaded, as the app does
    assert [row[0] for row in rows] == list(views.VIEWS)
    assert calls == [(name, view.options()) for name, view in views.VIEWS.items()]


def test_keys_and_titles_follow_the_block_names():
    s = sentence("disan-nodir")
    assert views.block_names(s.trace) == ["diag 1", "diag 2"]
    attention = views.attention(s)
    assert list(attention) == ["attention-pair", "attention-query-diag_1", "attention-query-diag_2", "attention-diff"]
    assert [a.text for a in attention["attention-pair"].layout.annotations] == ["diag 1 DiSA", "diag 2 DiSA"]
    assert attention["attention-diff"].layout.title.text == "diag 1 − diag 2"
    assert [row.title for row in attention.rows] == [None, "One query token, every feature", "Diag 1 − diag 2"]
    gates = views.gates(s)
    assert list(gates) == ["gates-mean", "gates-diag_1", "gates-diag_2"]
    assert [bar.name for bar in gates["gates-mean"].data] == ["diag 1", "diag 2"]
    assert list(views.gates(sentence())) == ["gates-mean", "gates-forward", "gates-backward"]


def test_attention_masks_come_from_the_trace():
    s = sentence()
    forward = s.trace.blocks[0]
    knockout = forward.mask.clone()
    knockout[3, 1] = False  # a cell the forward direction allows, masked out in the trace
    s.trace = replace(s.trace, blocks=(replace(forward, mask=knockout),) + s.trace.blocks[1:])
    drawing = views.attention(s, views.AttentionOptions(query=3))
    pair = np.asarray(drawing["attention-pair"].data[0].z, dtype=float)
    np.testing.assert_array_equal(np.isnan(pair), ~knockout.numpy())
    query = np.asarray(drawing["attention-query-forward"].data[0].z, dtype=float)  # (d_h, n)
    assert np.isnan(query[:, 1]).all() and not np.isnan(query[:, 0]).any()


def test_default_options_pick_what_the_widgets_start_with():
    s = sentence()
    n = len(s.tokens)
    default = views.attention(s)
    explicit = views.attention(s, views.AttentionOptions("mean", None, "forward", n - 1))
    assert default["attention-query-forward"].layout.title.text == f"query {n - 1}: big"
    for key in default:
        assert default[key].to_json() == explicit[key].to_json()
    sharpest = views.sharpest_features(s.trace, "backward")
    assert len(sharpest) == min(views.TOP_RANKED, views.feature_count(s.trace))
    by_rank = views.attention(s, views.AttentionOptions("sharpest features", rank_by="backward"))
    by_k = views.attention(s, views.AttentionOptions("one feature", sharpest[0]))
    assert by_rank["attention-pair"].to_json() == by_k["attention-pair"].to_json()


@pytest.mark.parametrize("options", [views.AttentionOptions(mode="median"), views.AttentionOptions(query=5),
                                     views.AttentionOptions("one feature", 5),
                                     views.AttentionOptions("sharpest features", rank_by="sideways")])
def test_bad_options_are_value_errors(options):
    with pytest.raises(ValueError):
        views.attention(sentence(), options)


def test_word_senses_say_why_they_cannot_draw():
    glass, tea = sentence(text="The glass bottle is big"), sentence(text="A man is pouring a glass of tea")
    drawing = views.word_senses([glass, tea])
    assert list(drawing) == ["senses-heatmaps", "senses-similarity", "senses-differing"]
    assert list(drawing.figures) == ["senses-heatmaps"]
    assert "glass" in drawing["senses-heatmaps"].layout.title.text
    assert views.senses_choices([glass, tea]) == (["glass", "is"], ["source2token", "output", "s"])
    assert views.vector_kinds(sentence("bilstm", "the glass").trace) == ["source2token"]
    for inputs, message in (([glass], "at least two"), ([glass, sentence(text="tea of man")], "share no word")):
        with pytest.raises(views.Unavailable, match=message):
            views.word_senses(inputs)
    with pytest.raises(views.Unavailable, match="big"):
        views.word_senses([glass, tea], views.SensesOptions(word="big"))
