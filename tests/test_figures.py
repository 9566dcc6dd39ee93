"""Figures and tables of disan.figures / disan.tables, on small hand-made traces (n = 4, d = 3)."""
import io
import json
import zipfile
from types import SimpleNamespace

import numpy as np
import pandas as pd
import plotly.io as pio
import pytest

from disan.data.files import Summary
from disan.render import figures, tables
from disan.inspect import measures

pytestmark = pytest.mark.quick

N, D = 4, 3
TOKENS = ["the", "cat", "saw", "the"]                  # a repeated token
EVIL = ["<script>alert(1)</script>", "<b>x</b>", "a & b", 'say "hi"']
FW_MASK = np.tril(np.ones((N, N), dtype=bool), k=-1)   # i < j
BW_MASK = FW_MASK.T                                    # i > j


def masked_probs(mask, seed=0, d=D):
    """(n, n, d) per-feature softmax over the keys allowed by mask; rows without keys are 0."""
    logits = np.random.default_rng(seed).normal(size=mask.shape + (d,))
    e = np.where(mask[..., None], np.exp(logits), 0.0)
    z = e.sum(axis=1, keepdims=True)
    return e / np.where(z > 0, z, 1.0)


def make_trace(names=("forward", "backward"), with_s2t=True):
    """A one-sentence trace with a block per name; "diag 1", "diag 2" get the diag mask."""
    rng = np.random.default_rng(1)
    masks = {"forward": FW_MASK, "backward": BW_MASK, "diag": ~np.eye(N, dtype=bool)}

    def block(name):
        direction = name.split()[0]
        mask = masks[direction]
        return SimpleNamespace(name=name, direction=direction, probs=masked_probs(mask, seed=len(name)), mask=mask,
                               **{f: rng.random((N, D)) for f in ("h", "s", "gate", "u")})

    s2t = rng.random((N, 2 * D))
    return SimpleNamespace(
        blocks=tuple(block(name) for name in names),
        source2token=SimpleNamespace(probs=s2t / s2t.sum(axis=0)) if with_s2t else None,
        encoding=rng.normal(size=2 * D),
    )


def all_strings(fig):
    """Every string in the figure's JSON, decoded (to_json writes '<' as \\u003c, so search decoded text)."""
    return json_strings(json.loads(fig.to_json()))


def json_strings(tree) -> list[str]:
    """Every string (keys too) in parsed JSON."""
    out = []

    def walk(x):
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(k)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(tree)
    return out


# ---------------------------------------------------------------- reductions

def test_reduce_features_mean_max_and_index():
    p = np.arange(N * N * D, dtype=float).reshape(N, N, D)
    np.testing.assert_allclose(measures.reduce_features(p, "mean"), p.mean(axis=-1))
    np.testing.assert_allclose(measures.reduce_features(p, "max"), p[..., -1])
    np.testing.assert_allclose(measures.reduce_features(p, 1), p[..., 1])
    assert measures.reduce_features(p, np.int64(2))[3, 1] == p[3, 1, 2]
    for bad in ("median", D, -1, True):
        with pytest.raises(ValueError):
            measures.reduce_features(p, bad)


def test_sharpness_ranks_one_hot_before_uniform():
    mask = np.ones((N, N), dtype=bool)
    p = np.zeros((N, N, D))
    p[..., 0] = 1.0 / N                       # uniform: entropy log N
    p[:, 2, 1] = 1.0                          # one-hot: entropy 0
    p[..., 2] = np.array([0.5, 0.5, 0, 0])    # in between: log 2
    sharp = measures.feature_sharpness(p, mask)
    np.testing.assert_allclose(sharp, [np.log(N), 0.0, np.log(2)], atol=1e-12)
    assert measures.rank_features(p, mask) == [1, 2, 0]
    assert measures.rank_features(p, mask, top=1) == [1]


def test_sharpness_ignores_rows_without_keys_and_masked_cells():
    p = masked_probs(FW_MASK)                 # row 0 has no key
    garbage = p.copy()
    garbage[~FW_MASK] = 0.7                   # values outside the mask must not count
    expected = np.mean([-(p[j, :j] * np.log(p[j, :j])).sum(axis=0) for j in range(1, N)], axis=0)
    np.testing.assert_allclose(measures.feature_sharpness(garbage, FW_MASK), expected)
    assert np.isnan(measures.feature_sharpness(p, np.zeros((N, N), dtype=bool))).all()


def test_token_importance_sums_to_one():
    s2t = make_trace().source2token.probs
    imp = measures.token_importance(s2t)
    assert imp.shape == (N,)
    assert imp.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(imp, s2t.mean(axis=1))


def test_cosine_similarity():
    v = np.array([1.0, -2.0, 3.0])
    assert measures.cosine_similarity(v, v) == pytest.approx(1.0)
    assert measures.cosine_similarity(v, -v) == pytest.approx(-1.0)
    assert measures.cosine_similarity(v, np.zeros(3)) == 0.0
    assert measures.cosine_similarity(np.zeros(3), np.zeros(3)) == 0.0
    vs = [v, np.array([0.0, 1.0, 0.0]), np.zeros(3)]
    sim = measures.similarity_matrix(vs)
    expected = [[measures.cosine_similarity(a, b) for b in vs] for a in vs]
    np.testing.assert_allclose(sim, expected, atol=1e-12)
    assert not np.isnan(sim).any()


# ---------------------------------------------------------------- heatmaps

def as_drawn(values) -> np.ndarray:
    """Values as a heatmap holds them: rounded to float32, half the bytes the browser receives."""
    return np.asarray(values, dtype=np.float32).astype(float)


def test_attention_heatmap_masks_with_nan_and_keeps_values_to_float32_precision():
    m = measures.reduce_features(masked_probs(FW_MASK), "mean")
    fig = figures.attention_heatmap(m, TOKENS, FW_MASK, "forward")
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isnan(z[~FW_MASK]).all()
    np.testing.assert_array_equal(z[FW_MASK], as_drawn(m[FW_MASK]))
    assert fig.data[0].zmin == 0 and fig.data[0].zmax == pytest.approx(m[FW_MASK].max())
    assert fig.layout.plot_bgcolor == figures.MASKED_BG
    assert fig.data[0].hoverongaps is False  # masked cells have no hover value
    assert figures.attention_heatmap(m, TOKENS, FW_MASK, "f", zmax=0.5).data[0].zmax == 0.5


def test_duplicate_tokens_get_distinct_positions():
    fig = figures.attention_heatmap(np.zeros((N, N)), TOKENS, FW_MASK, "t")
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert len(set(axis.tickvals)) == N and axis.type == "category"
        assert list(axis.ticktext) == TOKENS
    assert len(set(fig.data[0].x)) == N and len(set(fig.data[0].y)) == N
    assert fig.layout.yaxis.autorange == "reversed"   # first token at the top


def test_hover_names_query_row_and_attended_column():
    tokens = ["a", "b", "c", "d"]
    fig = figures.attention_heatmap(np.ones((N, N)), tokens, np.ones((N, N), dtype=bool), "t")
    # z[j][i] sits at y = row j (the query) and x = column i (the attended token); hover reads both
    assert list(fig.data[0].y) == [f"query {j}: {t}" for j, t in enumerate(tokens)]
    assert list(fig.data[0].x) == [f"attended {i}: {t}" for i, t in enumerate(tokens)]
    assert fig.data[0].hovertemplate.startswith("%{y} → %{x} = %{z")


def test_long_tokens_are_truncated_in_ticks():
    tokens = ["x" * 40, "b", "c", "d"]
    tick = figures.attention_heatmap(np.zeros((N, N)), tokens, FW_MASK, "t").layout.xaxis.ticktext[0]
    assert tick.endswith("…") and len(tick) == figures.TICK_CHARS


P = masked_probs(FW_MASK)
M = P.mean(axis=-1)
GATE = np.random.default_rng(0).random((N, D))
EVIL_FIGURES = {
    "attention_heatmap": lambda: figures.attention_heatmap(M, EVIL, FW_MASK, EVIL[0]),
    "attention_pair": lambda: figures.attention_pair(M, M.T, EVIL, FW_MASK, BW_MASK, titles=(EVIL[0], EVIL[1])),
    "query_view": lambda: figures.query_view(P, 1, EVIL, FW_MASK, features=[2, 0]),
    "feature_grid": lambda: figures.feature_grid([(EVIL[0], M, FW_MASK)], EVIL, 1, title=EVIL[1]),
    "lift_pair": lambda: figures.attention_pair(M, M.T, EVIL, FW_MASK, BW_MASK, scale="lift", title=EVIL[0]),
    "difference_heatmap": lambda: figures.difference_heatmap(M, M.T, EVIL),
    "gate_heatmap": lambda: figures.gate_heatmap(GATE, EVIL, EVIL[1], stop=[True] * N),
    "mean_gate_bars": lambda: figures.mean_gate_bars({EVIL[0]: GATE, "backward": GATE}, EVIL, stop=[True] * N),
    "source2token_heatmap": lambda: figures.source2token_heatmap(GATE / GATE.sum(axis=0), EVIL, halves=EVIL[:2]),
    "described": lambda: figures.describe(figures.importance_bars(GATE.mean(axis=1), EVIL), EVIL[0]),
    "importance_bars": lambda: figures.importance_bars(GATE.mean(axis=1), EVIL),
    "word_sense_heatmaps": lambda: figures.word_sense_heatmaps([GATE[0], GATE[1]], EVIL[:2]),
    "confusion_heatmap": lambda: figures.confusion_heatmap(np.eye(N) * 3, EVIL),
    "curves": lambda: figures.curves([{"epoch": 1, EVIL[0]: 0.5}], [EVIL[0]]),
    "label_balance": lambda: figures.label_balance(Summary("classify", EVIL, {"train": N}, [1] * N, []), EVIL[0]),
}


@pytest.mark.parametrize("name", sorted(EVIL_FIGURES))
def test_untrusted_text_is_escaped_everywhere(name):
    fig = EVIL_FIGURES[name]()
    text = "\n".join(all_strings(fig))
    for raw in ("<script", "</script>", "<b>", "</b>", "a & b", '"hi"'):
        assert raw not in text
    assert "&lt;script&gt;" in text or "&lt;b&gt;" in text   # the tokens are there, escaped
    assert fig.layout.template == pio.templates["plotly_white"]
    assert fig.layout.height >= 240


@pytest.mark.parametrize("name", sorted(EVIL_FIGURES))
def test_colour_scales_are_colours_not_names(name):
    # the figures skip plotly's validation, which is what turns a name such as "RdBu_r" into colours;
    # plotly.js knows no reversed names and would draw another scale
    for trace in EVIL_FIGURES[name]().data:
        scale = getattr(trace, "colorscale", None)
        assert scale is None or not isinstance(scale, str), (name, scale)


def test_attention_pair_shares_one_scale():
    a = np.full((N, N), 0.2)
    b = np.full((N, N), 0.9)
    fig = figures.attention_pair(a, b, TOKENS, FW_MASK, BW_MASK)
    left, right = fig.data
    assert left.zmin == right.zmin == 0
    assert left.zmax == right.zmax == pytest.approx(0.9)
    assert [left.showscale, right.showscale] == [False, True]
    assert np.isnan(np.asarray(right.z, dtype=float)[~BW_MASK]).all()
    assert [a.text for a in fig.layout.annotations] == ["forward", "backward"]


def test_query_view_rows_are_features_and_masked_columns_nan():
    p = masked_probs(FW_MASK)
    fig = figures.query_view(p, 2, TOKENS, FW_MASK, features=[2, 0])
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (2, N)
    np.testing.assert_array_equal(z[:, :2], as_drawn(p[2, :2][:, [2, 0]].T))
    assert np.isnan(z[:, 2:]).all()
    assert list(fig.layout.yaxis.ticktext) == ["2", "0"] and list(fig.data[0].y) == ["2", "0"]
    assert fig.data[0].hovertemplate.startswith("feature %{y} → %{x}")
    full = figures.query_view(p, 3, TOKENS, FW_MASK)
    assert np.asarray(full.data[0].z).shape == (D, N)


def test_difference_is_forward_minus_backward_centred_at_zero():
    rng = np.random.default_rng(3)
    fw, bw = rng.random((N, N)), rng.random((N, N))
    fig = figures.difference_heatmap(fw, bw, TOKENS)
    np.testing.assert_allclose(np.asarray(fig.data[0].z, dtype=float), fw - bw)
    assert fig.data[0].zmid == 0


def test_gate_heatmap_range_and_orientation():
    gate = np.random.default_rng(4).random((N, D))
    fig = figures.gate_heatmap(gate, TOKENS, "gate", sort=False)
    spread = np.abs(gate - 0.5).max()
    assert (fig.data[0].zmin, fig.data[0].zmax) == pytest.approx((0.5 - spread, 0.5 + spread))  # white at 0.5
    np.testing.assert_array_equal(np.asarray(fig.data[0].z, dtype=float), as_drawn(gate))  # tokens (y) x features (x)
    assert fig.data[0].y[3] == "token 3: the" and list(fig.data[0].x) == list(range(D))
    assert "feature %{x}" in fig.data[0].hovertemplate and fig.data[0].colorbar.title.text == "F"
    near_half = figures.gate_heatmap(0.5 + 0.001 * gate, TOKENS, "gate").data[0]
    assert near_half.zmax - near_half.zmin == pytest.approx(0.04)  # small deviations still get colour


def test_gate_order_puts_the_features_that_keep_h_first():
    gate = np.array([[0.2, 0.9, 0.5], [0.4, 0.7, 0.5]])
    assert figures.gate_order(gate) == [1, 2, 0]
    fig = figures.gate_heatmap(gate, ["a", "b"], "gate")
    assert list(fig.data[0].x) == ["1", "2", "0"] and "by mean F" in fig.layout.xaxis.title.text


def test_mean_gate_bars_start_at_one_half():
    g_fw, g_bw = np.full((N, D), 0.25), np.full((N, D), 0.75)
    fig = figures.mean_gate_bars({"forward": g_fw, "backward": g_bw}, TOKENS, stop=[True, False, False, True])
    assert [t.name for t in fig.data] == ["forward", "backward"]
    np.testing.assert_allclose(np.asarray(fig.data[1].x, dtype=float), np.full(N, 0.25))  # 0.5 + 0.25 = 0.75
    assert fig.data[1].base == 0.5 and list(fig.data[1].customdata) == [0.75] * N
    assert fig.layout.barmode == "group" and list(fig.data[0].marker.pattern.shape) == ["/", "", "", "/"]
    assert fig.layout.xaxis.range[0] + fig.layout.xaxis.range[1] == pytest.approx(1.0)
    assert "stop words" in fig.layout.title.text


def test_lift_is_the_probability_times_the_keys_of_the_row():
    p = masked_probs(FW_MASK)
    lifted = measures.lift(p, FW_MASK)
    np.testing.assert_allclose(lifted[3], p[3] * 3)
    np.testing.assert_allclose(lifted[1], p[1])
    uniform = np.where(FW_MASK, 1.0 / np.maximum(FW_MASK.sum(axis=1, keepdims=True), 1), 0.0)
    np.testing.assert_allclose(measures.lift(uniform, FW_MASK)[FW_MASK], 1.0)


def test_lift_colours_are_symmetric_in_ratio_and_labelled_as_lifts():
    mask = np.array([[False, False], [True, True]])
    probability = figures.attention_heatmap(np.full((2, 2), 0.5), ["a", "b"], mask, "t", scale="probability").data[0]
    assert probability.zmin == 0 and probability.colorbar.title.text == "P"
    z = np.array([[0.0, 0.0], [0.125, 2.0]])  # lifts (x2 keys): 0.25 and 4
    trace = figures.attention_heatmap(z, ["a", "b"], mask, "t", scale="lift").data[0]
    np.testing.assert_allclose(np.asarray(trace.z, dtype=float)[1], [-2.0, 2.0])
    assert (trace.zmin, trace.zmax) == (-2.0, 2.0)
    # a 2-token figure's short colour bar labels the ends and x1 only
    assert dict(zip(trace.colorbar.tickvals, trace.colorbar.ticktext)) == {-2.0: "×0.25", 0.0: "×1", 2.0: "×4"}
    tall = figures.attention_heatmap(np.kron(z, np.ones((20, 20))) / 20, ["a", "b"] * 20, np.kron(mask, np.ones(
        (20, 20), bool)), "t", scale="lift").data[0]
    assert dict(zip(tall.colorbar.tickvals, tall.colorbar.ticktext)) == {-2.0: "×0.25", -1.0: "×0.5", 0.0: "×1",
                                                                          1.0: "×2", 2.0: "×4"}
    assert np.isnan(np.asarray(trace.z, dtype=float)[0]).all() and "customdata" in trace.hovertemplate
    flat = figures.attention_heatmap(np.full((2, 2), 0.5), ["a", "b"], mask, "t", scale="lift").data[0]
    assert flat.zmax == pytest.approx(np.log2(figures.LIFT_RANGE[0]))  # uniform stays pale, not noise-amplified


def test_query_entropy_is_per_row_and_feature():
    p = masked_probs(FW_MASK)
    entropy = measures.query_entropy(p, FW_MASK)
    assert np.isnan(entropy[0]).all()
    np.testing.assert_allclose(entropy[2], -(p[2, :2] * np.log(p[2, :2])).sum(axis=0))
    np.testing.assert_allclose(entropy[1], 0.0, atol=1e-12)  # one key: all the mass on it


def test_long_axes_label_every_kth_token():
    n = 95
    tokens = [f"w{i}" for i in range(n)]
    fig = figures.attention_heatmap(np.zeros((n, n)), tokens, np.ones((n, n), bool), "t")
    ticks = fig.layout.xaxis.ticktext
    assert len(ticks) == 32 and list(ticks[:2]) == ["w0", "w3"]  # every 3rd: at most MAX_TICKS
    assert len(fig.data[0].x) == n


def test_feature_grid_titles_each_panel_and_shares_one_scale():
    p = masked_probs(FW_MASK)
    panels = [(f"forward · k = {k}", p[..., k], FW_MASK) for k in (2, 0)] + [("backward · k = 1", p[..., 1].T, BW_MASK)]
    fig = figures.feature_grid(panels, TOKENS, 2)
    assert [a.text for a in fig.layout.annotations] == ["forward · k = 2", "forward · k = 0", "backward · k = 1"]
    assert len({(t.zmin, t.zmax) for t in fig.data}) == 1 and [t.showscale for t in fig.data] == [True, False, False]
    assert fig.layout.xaxis3.showticklabels and not fig.layout.xaxis.showticklabels  # labels on the bottom row


def test_curves_put_losses_and_metrics_on_separate_axes():
    history = [{"epoch": 1, "train_loss": 1.2, "dev_accuracy": 0.4}]
    fig = figures.curves(history, ["train_loss", "dev_accuracy"])
    assert [t.yaxis for t in fig.data] == ["y", "y2"]
    assert list(fig.layout.xaxis2.range) == [0.5, 1.5] and fig.layout.xaxis2.dtick == 1  # one epoch: a point


def test_curves_put_a_relatedness_error_apart_from_its_correlations():
    history = [{"epoch": 1, "train_loss": 0.5, "dev_pearson": 0.8, "dev_mse": 0.36}]
    fig = figures.curves(history, ["train_loss", "dev_pearson", "dev_mse"])
    axis = {t.name: t.yaxis for t in fig.data}
    assert len(set(axis.values())) == 3 and axis["dev_mse"] != axis["dev_pearson"]


def test_small_multiples_take_the_columns_that_fit_the_width():
    p = masked_probs(FW_MASK)
    panels = [(f"forward · k = {k}", p[..., k % D], FW_MASK) for k in range(12)]
    full = figures.feature_grid(panels, TOKENS, 6, width=figures.FULL_WIDTH)
    half = figures.feature_grid(panels, TOKENS, 6, width=figures.HALF_WIDTH)
    names = ["xaxis"] + [f"xaxis{k}" for k in range(2, 13)]
    columns = lambda fig: len({tuple(fig.layout[name].domain) for name in names})  # noqa: E731
    assert columns(full) == 6 and 1 < columns(half) < 6
    # every panel at least PANEL_PX wide, and the rows grow instead
    for fig, width in ((full, figures.FULL_WIDTH), (half, figures.HALF_WIDTH)):
        share = fig.layout.xaxis.domain[1] - fig.layout.xaxis.domain[0]
        assert share * (width - figures.MARGINS_PX) >= figures.PANEL_PX * 0.9
    assert half.layout.height > full.layout.height


def test_panel_titles_are_cut_to_their_panel_with_the_whole_title_on_hover():
    p = masked_probs(FW_MASK)
    name = "backward · k = 25 · the feature with the sharpest attention of all"
    fig = figures.feature_grid([(name, p[..., 0], FW_MASK)] * 3, TOKENS, 3, width=figures.HALF_WIDTH)
    shown = fig.layout.annotations[0]
    share = fig.layout.xaxis.domain[1] - fig.layout.xaxis.domain[0]
    room = share * (figures.HALF_WIDTH - figures.MARGINS_PX) / figures.SMALL_CHAR_PX
    assert len(shown.text) <= room + 1 and shown.text.endswith("…") and shown.hovertext == name
    short = figures.feature_grid([("forward · k = 7", p[..., 0], FW_MASK)], TOKENS, 1)
    assert short.layout.annotations[0].text == "forward · k = 7" and short.layout.annotations[0].hovertext is None


def test_titles_wrap_to_the_width_and_the_margin_makes_room_for_them():
    title = "backward · query 12: of · 40 sharpest features, lift over uniform"
    wide = figures.describe(figures.query_view(masked_probs(FW_MASK), 2, TOKENS, FW_MASK, title=title), "model m")
    narrow = figures.describe(figures.query_view(masked_probs(FW_MASK), 2, TOKENS, FW_MASK, title=title,
                                                 width=300), "model m", 300)
    assert "<br>" not in wide.layout.title.text
    lines = narrow.layout.title.text.split("<br>")
    assert len(lines) >= 2 and " ".join(lines) == figures.esc(title)
    assert all(len(line) * figures.TITLE_CHAR_PX <= 300 - 40 for line in lines)
    assert narrow.layout.margin.t >= wide.layout.margin.t + 24 * (len(lines) - 1)


def test_tick_labels_thin_by_the_pixels_they_have():
    n = 60
    tokens = [f"w{i}" for i in range(n)]
    masks = np.ones((n, n), bool)
    full = figures.attention_pair(np.zeros((n, n)), np.zeros((n, n)), tokens, masks, masks, width=figures.FULL_WIDTH)
    half = figures.attention_pair(np.zeros((n, n)), np.zeros((n, n)), tokens, masks, masks, width=figures.HALF_WIDTH)
    for fig, width in ((full, figures.FULL_WIDTH), (half, figures.HALF_WIDTH)):
        panel = (width - figures.MARGINS_PX) / 2
        assert len(fig.layout.xaxis.ticktext) * figures.TICK_PX <= panel
    assert len(half.layout.xaxis.ticktext) < len(full.layout.xaxis.ticktext)
    gate = np.random.default_rng(0).random((5, 300))
    narrow = figures.gate_heatmap(gate, TOKENS + ["a"], "F", width=figures.HALF_WIDTH)
    assert len(narrow.layout.xaxis.ticktext) * figures.TICK_PX <= figures.HALF_WIDTH - figures.MARGINS_PX
    assert narrow.layout.xaxis.autotickangles == (0, 90)  # horizontal or vertical, never slanted


@pytest.mark.parametrize("r", [np.log2(1.1), 0.3, 1.0, 2.5, 6.0])
@pytest.mark.parametrize("room", [3, 5, 7, 13])
def test_colour_bar_ticks_fit_their_room_and_never_crowd(r, room):
    ticks = figures.lift_ticks(r, room)
    logs = np.log2(ticks)
    assert len(ticks) <= max(3, room) and 1.0 in ticks
    assert np.allclose(logs, -logs[::-1])  # symmetric in ratio
    assert np.min(np.diff(logs)) >= 2 * r / 9 - 1e-9  # at least a ninth of the bar apart
    assert logs[-1] <= r + 1e-9 and ticks[-1] == figures.lift_ticks(r, 99)[-1]  # thinning keeps the largest step


def test_short_colour_bars_get_fewer_ticks():
    n = 8
    z = np.full((n, n), 0.5)
    z[np.arange(n), np.arange(n)] = 60.0
    mask = np.ones((n, n), bool)
    short = figures.attention_heatmap(z, ["a"] * n, mask, "t", scale="lift").data[0].colorbar
    tall = figures.feature_grid([("p", z, mask)] * 12, ["a"] * n, 6, scale="lift").data[0].colorbar
    assert len(short.tickvals) < len(tall.tickvals)


def test_heights_grow_with_tokens():
    small = figures.attention_heatmap(np.zeros((4, 4)), ["a"] * 4, np.ones((4, 4), bool), "t")
    big = figures.attention_heatmap(np.zeros((40, 40)), ["a"] * 40, np.ones((40, 40), bool), "t")
    assert big.layout.height > small.layout.height


def test_word_sense_rows_share_one_trace():
    vs = [np.array([1.0, -1.0, 0.0]), np.array([0.5, 0.5, 2.0])]
    fig = figures.word_sense_heatmaps(vs, ["bank (river)", "bank (money)"])
    assert len(fig.data) == 1
    np.testing.assert_array_equal(np.asarray(fig.data[0].z, dtype=float), np.stack(vs))
    assert fig.data[0].zmid == 0


def test_word_sense_probabilities_use_a_scale_from_zero():
    vs = [np.array([0.1, 0.3, 0.0]), np.array([0.2, 0.05, 0.6])]
    trace = figures.word_sense_heatmaps(vs, ["a", "b"], "“glass”").data[0]
    assert trace.zmid is None and trace.zmin == 0 and trace.zmax == 0.6


def test_confusion_heatmap_rows_gold_columns_predicted():
    cm = np.array([[5, 1], [2, 1234]])
    fig = figures.confusion_heatmap(cm, ["neg", "pos"])
    assert fig.data[0].text[1][0] == "2" and fig.data[0].text[1][1] == "1,234"
    assert fig.data[0].y[1] == "gold 1: pos" and fig.data[0].x[0] == "predicted 0: neg"


def test_label_balance_bars_each_class_in_the_model_order_with_escaped_names():
    summary = Summary("classify", ["<b>neg</b>", "pos"], {"train": 8, "dev": 1, "test": 1}, [3, 7], [])
    fig = figures.label_balance(summary, "a & b.csv")
    bar = fig.data[0]
    assert list(bar.y) == [3, 7] and list(bar.text) == [3, 7]
    assert list(bar.x) == ["class 0: &lt;b&gt;neg&lt;/b&gt;", "class 1: pos"]
    assert fig.layout.title.text.startswith("label balance of a &amp; b.csv: 10 rows, 2 classes")


def test_label_balance_of_scores_is_a_histogram_from_1_to_k():
    scores = [1.0, 1.1, 2.5, 2.6, 4.9, 5.0, 5.0]
    fig = figures.label_balance(Summary("relatedness", ["1", "2", "3", "4", "5"], {"train": 7}, [], scores), "s")
    bar = fig.data[0]
    width = figures.SCORE_BIN
    counts = dict(zip(np.round(np.asarray(bar.x) - width / 2, 6), bar.y))  # bin's lower edge -> rows
    assert len(counts) == round(4 / width) and sum(bar.y) == len(scores)
    assert counts[1.0] == 2 and counts[2.5] == 2 and counts[4.75] == 3 and counts[3.0] == 0  # 5.0 in the last bin
    assert list(fig.layout.xaxis.tickvals) == [1, 2, 3, 4, 5]


def test_curves_and_accuracy_by_length():
    history = [{"epoch": 1, "loss": 1.0, "dev_acc": 0.5}, {"epoch": 2, "loss": 0.5}]
    fig = figures.curves(history, ["loss", "dev_acc"])
    assert list(fig.data[0].x) == [1, 2] and list(fig.data[0].y) == [1.0, 0.5]
    assert list(fig.data[1].y) == [0.5, None]
    acc = figures.accuracy_by_length([3, 4, 12], [True, False, True], bins=(0, 5, 10, 15))
    assert list(acc.data[0].x) == ["0-4", "5-9", "10-14"]
    assert list(acc.data[0].y[[0, 2]]) == [0.5, 1.0] and np.isnan(acc.data[0].y[1])


# ---------------------------------------------------------------- tables

def test_differing_features_sorted_by_abs_diff():
    a = np.array([0.0, 1.0, 2.0, 3.0])
    b = np.array([0.5, -1.0, 2.0, 3.1])
    df = tables.differing_features(a, b, top=3)
    assert list(df.columns) == ["feature", "a", "b", "abs_diff"]
    assert list(df["feature"]) == [1, 0, 3]
    np.testing.assert_allclose(df["abs_diff"], [2.0, 0.5, 0.1])
    assert list(df["a"]) == [1.0, 0.0, 3.0]


def test_accuracy_by_length_table_counts():
    lengths = [1, 4, 5, 9, 12, 30, 44, 2000]
    correct = [True, False, True, True, False, True, False, True]
    df = tables.accuracy_by_length_table(lengths, correct)
    assert list(df.columns) == ["bin", "n", "accuracy"]
    assert list(df["bin"]) == ["0-4", "5-9", "10-14", "15-19", "20-24", "25-29", "30-44", "45-999"]
    assert list(df["n"]) == [2, 2, 1, 0, 0, 0, 2, 0]     # 2000 is outside the bins
    np.testing.assert_allclose(df["accuracy"], [0.5, 1.0, 0.0, np.nan, np.nan, np.nan, 0.5, np.nan])


def test_trace_frames_one_row_per_attended_cell_and_per_token():
    trace = make_trace()
    forward, backward = trace.blocks
    frames = tables.trace_frames(TOKENS, trace)
    fw = frames["forward_probs"]
    assert list(fw.columns) == ["query_j", "query_token", "key_i", "key_token"] + [f"prob_{k}" for k in range(D)]
    assert len(fw) == FW_MASK.sum()
    assert (fw["key_i"] < fw["query_j"]).all()
    row = fw[(fw.query_j == 3) & (fw.key_i == 1)].iloc[0]
    assert (row.query_token, row.key_token) == ("the", "cat")
    assert [row[f"prob_{k}"] for k in range(D)] == list(forward.probs[3, 1])
    masks = frames["masks"]
    assert list(masks.columns) == ["block", "direction", "query_j", "query_token", "key_i", "key_token", "attended"]
    assert len(masks) == 2 * N * N
    gates = frames["gates"]
    assert list(gates.columns) == ["block", "direction", "j", "token", "feature", "gate"]
    assert len(gates) == 2 * N * D
    bw = gates[gates.block == "backward"]
    np.testing.assert_array_equal(bw["gate"].to_numpy().reshape(N, D), backward.gate)
    s2t = frames["source2token"]
    assert list(s2t.columns) == ["i", "token", "feature", "prob"] and len(s2t) == N * 2 * D
    assert len(frames["encoding"]) == 2 * D


def test_trace_frames_skip_missing_parts():
    frames = tables.trace_frames(TOKENS, make_trace(names=("forward",), with_s2t=False))
    assert set(frames) == {"forward_probs", "masks", "gates", "states", "encoding"}
    assert set(frames["gates"]["block"]) == {"forward"}
    assert set(tables.trace_frames(TOKENS, make_trace(names=()))) == {"source2token", "encoding"}


def test_trace_csv_zip_names_and_row_counts():
    data = tables.trace_csv(TOKENS, make_trace())
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert set(zf.namelist()) == {"forward_probs.csv", "backward_probs.csv", "masks.csv", "gates.csv",
                                      "states.csv", "source2token.csv", "encoding.csv"}
        fw = pd.read_csv(zf.open("forward_probs.csv"))
        bw = pd.read_csv(zf.open("backward_probs.csv"))
    assert len(fw) == FW_MASK.sum() and len(bw) == BW_MASK.sum()
    assert list(fw["query_token"].head(2)) == ["cat", "saw"]
    # every probability comes back exactly, in its own precision
    probs = make_trace().blocks[0].probs
    written = fw[[f"prob_{k}" for k in range(D)]].to_numpy().astype(probs.dtype)
    np.testing.assert_array_equal(written, probs[FW_MASK])


def read_downloads(trace):
    """The CSV zip's tables and the npz's arrays of a trace."""
    with zipfile.ZipFile(io.BytesIO(tables.trace_csv(TOKENS, trace))) as zf:
        frames = {name[:-4]: pd.read_csv(zf.open(name)) for name in zf.namelist()}
    with np.load(io.BytesIO(tables.trace_npz(TOKENS, trace)), allow_pickle=False) as npz:
        arrays = dict(npz)
    return frames, arrays


def test_downloads_carry_the_trace_mask_not_a_guess_from_the_probabilities():
    trace = make_trace(names=("diag 1", "diag 2"))
    one = trace.blocks[0]
    knockout = one.mask.copy()
    knockout[2, 0] = knockout[3, 1] = False       # cells a structured mask leaves out
    one.mask = knockout
    one.probs = one.probs.copy()
    one.probs[3, 1] = 0.25                        # nonzero outside the mask: not attended all the same
    one.probs[1, 2] = 0.0                         # exactly 0 inside the mask: attended all the same
    frames, arrays = read_downloads(trace)
    for block in trace.blocks:
        key = tables.file_name(block.name)       # "diag 1" -> "diag_1"
        np.testing.assert_array_equal(arrays[f"{key}_mask"], block.mask)
        rows = frames["masks"][frames["masks"].block == block.name]
        np.testing.assert_array_equal(rows["attended"].to_numpy().reshape(N, N), block.mask)
        probs = frames[f"{key}_probs"]
        cells = np.zeros((N, N), dtype=bool)
        cells[probs["query_j"], probs["key_i"]] = True
        np.testing.assert_array_equal(cells, block.mask)
        assert len(probs) == block.mask.sum()
    assert list(arrays["blocks"]) == ["diag 1", "diag 2"] and str(arrays["diag_2_direction"]) == "diag"


def test_trace_npz_round_trip_without_pickle():
    trace = make_trace()
    tokens = ["<b>x</b>", "日本", "a & b", ""]
    data = tables.trace_npz(tokens, trace)
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        assert list(npz["tokens"]) == tokens
        assert list(npz["blocks"]) == ["forward", "backward"]
        assert str(npz["forward_direction"]) == "forward"
        for block in trace.blocks:
            for field in ("h", "probs", "s", "gate", "u", "mask"):
                np.testing.assert_array_equal(npz[f"{block.name}_{field}"], getattr(block, field))
        np.testing.assert_array_equal(npz["source2token_probs"], trace.source2token.probs)
        np.testing.assert_array_equal(npz["encoding"], trace.encoding)


def test_tables_accept_torch_tensors():
    torch = pytest.importorskip("torch")
    trace = make_trace()
    for block in trace.blocks:
        for field in ("h", "probs", "s", "gate", "u", "mask"):
            setattr(block, field, torch.tensor(getattr(block, field), requires_grad=field == "u"))
    frames = tables.trace_frames(TOKENS, trace)
    assert len(frames["backward_probs"]) == BW_MASK.sum()
    with np.load(io.BytesIO(tables.trace_npz(TOKENS, trace)), allow_pickle=False) as npz:
        assert npz["forward_u"].shape == (N, D) and npz["forward_mask"].dtype == bool


def test_class_probabilities_keep_the_label_order_and_mark_the_prediction():
    probs = {"very negative": 0.1, "negative": 0.2, "<b>neutral</b>": 0.6, "positive": 0.1}
    bar = figures.class_probabilities(probs, "<b>neutral</b>").data[0]
    assert list(bar.y) == ["very negative", "negative", "&lt;b&gt;neutral&lt;/b&gt;", "positive"]
    assert list(bar.x) == [0.1, 0.2, 0.6, 0.1]
    assert len(set(bar.marker.color)) == 2 and bar.marker.color[2] != bar.marker.color[0]


@pytest.mark.parametrize("n", [9, 40, 126])
def test_every_token_bar_is_labelled_or_the_tallest_is(n):
    rng = np.random.default_rng(n)
    tokens = [f"w{k}" for k in range(n)]
    values = rng.uniform(0.4, 0.6, n)
    tallest = int(rng.integers(n))
    values[tallest] = 0.95
    for fig in (figures.token_bars({"a": values, "b": np.full(n, 0.5)}, tokens, "t", "v", base=0.5),
                figures.importance_bars(values, tokens)):
        labelled = set(fig.layout.yaxis.ticktext)
        if n <= 40:  # a short sentence: every bar named
            assert labelled == set(tokens)
        assert tokens[tallest] in labelled
        ticks = list(fig.layout.yaxis.tickvals)
        assert len(ticks) == len(set(ticks)) and (len(ticks) - 1) * figures.TICK_PX <= figures.plot_height(fig.layout.height)


def test_the_uniform_mark_of_source2token_importance_stands_above_the_bars():
    fig = figures.importance_bars(np.full(5, 0.2), TOKENS + ["x"])
    (note,) = fig.layout.annotations
    assert note.text == "uniform 1/n" and note.yref == "paper" and note.y >= 1 and note.yanchor == "bottom"


def test_long_sentences_are_windowed_on_every_page_that_draws_tokens_by_tokens(make_checkpoint):
    import disan
    from disan import viz
    from disan.render import views
    pipe = disan.load(make_checkpoint("classify"))
    n = 126
    text = " ".join(f"w{k}" for k in range(n))
    key = 110
    drawings = {"knockout": viz.knockout(pipe, text, keys=[key]), "compare": viz.compare(pipe, pipe, text)}
    for name, drawing in drawings.items():
        for fig in drawing.figures.values():
            for trace in fig.data:
                if trace.type == "heatmap" and trace.x is not None and str(trace.x[0]).startswith("attended"):
                    assert len(trace.y) <= views.WINDOW and len(trace.x) <= views.WINDOW, name
                if trace.type == "bar":  # token bars too: at most a window of tokens
                    assert len(trace.y) <= views.WINDOW, name
    knocked = [fig for key_, fig in drawings["knockout"].figures.items() if key_.endswith("-change")]
    assert knocked and all(f"attended {key}: w{key}" in fig.data[0].x for fig in knocked)  # around the key
    assert all(f"of {n}" in fig.layout.title.text for fig in knocked)


def test_every_figure_keeps_a_plot_of_150_px_whatever_it_holds():
    one = np.ones((1, 1))
    for fig in (figures.attention_heatmap(one, ["w"], one.astype(bool), "t"),
                figures.class_probabilities({"a": 0.4, "b": 0.6}),
                figures.describe(figures.token_bars({"x": np.ones(1)}, ["w"], "t", "v"), "a source\nof two lines"),
                figures.importance_bars(np.ones(1), ["w"])):
        margin = fig.layout.margin
        top = margin.t if margin.t is not None else 100
        bottom = max(margin.b if margin.b is not None else 80, 120)  # what plotly may grow the x axis to
        assert fig.layout.height - top - bottom >= 150


@pytest.mark.parametrize("width", [figures.FULL_WIDTH, figures.HALF_WIDTH])
def test_the_blocks_marked_on_a_feature_axis_keep_their_feature_ranges_at_any_width(width):
    # a 600-feature source2token heatmap, as a DiSAN with d_h = 300 draws, full width and in a pair's column
    probs = np.full((N, 600), 1 / N)
    fig = figures.source2token_heatmap(probs, TOKENS, halves=["forward", "backward"], width=width)
    shown = [a.text for a in fig.layout.annotations]
    assert len(shown) == 2
    for name, span, text in zip(["forward", "backward"], ["0–299", "300–599"], shown):
        assert text.startswith(name) and text.endswith(span) and "…" not in text
    # the words left out in a narrow figure are on hover
    if width == figures.HALF_WIDTH:
        assert [a.hovertext for a in fig.layout.annotations] == ["forward: features 0–299", "backward: features 300–599"]
