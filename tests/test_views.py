"""The registry of what the pages draw (disan.render.views), on tiny untrained models."""
import html
import json
import os
import signal
from dataclasses import replace
from html.parser import HTMLParser

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

import disan
from disan.render import figures, markup, views
from disan.analyses import attribution, casestudy
from disan.inspect import senses
from disan.inspect.pipeline import Pipeline
from disan.tools import latency

from .conftest import make_model

pytestmark = pytest.mark.quick

TEXT = "the glass bottle is big"


def sentence(encoder="disan", text=TEXT):
    model, vocab = make_model("classify", encoder)
    return Pipeline(model, vocab, {}, {}).trace_sentence(text)


def parse(body: str) -> tuple[set[str], list[str]]:
    """(the tags of an HTML fragment, the text of each of its spans)."""
    tags, spans = set(), []

    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.add(tag)
            if tag == "span":
                spans.append("")

        def handle_data(self, data):
            if self.get_starttag_text() and self.get_starttag_text().startswith("<span"):
                spans[-1] += data

    Parser(convert_charrefs=True).feed(body)
    return tags, spans


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


def test_the_latency_tool_counts_the_cpu_time_of_a_process_and_its_descendants():
    # a grandchild that spends over half a second of CPU: counted for its parent and for this process. It spins
    # to 0.55 s of its own clock: /proc counts in clock ticks (10 ms), and 0.5 s there read 0.49 once
    script = ("import subprocess, sys; subprocess.run([sys.executable, '-c', "
              "'import time, sys\\nwhile time.process_time() < 0.55: pass\\nprint(1, flush=True)\\ntime.sleep(60)'])")
    import subprocess
    import sys
    before = latency.cpu_seconds([os.getpid()])
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "1"
        assert latency.cpu_seconds([child.pid]) >= 0.5
        assert latency.cpu_seconds([os.getpid()]) - before >= 0.5
    finally:
        for pid in reversed(latency.descendants(child.pid)):
            os.kill(pid, signal.SIGTERM)
        child.wait()


def test_a_block_is_reduced_over_features_once_per_trace_and_reduction(monkeypatch):
    s = sentence()
    calls = []
    reduce = views.measures.reduce_features

    def spy(probs, mode):
        calls.append(mode)
        return reduce(probs, mode)

    monkeypatch.setattr(views.measures, "reduce_features", spy)
    first = views.attention(s)  # the heatmaps, the shading and the blocks' comparison all draw the mean
    assert calls == ["mean", "mean"]
    assert views.attention(s).figures["attention-pair"].to_dict() == first.figures["attention-pair"].to_dict()
    views.attention(s, views.AttentionOptions(mode="max"))
    assert calls == ["mean", "mean", "max", "max"]
    block = s.trace.blocks[0]
    shared = views.reduced(block, "mean")
    assert np.array_equal(shared, reduce(np.asarray(block.probs), "mean")) and not shared.flags.writeable


def test_keys_and_titles_follow_the_block_names():
    s = sentence("disan-nodir")
    assert views.block_names(s.trace) == ["diag 1", "diag 2"]
    attention = views.attention(s)
    assert list(attention) == ["attention-sentence", "attention-pair", "attention-grid", "attention-query-diag_1",
                               "attention-query-diag_2", "attention-blocks"]
    pair_titles = [a.text for a in attention["attention-pair"].layout.annotations]
    assert pair_titles == ["diag 1 DiSA", "diag 2 DiSA"]
    assert attention["attention-blocks"].layout.title.text.startswith("diag 1 − diag 2: mean over features")
    assert [row.title for row in attention.rows] == [None, None, "Sharpest features", "One query token, feature by feature",
                                                      "Diag 1 − diag 2"]
    gates = views.gates(s)
    assert list(gates) == ["gates-sentence-diag_1", "gates-sentence-diag_2", "gates-mean", "gates-diag_1",
                           "gates-diag_2"]
    assert [bar.name for bar in gates["gates-mean"].data] == ["diag 1", "diag 2"]
    assert list(views.gates(sentence()).figures) == ["gates-mean", "gates-forward", "gates-backward"]


def test_the_difference_compares_only_cells_both_blocks_may_attend():
    s = sentence("disan-nodir")
    diff = views.attention(s, views.AttentionOptions(scale="probability"))["attention-blocks"].data[0]
    a, b = (block.probs.numpy().mean(axis=-1) for block in s.trace.blocks)
    z = np.asarray(diff.z, dtype=float)
    off = ~np.eye(len(s.tokens), dtype=bool)
    np.testing.assert_allclose(z[off], (a - b)[off], rtol=1e-5, atol=1e-9)
    assert np.isnan(np.diag(z)).all()  # no block attends a token to itself


def test_directional_blocks_are_compared_by_the_attention_each_token_receives():
    # forward and backward never share a cell, so the section shows what each token receives in each
    # block over what uniform attention under the same mask gives: never an empty section
    s = sentence()
    drawing = views.attention(s, views.AttentionOptions(mode="max"))
    bars = drawing["attention-blocks"].data
    assert [bar.name for bar in bars] == ["forward", "backward"]
    n = len(s.tokens)
    for bar, block in zip(bars, s.trace.blocks):
        p, mask = block.probs.numpy().max(axis=-1), block.mask.numpy()
        expected = []
        for i in range(n):
            senders = [j for j in range(n) if mask[j, i]]
            # the max over features sums to more than 1 per query: each query's row is rescaled to a distribution
            got = sum(p[j, i] / p[j][mask[j]].sum() for j in senders)
            uniform = sum(1 / mask[j].sum() for j in senders)
            expected.append(got / uniform if senders else np.nan)
        np.testing.assert_allclose(np.asarray(bar.customdata, dtype=float), expected, rtol=1e-5)
    assert np.isnan(bars[0].customdata[-1]) and np.isnan(bars[1].customdata[0])
    assert drawing.rows[-1].title == "Attention received, forward against backward"


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
    explicit = views.attention(s, views.AttentionOptions("mean", None, "forward", n // 2, "lift", None,
                                                         "received forward"))
    assert default["attention-query-forward"].layout.title.text.startswith("forward · query 2: bottle · 5 sharpest features, lift")
    for key in default.figures:
        assert default[key].to_json() == explicit[key].to_json()
    assert default["attention-sentence"] == explicit["attention-sentence"]
    sharpest = views.sharpest_features(s.trace, "backward")
    assert len(sharpest) == min(views.TOP_RANKED, s.trace.blocks[0].probs.shape[-1])
    # both feature modes start at the sharpest feature: the sentence's shading and the blocks' comparison agree
    by_rank = views.attention(s, views.AttentionOptions("sharpest features", rank_by="backward"))
    by_k = views.attention(s, views.AttentionOptions("one feature", sharpest[0], rank_by="backward"))
    assert by_rank["attention-sentence"] == by_k["attention-sentence"]
    data = [json.loads(d["attention-blocks"].to_json())["data"] for d in (by_rank, by_k)]
    assert data[0] == data[1]


def mean_entropy(block) -> np.ndarray:
    """(d,) each feature's entropy (nats) over the keys of each query row that has one, averaged over those rows."""
    p, mask = block.probs.numpy().astype(float), block.mask.numpy()
    rows = [j for j in range(len(mask)) if mask[j].any()]
    return np.mean([[-sum(p[j, i, k] * np.log(p[j, i, k]) for i in np.flatnonzero(mask[j]) if p[j, i, k] > 0)
                     for k in range(p.shape[-1])] for j in rows], axis=0)


def test_one_feature_and_sharpest_features_draw_different_things():
    s = sentence()
    backward = s.trace.blocks[1]
    entropy = mean_entropy(backward)
    ranked = sorted(range(len(entropy)), key=lambda k: entropy[k])  # sharpest first
    chosen = ranked[1]
    one = views.attention(s, views.AttentionOptions("one feature", chosen, "backward", scale="probability"))
    top = views.attention(s, views.AttentionOptions("sharpest features", chosen, "backward", scale="probability"))
    # one feature: that feature's heatmap in both blocks (beside the sharpest of each block), titled by its k and
    # its rank at the query token
    assert "attention-ranked" not in one and {"attention-pair", "attention-grid"} <= set(one)
    assert one.rows[1].title == f"Feature k = {chosen} in both blocks" and "rank " in one.rows[1].caption
    for heatmap, block in zip(one["attention-pair"].data, s.trace.blocks):
        expected = np.where(block.mask.numpy(), block.probs.numpy()[..., chosen], np.nan)
        np.testing.assert_allclose(np.asarray(heatmap.z, dtype=float), expected, rtol=1e-6)
    # sharpest features: the ranking block's features in rank order as small multiples, in place of the one heatmap
    assert "attention-pair" not in top and "attention-grid" not in top
    grid = top["attention-ranked"]
    shown = ranked[:views.TOP_RANKED]
    assert len(grid.data) == len(shown)
    for heatmap, k in zip(grid.data, shown):
        expected = np.where(backward.mask.numpy(), backward.probs.numpy()[..., k], np.nan)
        np.testing.assert_allclose(np.asarray(heatmap.z, dtype=float), expected, rtol=1e-6)
    titles = [a.text for a in grid.layout.annotations if "#" in a.text]
    assert titles == [f"{'▶' if k == chosen else ''}#{r + 1} k={k} H={entropy[k]:.2f}"
                      for r, k in enumerate(shown)]


@pytest.mark.parametrize("options", [views.AttentionOptions(mode="median"), views.AttentionOptions(query=5),
                                     views.AttentionOptions("one feature", 5),
                                     views.AttentionOptions("sharpest features", rank_by="sideways"),
                                     views.AttentionOptions(scale="log"), views.AttentionOptions(window=(3, 3)),
                                     views.AttentionOptions(window=(0, 6)), views.AttentionOptions(shade="colour")])
def test_bad_options_are_value_errors(options):
    with pytest.raises(ValueError):
        views.attention(sentence(), options)


def test_the_default_heatmap_is_lift_over_uniform_centred_at_one():
    s = sentence()
    drawing = views.attention(s)
    forward = s.trace.blocks[0]
    mask = forward.mask.numpy()
    expected = forward.probs.numpy().mean(axis=-1) * mask.sum(axis=1)[:, None]  # P x the keys of row j
    left = drawing["attention-pair"].data[0]
    np.testing.assert_allclose(np.asarray(left.customdata, dtype=float)[mask], expected[mask], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(left.z, dtype=float)[mask], np.log2(expected[mask]), rtol=1e-4, atol=1e-6)
    assert left.zmin == -left.zmax and left.colorscale == drawing["attention-pair"].data[1].colorscale
    ticks = dict(zip(left.colorbar.tickvals, left.colorbar.ticktext))
    assert ticks[0.0] == "×1" and left.colorbar.title.text == "lift ×"
    probability = views.attention(s, views.AttentionOptions(scale="probability"))["attention-pair"].data[0]
    assert probability.zmin == 0 and probability.colorbar.title.text == "P"


def test_small_multiples_show_each_blocks_sharpest_features():
    s = sentence()
    grid = views.attention(s)["attention-grid"]
    titles = [a.text for a in grid.layout.annotations]
    expected = [f"{name} · k = {k}" for name in ("forward", "backward")
                for k in views.sharpest_features(s.trace, name, views.GRID)]
    assert titles == expected and len(grid.data) == len(expected)
    k = views.sharpest_features(s.trace, "backward", 1)[0]
    backward = s.trace.blocks[1]
    panel = grid.data[titles.index(f"backward · k = {k}")]
    mask = backward.mask.numpy()
    lifted = backward.probs.numpy()[..., k] * mask.sum(axis=1)[:, None]
    np.testing.assert_allclose(np.asarray(panel.customdata, dtype=float)[mask], lifted[mask], rtol=1e-5)


def test_the_query_view_orders_features_by_their_entropy_for_that_query():
    s = sentence(text="the glass bottle is big and the man is pouring tea")
    j = 6
    drawing = views.attention(s, views.AttentionOptions(query=j))
    forward = s.trace.blocks[0]
    p = forward.probs.numpy()[j, :j]  # (keys, d): the tokens query j may attend
    entropy = -(p * np.log(p)).sum(axis=0)
    rows = [int(k) for k in drawing["attention-query-forward"].data[0].y]
    assert rows == list(np.argsort(entropy, kind="stable")[:views.QUERY_FEATURES])
    assert "lowest entropy over the tokens it may attend" in drawing.rows[3].caption


def test_a_query_without_keys_and_a_one_token_sentence_get_words():
    s = sentence()
    drawing = views.attention(s, views.AttentionOptions(query=0))
    assert isinstance(drawing["attention-query-forward"], views.Note)
    assert "no earlier token" in drawing["attention-query-forward"].text
    assert isinstance(drawing["attention-query-backward"], go.Figure)
    one = views.attention(sentence(text="glass"))
    assert list(one) == ["attention-none"] and not one.figures
    assert "“\u2068glass\u2069” has 1 token, and no token may attend another" in one["attention-none"].text
    assert list(views.gates(sentence(text="glass")).figures) == ["gates-mean", "gates-forward", "gates-backward"]


def test_a_long_sentence_shows_a_window_around_the_query_with_thinned_ticks():
    words = ("the glass bottle is big a man pouring of tea restaurant about to close biker fountain " * 5).split()
    s = sentence(text=" ".join(words[:75]))
    n = len(s.tokens)
    assert n == 75 and views.default_window(n, 37) == (7, 67)
    drawing = views.attention(s)
    pair = drawing["attention-pair"]
    assert np.asarray(pair.data[0].z).shape == (views.WINDOW, views.WINDOW)
    assert pair.data[0].y[0] == f"query 7: {s.tokens[7]}"  # hover keeps the position in the sentence
    assert len(pair.layout.yaxis.tickvals) <= figures.MAX_TICKS and len(pair.data[0].y) == views.WINDOW
    assert "tokens 7–66 of 75" in pair.layout.title.text
    moved = views.attention(s, views.AttentionOptions(window=(0, 10)))["attention-pair"]
    assert np.asarray(moved.data[0].z).shape == (10, 10)
    # the lift of a cell counts every key of its row, not only those in the window
    forward = s.trace.blocks[0]
    row = 9
    expected = forward.probs.numpy()[row, :row].mean(axis=-1) * row
    np.testing.assert_allclose(np.asarray(moved.data[0].customdata, dtype=float)[row, :row], expected, rtol=1e-5)


def test_the_sentence_is_shaded_by_what_each_token_receives_from_escaped_text():
    s = sentence(text="the <b>glass</b> bottle is <script>big")
    tags, spans = parse(views.attention(s)["attention-sentence"].body)
    assert tags <= {"div", "span"}  # the tokens' markup is text, not tags
    assert spans == s.tokens and "<" in spans
    forward = s.trace.blocks[0]
    mask = forward.mask.numpy()
    p = forward.probs.numpy().mean(axis=-1)
    received = views.shading(s, "received forward")
    for i in range(len(s.tokens) - 1):  # the last token is attended by no forward query
        # what it receives over what uniform attention over each query's keys would give it
        uniform = sum(1 / mask[j].sum() for j in range(len(s.tokens)) if mask[j, i])
        assert received.values[i] == pytest.approx(p[mask[:, i], i].sum() / uniform, rel=1e-5)
    assert np.isnan(received.values[-1])
    gate = views.shading(s, "gate backward")
    np.testing.assert_allclose(gate.values, s.trace.blocks[1].gate.numpy().mean(axis=1), rtol=1e-6)
    assert set(views.shade_choices(s.trace)) == {"received forward", "received backward", "source2token",
                                                 "gate forward", "gate backward"}


@pytest.mark.parametrize("mode", ["mean", "max", "one feature"])
def test_the_shaded_sentence_follows_the_feature_mode_and_its_legend_says_so(mode):
    s = sentence(text="the glass bottle is big and the tea is hot")
    drawing = views.attention(s, views.AttentionOptions(mode, feature=2 if mode == "one feature" else None))
    body = html.unescape(drawing["attention-sentence"].body)
    forward = s.trace.blocks[0]
    mask, probs = forward.mask.numpy(), forward.probs.numpy().astype(float)
    a = {"mean": probs.mean(axis=-1), "max": probs.max(axis=-1), "one feature": probs[..., 2]}[mode]
    a = np.where(mask, a, 0) / np.maximum(np.where(mask, a, 0).sum(axis=1, keepdims=True), 1e-30)  # rows sum to 1
    got, uniform = a.sum(axis=0), (mask / np.maximum(mask.sum(axis=1, keepdims=True), 1)).sum(axis=0)
    values = views.shading(s, "received forward", {"mean": "mean", "max": "max", "one feature": 2}[mode]).values
    np.testing.assert_allclose(values[:-1], got[:-1] / uniform[:-1], rtol=1e-5)
    # what the tokens receive averages to uniform, so some are below ×1 and some above, in every mode
    assert np.nanmin(values) < 1 < np.nanmax(values)
    named = {"mean": "mean over features", "max": "max over features, each query's row rescaled to sum to 1",
             "one feature": "feature k = 2"}[mode]
    assert f"attention received in the forward block ({named})" in body


class Titles(HTMLParser):
    """The hover text (``title`` attributes) of an HTML fragment, decoded."""

    def __init__(self):
        super().__init__()
        self.titles = []

    def handle_starttag(self, tag, attrs):
        self.titles += [value for name, value in attrs if name == "title"]


FSI, PDI = "\u2068", "\u2069"  # Unicode's FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE


def test_tokens_in_prose_and_hover_text_are_isolated_for_right_to_left_scripts():
    tokens = ["الفيلم", "رائع", "جدا", "!"]
    s = sentence(text=" ".join(tokens))
    parser = Titles()
    parser.feed(views.attention(s)["attention-sentence"].body)
    # each hover names its token isolated, so its value stays after it: "‹token›: ×1.2"
    assert [t.split(": ")[0] for t in parser.titles] == [f"{FSI}{t}{PDI}" for t in tokens]
    note = views.query_panel(s, "forward", views.AttentionOptions(query=0))
    assert f"query 0 “{FSI}الفيلم{PDI}” attends to no token" in note.text
    one = views.attention(sentence(text="مرحبا"))["attention-none"].text
    assert one.startswith(f"“{FSI}مرحبا{PDI}” has 1 token")
    # a token's own direction controls (an override, a stray isolate end) cannot reach out of its isolate
    assert markup.quoted("a\u202eb\u2069c") == f"“{FSI}abc{PDI}”"
    assert markup.bdi("<ש>\u2066") == "<bdi>&lt;ש&gt;</bdi>"


def test_the_attention_page_and_the_analyses_quote_one_received_attention():
    # the shaded sentence (Attention page), the Attribution table and the Case study measure the same
    # "attention received ÷ uniform" of each token: one number, whichever page shows it
    pipe = Pipeline(*make_model("classify", "disan"), {}, {})
    s = pipe.trace_sentence("the glass bottle is big and the tea is hot")
    table = attribution.attention_measures(s)
    study = casestudy.measure(pipe, [s.tokens])
    for block in s.trace.blocks:
        page = views.shading(s, f"received {block.name}").values
        np.testing.assert_allclose(table[f"received · {block.name}"], page, rtol=1e-6)
        np.testing.assert_allclose(study.tokens[f"{block.name} relative"], page, rtol=1e-5)


def test_gates_sort_features_mark_stop_words_and_start_bars_at_one_half():
    s = sentence(text="the glass bottle is big")
    drawing = views.gates(s)
    heatmap = drawing["gates-forward"].data[0]
    gate = s.trace.blocks[0].gate.numpy()
    order = [int(k) for k in heatmap.x]
    assert order == list(np.argsort(-gate.mean(axis=0), kind="stable"))
    np.testing.assert_allclose(np.asarray(heatmap.z, dtype=float), gate[:, order], rtol=1e-6)
    assert heatmap.zmin + heatmap.zmax == pytest.approx(1.0)  # white at F = 0.5
    ticks = drawing["gates-forward"].layout.yaxis.ticktext
    assert "<i>the</i>" in ticks[0] and "<i>" in ticks[3] and "<i>" not in ticks[1]  # "the", "is": stop words
    bars = drawing["gates-mean"].data[0]
    assert bars.base == 0.5
    np.testing.assert_allclose(np.asarray(bars.x, dtype=float) + 0.5, gate.mean(axis=1), rtol=1e-6)
    assert list(bars.marker.pattern.shape) == ["/", "", "", "/", ""]


def test_source2token_marks_where_the_backward_features_start():
    s = sentence()
    fig = views.source2token(s)["s2t-heatmap"]
    d = s.trace.blocks[0].probs.shape[-1]
    assert [shape.x0 for shape in fig.layout.shapes] == [d - 0.5]
    assert [a.text for a in fig.layout.annotations] == [f"forward: features 0–{d - 1}",
                                                        f"backward: features {d}–{2 * d - 1}"]


def test_every_figure_says_which_model_sentence_mode_and_feature(make_checkpoint):
    pipe = disan.load(make_checkpoint(name="my-model"))
    s = pipe.trace_sentence("the glass bottle is big and the man is pouring tea into a glass")
    for options in (views.AttentionOptions(), views.AttentionOptions("one feature", 3, scale="probability")):
        for key, fig in views.attention(s, options).figures.items():
            assert fig.layout.title.subtitle.text == "model my-model · “the glass bottle is big and the man is pouring…”"
    pair = views.attention(s, views.AttentionOptions("one feature", 3, scale="probability"))["attention-pair"]
    assert pair.layout.title.text.startswith("feature k = 3, probability")
    ranked = views.attention(s, views.AttentionOptions("sharpest features", rank_by="backward"))
    k = views.sharpest_features(s.trace, "backward")[0]
    shown = min(views.TOP_RANKED, s.trace.blocks[0].probs.shape[-1])
    assert ranked["attention-ranked"].layout.title.text.startswith(
        f"backward: its {shown} sharpest features, #1 first (H: mean entropy, nats), lift over uniform")
    assert f"feature k = {k} (the sharpest in backward)" in ranked["attention-blocks"].layout.title.text
    for drawing in (views.gates(s), views.source2token(s)):
        assert all("my-model" in fig.layout.title.subtitle.text for fig in drawing.figures.values())
    probs = views.prediction(pipe.trace("the glass bottle is big"))
    assert probs.layout.title.subtitle.text == "model my-model · “the glass bottle is big”"


def test_word_senses_say_why_they_cannot_draw():
    glass, tea = sentence(text="The glass bottle is big"), sentence(text="A man is pouring a glass of tea")
    drawing = views.word_senses([glass, tea])
    assert list(drawing) == ["senses-heatmaps", "senses-similarity", "senses-baseline", "senses-differing"]
    assert list(drawing.figures) == ["senses-heatmaps"]
    assert "glass" in drawing["senses-heatmaps"].layout.title.text
    assert views.senses_choices([glass, tea]) == (["glass", "is"], ["source2token", "output", "s"])
    assert senses.vector_kinds(sentence("bilstm", "the glass").trace) == ["source2token"]
    for inputs, message in (([glass], "at least two"), ([glass, sentence(text="tea of man")], "share no word")):
        with pytest.raises(views.Unavailable, match=message):
            views.word_senses(inputs)
    with pytest.raises(views.Unavailable, match="big"):
        views.word_senses([glass, tea], views.SensesOptions(word="big"))


@pytest.mark.parametrize("kind", ["source2token", "output"])
def test_the_cosine_of_a_word_comes_with_the_cosines_of_the_other_token_pairs(kind):
    glass, tea = sentence(text="The glass bottle is big"), sentence(text="A man is pouring a glass of tea")
    a, b = senses.token_vectors(glass.trace, kind), senses.token_vectors(tea.trace, kind)
    cos = lambda x, y: float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))  # noqa: E731
    others = [cos(a[i], b[k]) for i in range(len(a)) for k in range(len(b)) if i != 1 and k != 5]
    word = cos(a[1], b[5])
    mean, below, count = senses.cosine_baseline(glass.trace, 1, tea.trace, 5, kind)
    assert count == 4 * 7 and mean == pytest.approx(np.mean(others), abs=1e-6)
    assert below == pytest.approx(np.mean([c < word for c in others]))
    table = views.word_senses([glass, tea], views.SensesOptions("glass", kind))["senses-baseline"]
    row = table.iloc[0]
    assert row["sentences"] == "1 and 2" and row["cosine of “glass”"] == pytest.approx(word, abs=1e-6)
    assert row["mean cosine of the other token pairs"] == pytest.approx(np.mean(others), abs=1e-6)
    assert row["other pairs below “glass”"] == f"{below:.0%} of 28"
    single = sentence(text="glass")  # no other token: no baseline, said so
    assert senses.cosine_baseline(single.trace, 0, tea.trace, 5, kind)[2] == 0


def test_word_senses_use_the_chosen_occurrence_of_a_repeated_word():
    glass = sentence(text="The glass bottle is big")
    twice = sentence(text="a glass of tea in the glass bottle")
    assert views.occurrence_label(twice.tokens, 6) == "token 6: … in the [glass] bottle"
    second = views.word_senses([glass, twice], views.SensesOptions("glass", "source2token", (0, 1)))
    z = np.asarray(second["senses-heatmaps"].data[0].z, dtype=float)
    np.testing.assert_allclose(z[1], twice.trace.source2token.probs.numpy()[6], rtol=1e-6)
    first = views.word_senses([glass, twice], views.SensesOptions("glass", "source2token"))
    np.testing.assert_allclose(np.asarray(first["senses-heatmaps"].data[0].z, dtype=float)[1],
                               twice.trace.source2token.probs.numpy()[1], rtol=1e-6)
    with pytest.raises(ValueError, match="occurrences"):
        views.word_senses([glass, twice], views.SensesOptions("glass", "source2token", (1, 0)))


def test_token_labels_keep_repeated_tokens_apart_and_show_them_literally():
    labels = markup.token_labels(["the", "*cat*", "saw", "the", "the"])
    assert len(set(labels)) == 5  # Streamlit maps a click back by its label: each must be unique
    assert [label.replace("\u200b", "") for label in labels] == ["the", "\\*cat\\*", "saw", "the", "the"]
