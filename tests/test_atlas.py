"""The feature atlas (disan.analyses.atlas, drawn by disan.render.atlas): profiles against a per-sentence
reference, and the labels of features whose weights are set to attend to the adjacent token, to a sentence end,
or uniformly."""
import io
import json
import math
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs

import numpy as np
import pandas as pd
import pytest
import spacy
import torch
from streamlit.testing.v1 import AppTest

import disan
from disan import viz
from disan.data.text import Vocab
from disan.analyses import atlas
from disan.analyses import corpus
from disan.render import atlas as atlas_render
from disan.render.views import Drawing
from disan.inspect.pipeline import Pipeline
from disan.nn.heads import ModelConfig, TextModel
from disan.nn.model import DiSANConfig

from .conftest import LABELS, make_model
from .test_analysis_pages import models  # noqa: F401 (a fixture: tiny checkpoints named for benchmarks)
from .test_app import APP, app, assert_page_draws, charts, texts, visit

STEEP = 10.0  # logit slope of the set features: one step away costs c·tanh(10/c) = 4.8 of the logit


def positional_pipeline() -> Pipeline:
    """A DiSAN whose words say where they stand: word "w{n}x{p}" is position p of an n-token sentence,
    embedded (and, through an identity W_h, hidden) as h = [p, n - 1 - p, 1]. Feature 0 of the forward
    block attends to the previous token (logit 10 (p_i - p_j + 1), squashed by c·tanh(·/c)), feature 1
    to the first token (logit -10 p_i) and feature 2 uniformly (logit 0); the backward block mirrors
    them: the next token, the last token (logit -10 (n - 1 - p_i)), uniform."""
    words = [f"w{n}x{p}" for n in range(1, 9) for p in range(n)]
    vocab = Vocab.build([words])
    cfg = ModelConfig(vocab_size=len(vocab), n_classes=3, kind="classify", encoder="disan", d_fc=4,
                      encoder_cfg=DiSANConfig(d_e=3, d_h=3, dropout=0.0))
    model = TextModel(cfg).eval()
    with torch.no_grad():
        model.embed.weight.zero_()
        for word in words:
            n, p = (int(x) for x in word[1:].split("x"))
            model.embed.weight[vocab.stoi[word]] = torch.tensor([p, n - 1 - p, 1.0])
        fw, bw = model.encoder.blocks
        for block in (fw, bw):
            block.fc_h.linear.weight.copy_(torch.eye(3))
            block.fc_h.linear.bias.zero_()
            for w in (block.w1.weight, block.w2.weight, block.b1):
                w.zero_()
        fw.w1.weight[0, 0], fw.w2.weight[0, 0], fw.b1[0] = STEEP, -STEEP, STEEP   # previous token
        fw.w1.weight[1, 0] = -STEEP                                                # first token
        bw.w1.weight[0, 0], bw.w2.weight[0, 0], bw.b1[0] = -STEEP, STEEP, STEEP   # next token
        bw.w1.weight[1, 1] = -STEEP                                                # last token
    return Pipeline(model, vocab, {"labels": LABELS["classify"]}, {})


def positional_sentences(lengths=(2, 3, 5, 8, 4, 7, 6, 8, 3)) -> list[list[str]]:
    return [[f"w{n}x{p}" for p in range(n)] for n in lengths]


@pytest.fixture(scope="module")
def positional():
    pipe = positional_pipeline()
    return pipe, atlas.profile(pipe, positional_sentences(), "positions", k=3, min_count=1)


def test_set_features_are_labelled_by_distance_share_and_concentration(positional):
    _, result = positional
    table = result.table.set_index(["block", "feature"])
    for block, neighbour, end in (("forward", "previous", "first token"), ("backward", "next", "last token")):
        local, edge, flat = (table.loc[(block, k)] for k in range(3))
        assert local["share at distance 1"] > 0.9 and local["mean distance"] < 1.15
        assert local["entropy ÷ uniform"] < 0.3 and local["kind"] == "local"
        assert local["summary"].startswith("local: 9") and f"on the {neighbour} token" in local["summary"]
        assert edge[f"{end} share"] > 0.9 and edge["distance ÷ uniform"] > 1.2
        assert edge["share at distance 1"] < 0.5 and edge["kind"] == "sentence-end detector"
        assert f"{end} ×" in edge["summary"]
        # logits that are all equal give uniform attention exactly
        for measure in ("distance ÷ uniform", "share at distance 1 ÷ uniform", "entropy ÷ uniform",
                        f"{end} ÷ uniform"):
            assert flat[measure] == pytest.approx(1.0, abs=1e-5), measure
        assert flat["kind"] == "global"
    counts = atlas.kind_counts(result)
    assert counts.loc["forward", "local"] == 1 and counts.loc["backward", "sentence-end detector"] == 1


def test_sums_of_sentences_traced_apart_give_the_atlas_of_them_all():
    pipe = positional_pipeline()
    rng = np.random.default_rng(2)
    words = ["the", "Film", "film", "not", ",", "good", "a", "plot", "it", "is", "."]
    token_lists = [list(rng.choice(words, int(rng.integers(1, 9)))) for _ in range(40)]
    whole = atlas.sums(pipe, token_lists)
    # scattered parts, each traced in batches of its own, whose words first occur in other orders
    places = [np.sort(p) for p in np.array_split(rng.permutation(len(token_lists)), 3)]
    joined = atlas.joined_sums([(atlas.sums(pipe, [token_lists[i] for i in p]), p) for p in places])
    assert joined.words == whole.words and (joined.first == whole.first).all()
    assert (joined.counts == whole.counts).all() and (joined.lengths == whole.lengths).all()
    np.testing.assert_allclose(joined.word_received, whole.word_received, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(joined.sharpness, whole.sharpness, rtol=1e-5, atol=1e-6)
    a, b = (atlas.atlas_of(x, "mine", k=3, min_count=2) for x in (joined, whole))
    numeric = a.table.select_dtypes("number").columns
    pd.testing.assert_frame_equal(a.table[numeric], b.table[numeric], rtol=1e-5, atol=1e-7)
    assert a.words == b.words and list(a.table["top words by lift"]) == list(b.table["top words by lift"])
    with pytest.raises(ValueError, match="share"):
        atlas.joined_sums([(whole, range(40)), (whole, range(40))])
    with pytest.raises(ValueError, match="corpus order"):
        atlas.joined_sums([(whole, range(39, -1, -1))])


def test_the_atlas_analysis_adds_up_over_stages_and_types_a_stage_with_its_own_k():
    pipe = positional_pipeline()
    c = corpus.Corpus("positional", [" ".join(t) for t in positional_sentences()], positional_sentences(),
                      [""] * 9, [None] * 9)
    analysis = atlas.AtlasAnalysis(c)
    assert analysis.additive and analysis.total() == 9 and analysis.settings() == {"corpus": c.key}
    small, large = analysis.places(4), analysis.places(9)
    new = np.setdiff1d(large, small)
    grown = analysis.finish(analysis.join([(analysis.part(pipe, small), small), (analysis.part(pipe, new), new)]), 9)
    direct = atlas.profile(pipe, c.tokens, "positional")
    numeric = direct.table.select_dtypes("number").columns
    pd.testing.assert_frame_equal(grown.table[numeric], direct.table[numeric], rtol=1e-5, atol=1e-7)
    assert grown.corpus == "positional" and grown.silhouettes  # the whole corpus: k by silhouette
    stage = analysis.compute(pipe, 4)
    assert stage.corpus == "positional [4 of 9]" and stage.k == atlas.TYPES and not stage.silhouettes


def test_padded_batches_give_the_profiles_of_single_sentences(positional):
    pipe, batched = positional
    alone = atlas.profile(pipe, positional_sentences(), "positions", k=3, min_count=1, budget=1)  # one per batch
    numeric = batched.table.select_dtypes("number").columns
    pd.testing.assert_frame_equal(batched.table[numeric], alone.table[numeric], rtol=1e-5, atol=1e-7)
    assert np.allclose(batched.word_received, alone.word_received, rtol=1e-5, atol=1e-6)
    assert np.allclose(batched.sharpness, alone.sharpness, rtol=1e-5, atol=1e-6)


def test_mirrored_blocks_share_their_types(positional):
    _, result = positional
    table = result.table.set_index(["block", "feature"])["type"]
    assert all(table[("forward", k)] == table[("backward", k)] for k in range(3))
    assert len({table[("forward", k)] for k in range(3)}) == 3
    counts, alike = atlas.mirroring(result)
    assert alike == pytest.approx(1.0) and (counts.to_numpy() == 1).all()


@pytest.mark.quick
def test_search_ranks_the_feature_that_attends_to_the_word(positional):
    _, result = positional
    found = atlas.search(result, "first token", top=None)
    assert (found.loc[0, "block"], found.loc[0, "feature"]) == ("forward", 1)
    assert found.loc[0, "share"] > 0.9
    # "w8x7" is only ever the last token of the 8-token sentences
    found = atlas.search(result, "w8x7")
    assert (found.loc[0, "block"], found.loc[0, "feature"]) == ("backward", 1)
    with pytest.raises(ValueError, match="no word"):
        atlas.search(result, "absent")
    with pytest.raises(ValueError, match="has no negations"):
        atlas.search(result, "negations")


# ---------------------------------------------------------------- against a reference from single traces

STOP = spacy.blank("en").Defaults.stop_words
SENTENCES = ["the glass bottle is not big .", "a man is pouring tea , never the glass", "no", "the man is big ?",
             "nobody is about to close the restaurant", "the biker is pouring tea at the fountain"]


def reference(pipe, texts) -> dict[str, dict[str, np.ndarray]]:
    """Per block, every measure of every feature, computed query by query from ``pipe.trace`` of each
    sentence alone."""
    classes = {
        "stop words": lambda t, i, n: t.lower() in STOP,
        "punctuation": lambda t, i, n: t in {".", ",", "?", "!"},
        "negations": lambda t, i, n: t.lower() in {"not", "n't", "no", "never", "nothing", "nobody"},
        "first token": lambda t, i, n: i == 0,
        "last token": lambda t, i, n: i == n - 1,
        "content words": lambda t, i, n: t.lower() not in STOP and any(c.isalpha() for c in t),
        "sentence ends": lambda t, i, n: i in (0, n - 1),
    }
    out = {}
    for text in texts:
        sentence = pipe.trace(text).sentence
        tokens, n = sentence.tokens, len(sentence.tokens)
        for block in sentence.trace.blocks:
            acc = out.setdefault(block.name, {"q": 0, "tokens": 0, "gate": 0, "the": 0, "the_u": 0})
            probs, mask = block.probs.double().numpy(), block.mask.numpy()
            acc["gate"] = acc["gate"] + block.gate.double().numpy().sum(axis=0)
            acc["tokens"] += n
            for j in range(n):
                keys = np.flatnonzero(mask[j])
                if not len(keys):
                    continue
                acc["q"] += 1
                p, dist = probs[j, keys], np.abs(keys - j)
                sums = {"distance": ((p * dist[:, None]).sum(0), dist.mean()),
                        "adjacent": (p[dist == 1].sum(0), (dist == 1).mean()),
                        "entropy": (-(p * np.log(p)).sum(0), math.log(len(keys))),
                        "the": (p[[tokens[i] == "the" for i in keys]].sum(0),
                                np.mean([tokens[i] == "the" for i in keys]))}
                for name, member in classes.items():
                    chosen = np.array([member(tokens[i], i, n) for i in keys])
                    sums[name] = (p[chosen].sum(0), chosen.mean())
                for name, (got, uniform) in sums.items():
                    acc[name] = acc.get(name, 0) + got
                    acc[name + "_u"] = acc.get(name + "_u", 0) + uniform
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_profiles_equal_the_measures_of_each_sentence_traced_alone(seed):
    model, vocab = make_model("classify", "disan", seed)
    pipe = Pipeline(model, vocab, {"labels": LABELS["classify"]}, {})
    result = atlas.profile(pipe, [pipe.trace_sentence(s).tokens for s in SENTENCES], "mine", min_count=1)
    ref = reference(pipe, SENTENCES)
    for name, acc in ref.items():
        rows = result.table[result.table["block"] == name]
        q = acc["q"]
        expected = {"mean distance": acc["distance"] / q, "distance ÷ uniform": acc["distance"] / acc["distance_u"],
                    "share at distance 1": acc["adjacent"] / q,
                    "share at distance 1 ÷ uniform": acc["adjacent"] / acc["adjacent_u"],
                    "entropy (nats)": acc["entropy"] / q, "entropy ÷ uniform": acc["entropy"] / acc["entropy_u"],
                    "mean gate": acc["gate"] / acc["tokens"]}
        for cls in atlas.CLASSES:
            expected[f"{cls} share"] = acc[cls] / q
            expected[f"{cls} ÷ uniform"] = acc[cls] / acc[cls + "_u"] if acc[cls + "_u"] > 0 else np.full(5, np.nan)
        for measure, value in expected.items():
            np.testing.assert_allclose(rows[measure].to_numpy(), value, rtol=1e-5, atol=1e-7, err_msg=measure)
        found = atlas.search(result, "the", top=None)
        found = found[found["block"] == name].sort_values("feature")
        np.testing.assert_allclose(found["lift"].to_numpy(), acc["the"] / acc["the_u"], rtol=1e-5)


def test_top_words_need_the_minimum_count():
    model, vocab = make_model("classify", "disan", 0)
    pipe = Pipeline(model, vocab, {"labels": LABELS["classify"]}, {})
    tokens = [pipe.trace_sentence(s).tokens for s in SENTENCES]
    result = atlas.profile(pipe, tokens, "mine", min_count=4)
    words = {w for listed in result.top_words for w, _ in listed}
    counts = pd.Series([t.lower() for s in tokens for t in s]).value_counts()
    assert words and all(counts[w] >= 4 for w in words)
    frequent = [w for w, c in counts.items() if c >= 4]
    for row in (0, 7):  # forward k = 0, backward k = 2
        block, k = result.table.loc[row, ["block", "feature"]]
        lifts = {w: atlas.search(result, w, top=None).set_index(["block", "feature"]).loc[(block, k), "lift"]
                 for w in frequent}
        best = sorted(frequent, key=lambda w: -lifts[w])[:atlas.TOP_WORDS]
        assert [w for w, _ in result.top_words[row]] == best
        assert [lift for _, lift in result.top_words[row]] == pytest.approx([lifts[w] for w in best], rel=1e-5)


def test_the_table_downloads_as_csv_and_viz_returns_it_with_the_map():
    model, vocab = make_model("classify", "disan", 0)
    pipe = Pipeline(model, vocab, {"labels": LABELS["classify"]}, {})
    shown = viz.feature_atlas(pipe, SENTENCES, k=2)
    assert isinstance(shown.table, pd.DataFrame) and len(shown.table) == 2 * 5
    assert list(shown.table[["block", "feature"]].itertuples(index=False, name=None)) == \
        [(b, k) for b in ("forward", "backward") for k in range(5)]
    assert shown.table["type"].nunique() == 2
    fig = shown.figures["atlas-map"]
    assert sum(len(t.x) for t in fig.data) == 10 and len(fig.data) == 2  # one trace per type
    back = pd.read_csv(io.BytesIO(atlas.export_csv(shown.atlas)))
    assert (back["corpus"] == "the texts").all()
    for column in ("block", "feature", "type", "mean distance", "share at distance 1 ÷ uniform", "entropy ÷ uniform",
                   "negations ÷ uniform", "first token ÷ uniform", "mean gate", "top words by lift"):
        assert column in back.columns, column
    np.testing.assert_allclose(back["entropy (nats)"], shown.table["entropy (nats)"], rtol=1e-9)
    by_block = atlas_render.drawing(shown.atlas, atlas.overview(shown.atlas), "block").figures["atlas-map"]
    assert [t.name for t in by_block.data] == ["forward (5)", "backward (5)"]


def test_one_feature_is_explained_on_its_sharpest_sentences(positional):
    pipe, result = positional
    texts = [" ".join(s) for s in positional_sentences()]
    gain = result.sharpness[:, result.d + 0]  # backward, feature 0
    chosen = atlas.top_sentences(result, "backward", 0)
    lengths = np.array([len(s) for s in positional_sentences()])
    assert all(lengths[chosen] >= atlas.MIN_TOP_LENGTH)
    assert list(gain[chosen]) == sorted(gain[lengths >= atlas.MIN_TOP_LENGTH], reverse=True)[:len(chosen)]
    explained = atlas.explanation(pipe, result, texts, "backward", 0)
    assert explained.sentences == chosen
    shown = atlas_render.explained(explained)
    profile = shown["atlas-profile"].set_index("measure")
    assert profile.loc["share at distance 1", "this feature"] > 0.9
    heatmap = shown["atlas-sentence-0"].data[0]
    trace = pipe.trace_sentence(texts[chosen[0]]).trace.backward
    n = len(positional_sentences()[chosen[0]])
    mask = trace.mask.numpy()
    lift = np.where(mask, trace.probs[..., 0].numpy() * mask.sum(axis=1, keepdims=True), np.nan)  # masked: NaN
    np.testing.assert_allclose(np.asarray(heatmap.customdata, dtype=float), lift, rtol=1e-5)
    assert n == len(lift)
    with pytest.raises(ValueError, match="out of range"):
        atlas.explanation(pipe, result, texts, "backward", 3)


# ---------------------------------------------------------------- the page (AppTest)

PAGE = "app_pages/feature_atlas.py"
ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted(p.name for p in (ROOT / "checkpoints").iterdir() if (p / "config.json").is_file())


@pytest.mark.usefixtures("data_root")
def test_the_page_draws_the_library_view_and_links_to_the_feature(models, tmp_path):
    at = visit(app(), PAGE)
    trec = corpus.benchmark_corpus("trec", "test")
    result = atlas.profile(disan.load(tmp_path / "a-trec"), trec.tokens, trec.name)
    block, feature = at.selectbox(key="_atlas-block").value, at.selectbox(key="_atlas-feature").value
    first = result.table[result.table["block"] == block].sort_values("entropy ÷ uniform", kind="stable")
    assert (block, feature) == ("forward", first["feature"].iloc[0])  # the sharpest feature first
    pipe = disan.load(tmp_path / "a-trec")
    for block, feature in (("forward", feature), ("backward", 3)):
        at.selectbox(key="_atlas-block").set_value(block).run()
        at.selectbox(key="_atlas-feature").set_value(feature).run()
        selected = result.blocks.index(block) * result.d + feature
        shown = (atlas_render.drawing(result, atlas.overview(result), "type", selected).rows
                 + atlas_render.explained(atlas.explanation(pipe, result, trec.texts, block, feature)).rows)
        assert_page_draws(at, Drawing(shown))
    link = at.get("link_button")[0].proto.url
    assert link.startswith("./?")
    params = parse_qs(link[3:])
    assert params == {"model": ["a-trec"], "feature": ["3"],
                      "text": [trec.texts[atlas.top_sentences(result, "backward", 3)[0]]]}
    assert "trec test has no negations" in texts(at.info)  # the default search: TREC's questions have none
    at.text_input(key="_atlas-search").set_value("what, how").run()
    expected = atlas.search(result, "what, how")
    searched = [d.value for d in at.dataframe if list(d.value.columns) == list(expected.columns)]
    assert len(searched) == 1
    pd.testing.assert_frame_equal(searched[0].reset_index(drop=True), expected)
    at.number_input(key="_atlas-n").set_value(50).run()
    assert "50 sentences" in texts(at.caption)


def test_a_link_with_a_feature_opens_the_attention_page_on_it(models):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(model="a-trec", text="the glass bottle is big", feature="3")
    at.run()
    assert not at.exception and not at.warning
    assert at.radio(key="_attention-mode").value == "one feature" and at.selectbox(key="_attention-k-sentence").value == 3
    assert at.pills(key="_attention-query-sentence").options[:2] == ["the", "glass"]
    assert any("k = 3" in json.loads(c.proto.spec)["layout"]["title"]["text"] for c in charts(at).values())
    for feature, message, mode in (("9", "features 0 to 4", "one feature"), ("x1", "not a feature number", "mean")):
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params.update(model="a-trec", feature=feature)
        at.run()
        assert not at.exception and message in texts(at.warning)
        assert at.radio(key="_attention-mode").value == mode and len(charts(at)) == 5


@pytest.mark.usefixtures("data_root")
@pytest.mark.parametrize("name", SHIPPED)
def test_the_page_renders_with_its_defaults_on_every_shipped_checkpoint(name, monkeypatch):
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(ROOT / "checkpoints"))
    at = app(checkpoint=name)
    at.switch_page(PAGE)
    at.run(timeout=300)  # 2,000 sentences, on a machine that may be busy
    assert not at.exception, at.exception
    assert {"atlas-map", "atlas-sentence-0"} <= set(charts(at))
    task = json.loads((ROOT / "checkpoints" / name / "config.json").read_text())["task"]
    sentences = min(corpus.SAMPLE_SENTENCES, len(corpus.benchmark_corpus(task, "test")))
    assert f"{sentences} sentences" in texts(at.caption) and "600 features" in texts(at.caption)


def test_the_map_rings_the_selected_feature_and_names_it(positional):
    _, result = positional
    fig = atlas_render.feature_map(result, atlas.overview(result), "kind", selected=result.d + 1)
    ring = fig.data[-1]
    assert ring.name == "selected: backward k = 1"
    assert (ring.x[0], ring.y[0]) == tuple(result.table[["pc1", "pc2"]].iloc[result.d + 1])
    assert "backward k=1" in ring.hovertext[0] and "last token ×" in ring.hovertext[0]
    assert {t.name for t in fig.data[:-1]} == {"local (2)", "sentence-end detector (2)", "global (2)"}


def test_blocks_without_directions_are_profiled_and_a_baseline_gets_a_message(models):
    model, vocab = make_model("classify", "disan-nodir", 0)
    pipe = Pipeline(model, vocab, {"labels": LABELS["classify"]}, {})
    result = atlas.profile(pipe, [pipe.trace_sentence(s).tokens for s in SENTENCES], "mine")
    assert result.blocks == ["diag 1", "diag 2"] and len(result.table) == 10
    # a diag block reaches both ends: the first and the last token are both some query's keys
    assert result.table[["first token ÷ uniform", "last token ÷ uniform"]].notna().all().all()
    assert np.isfinite(atlas.mirroring(result)[1])
    models("f-bilstm", encoder="bilstm")
    at = visit(app(checkpoint="f-bilstm"), PAGE)
    assert "has no DiSA blocks" in texts(at.info)
    with pytest.raises(ValueError, match="no DiSA blocks"):
        atlas.profile(Pipeline(*make_model("classify", "bilstm", 0), {"labels": LABELS["classify"]}, {}),
                      [["the", "glass"]])


@pytest.mark.quick
def test_a_feature_is_titled_by_its_own_profile_and_its_type_is_context():
    table = pd.DataFrame({"block": ["forward"] * 4, "feature": range(4), "type": ["3 · negation detector (x)"] * 3
                          + ["1 · local"], "kind": ["negation detector", "negation detector", "global", "other"]})
    shown = SimpleNamespace(table=table)
    assert atlas.type_context(shown, "3 · negation detector (x)") == "type 3: 2 of 3 are negation detectors"
    assert atlas.type_context(shown, "1 · local") == "type 1: 1 of 1 follow no rule"
    assert atlas_render.kind_words("global") == "global" and atlas_render.kind_words("other") == "follows no rule"
