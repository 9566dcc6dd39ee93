"""The analyses library (disan.analyses) and their drawings (disan.render): statistics, measures, corpus senses,
counterfactuals, attribution, model comparison and the case study, on tiny models and hand-made inputs."""
import io
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from disan.data import batching
from disan.data.files import DataError
from disan.data.text import UNK
from disan.render import casestudy as case_render
from disan.render import compare as compare_render
from disan.render import corpus as corpus_render
from disan.render import counterfactual as cf_render
from disan.render import views
from disan.analyses import attribution, casestudy, compare, corpus, gradients, stats
from disan.render.attribution import corpus_drawing
from disan.analyses import counterfactual as cf
from disan.inspect import batched, senses
from disan.inspect.measures import received, received_lift, word_class
from disan.inspect.pipeline import Pipeline

from .conftest import LABELS, make_model

TEXT = "the glass bottle is big"
PAIR = ("a man is pouring tea", "the man is drinking")


def pipeline(kind="classify", encoder="disan", seed=0) -> Pipeline:
    model, vocab = make_model(kind, encoder, seed)
    return Pipeline(model, vocab, {"labels": LABELS[kind]}, {})


# ---------------------------------------------------------------- statistics

def test_pca_finds_the_direction_of_largest_variance():
    rng = np.random.default_rng(0)
    direction = np.array([3.0, 4.0, 0.0]) / 5
    t = rng.normal(size=200)
    points = t[:, None] * direction * 10 + rng.normal(scale=0.1, size=(200, 3)) + 7
    p = stats.pca_2d(points)
    assert p.explained[0] > 0.99 and p.explained.sum() <= 1 + 1e-12
    assert abs(np.corrcoef(p.coords[:, 0], t)[0, 1]) > 0.999
    on_a_line = stats.pca_2d(np.outer(np.arange(5.0), [1.0, 2.0]))
    np.testing.assert_allclose(on_a_line.explained, [1.0, 0.0], atol=1e-12)


@pytest.mark.parametrize("n, d", [(12, 30), (200, 6)])  # fewer points than dimensions, and more
def test_pca_is_the_svd_of_the_centred_points_with_the_largest_loading_positive(n, d):
    rng = np.random.default_rng(n)
    points = rng.normal(size=(n, d)) * np.linspace(3.0, 0.5, d) + 2.0
    centred = points - points.mean(axis=0)
    _, sing, vt = np.linalg.svd(centred, full_matrices=False)
    vt = vt[:2] * np.sign(vt[:2][np.arange(2), np.abs(vt[:2]).argmax(axis=1)])[:, None]
    p = stats.pca_2d(points)
    np.testing.assert_allclose(p.components, vt, atol=1e-10)
    np.testing.assert_allclose(p.coords, centred @ vt.T, atol=1e-10)
    np.testing.assert_allclose(p.explained, sing[:2] ** 2 / (sing ** 2).sum(), rtol=1e-10)


def test_pca_of_too_few_points_gives_zeros_for_the_components_they_lack():
    two = stats.pca_2d(np.array([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]]))  # one direction: (3, 4, 0) / 5
    np.testing.assert_allclose(two.components, [[0.6, 0.8, 0.0], [0.0, 0.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(two.coords, [[-2.5, 0.0], [2.5, 0.0]], atol=1e-12)
    np.testing.assert_allclose(two.explained, [1.0, 0.0], atol=1e-12)
    for points in (np.ones((4, 3)), np.ones((1, 3))):  # no spread at all: nothing explained, no 0 / 0
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            p = stats.pca_2d(points)
        assert (p.explained == 0).all() and (p.coords == 0).all()


def blobs(sizes=(40, 30, 20), spread=0.3, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0, 10.0], [10.0, 0.0, 0.0], [0.0, 10.0, 0.0]])
    points = np.concatenate([c + rng.normal(scale=spread, size=(n, 3)) for c, n in zip(centres, sizes)])
    return points, np.repeat(np.arange(len(sizes)), sizes)


def test_kmeans_recovers_separated_blobs_numbered_by_size():
    points, truth = blobs()
    order = np.random.default_rng(1).permutation(len(points))
    labels = stats.kmeans(points[order], 3)
    assert np.array_equal(labels, truth[order])  # the largest blob is cluster 0, the smallest 2


def test_kmeans_numbers_clusters_of_equal_size_by_their_first_point():
    points, truth = blobs(sizes=(25, 25, 25))
    for first in range(3):  # the blob whose point comes first is cluster 0, whatever the seed
        order = np.argsort((truth - first) % 3 + np.random.default_rng(first).random(75) * 2.5, kind="stable")
        expected = np.unique(truth[order], return_index=True)[1].argsort().argsort()[truth[order]]
        for seed in range(4):
            assert np.array_equal(stats.kmeans(points[order], 3, seed=seed), expected), (first, seed)


def test_the_silhouette_picks_the_number_of_blobs():
    points, truth = blobs()
    k, scores = stats.best_k(points, range(2, 7))
    assert k == 3 and scores[3] > 0.9 and all(s < scores[3] for kk, s in scores.items() if kk != 3)


def test_silhouette_by_hand():
    # 1-D points 0 and 1 together, 10 alone: (10 - 1) / 10, (9 - 1) / 9, and 0 for the lone point
    score = stats.silhouette(np.array([[0.0], [1.0], [10.0]]), np.array([0, 0, 1]))
    assert score == pytest.approx((0.9 + 8 / 9 + 0.0) / 3)
    assert np.isnan(stats.silhouette(np.array([[0.0], [1.0]]), np.array([0, 0])))


def overlapping_clusters(n=400, d=12, k=6, seed=0):
    """Points around k centres close enough that Lloyd's algorithm has local minima to fall in."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=1.5, size=(k, d))
    return centres[rng.integers(k, size=n)] + rng.normal(size=(n, d))


def test_the_silhouette_is_scikit_learns():
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(3)
    points = overlapping_clusters()
    for k in (2, 3, 7):
        labels = rng.integers(k, size=len(points))
        labels[:2] = [k, k + 1]  # two clusters of one point, which score 0
        assert stats.silhouette(points, labels) == pytest.approx(silhouette_score(points, labels), abs=1e-12)
    _, scores = stats.best_k(points, range(2, 6))  # one distance matrix for every k
    for k, score in scores.items():
        assert score == pytest.approx(silhouette_score(points, stats.kmeans(points, k)), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_kmeans_ends_where_lloyds_algorithm_stops_and_as_low_as_scikit_learns(seed):
    from sklearn.cluster import KMeans

    points = overlapping_clusters(seed=seed)
    for k in range(2, 9):
        labels = stats.kmeans(points, k, seed=seed)
        centres = np.stack([points[labels == c].mean(axis=0) for c in range(k)])
        distances = ((points[:, None, :] - centres[None]) ** 2).sum(axis=2)
        assert np.array_equal(distances.argmin(axis=1), labels)  # a fixed point: each point at its nearest mean
        inertia = distances[np.arange(len(points)), labels].sum()
        theirs = KMeans(k, n_init=stats.RESTARTS, tol=0.0, random_state=seed).fit(points).inertia_
        assert inertia <= theirs * 1.005, (k, inertia, theirs)  # both keep the best of 10 local minima


def test_the_clustering_and_projection_do_not_import_scikit_learn():
    """scikit-learn's import (seconds) was the largest cost of a fresh server's first Corpus senses figure."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys\nimport numpy as np\nfrom disan.analyses import stats\n"
            "x = np.random.default_rng(0).normal(size=(30, 4))\n"
            "stats.best_k(x); stats.kmeans(x, 3); stats.pca_2d(x)\n"
            "print('sklearn' in sys.modules, 'scipy' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


def test_kendall_tau_b_by_hand():
    assert stats.kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert stats.kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # five concordant pairs, one tied in x, none discordant: 5 / sqrt(5 * 6)
    assert stats.kendall_tau([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(5 / np.sqrt(30))
    assert stats.kendall_tau([1, np.nan, 2, 3], [3, 0, 2, 1]) == pytest.approx(-1.0)  # the NaN pair is left out
    assert np.isnan(stats.kendall_tau([1, 1, 1], [1, 2, 3]))


def test_gini_by_hand():
    assert stats.gini([2, 2, 2, 2]) == pytest.approx(0.0)
    assert stats.gini([0, 0, 0, 4]) == pytest.approx(0.75)
    assert stats.gini([1, 3]) == pytest.approx(0.25)  # |1 - 3| * 2 / (2 * 2 * 4)
    np.testing.assert_allclose(stats.gini(np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 4.0]])), [0.0, 2 / 3])
    assert np.isnan(stats.gini([0, 0]))


def test_the_cluster_bootstrap_covers_a_known_mean():
    rng = np.random.default_rng(3)
    values = rng.normal(loc=2.0, scale=1.0, size=400)
    est = stats.cluster_bootstrap(np.column_stack([values, np.ones(400)]), lambda t: t[..., 0] / t[..., 1])
    assert est.value == pytest.approx(values.mean())
    half_width = 1.96 / np.sqrt(400)
    assert est.low < 2.0 < est.high
    assert est.high - est.low == pytest.approx(2 * half_width, rel=0.25)
    # clusters of unequal size: the statistic is the ratio of the sums, not the mean of the ratios
    sums = np.array([[1.0, 1.0], [9.0, 3.0]])
    assert stats.cluster_bootstrap(sums, lambda t: t[..., 0] / t[..., 1]).value == pytest.approx(10 / 4)


# ---------------------------------------------------------------- measures

def uniform_probs(mask: torch.Tensor, d: int = 2) -> torch.Tensor:
    """Uniform attention over each query's allowed keys, (n, n, d)."""
    m = mask.double()
    return (m / m.sum(-1, keepdim=True).clamp_min(1))[..., None].expand(-1, -1, d)


def test_uniform_attention_receives_exactly_its_uniform_share():
    mask = torch.tril(torch.ones(5, 5, dtype=torch.bool), -1)  # forward
    rel = received_lift(uniform_probs(mask), mask)
    np.testing.assert_allclose(rel[:-1], 1.0)
    assert np.isnan(rel[-1])  # no query may attend the last token


def test_received_attention_by_hand():
    mask = torch.tril(torch.ones(3, 3, dtype=torch.bool), -1)
    probs = torch.zeros(3, 3, 2, dtype=torch.float64)
    probs[1, 0] = probs[2, 0] = 1.0  # every query puts everything on token 0
    got, uniform = received(probs, mask)
    np.testing.assert_allclose(got.numpy(), [2.0, 0.0, 0.0])
    np.testing.assert_allclose(uniform.numpy(), [1.5, 0.5, 0.0])  # query 1: one key; query 2: two keys
    rel = received_lift(probs, mask)
    np.testing.assert_allclose(rel[:2], [4 / 3, 0.0])


def test_word_classes():
    assert [word_class(t) for t in ["The", "of", "n't", "carousel", "Dogs", ",", "42", "--"]] == \
        ["stop", "stop", "stop", "content", "content", "other", "other", "other"]


# ---------------------------------------------------------------- batching and token vectors

def test_length_batches_keep_every_sentence_once_within_the_budget():
    lengths = [3, 30, 5, 5, 12, 1, 30, 7] * 5
    batches = batching.length_batches(lengths, max_batch=4, budget=4 * 10 * 10)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)
    for b in batches:
        longest = max(lengths[i] for i in b)
        assert len(b) <= 4 and (len(b) == 1 or len(b) * longest ** 2 <= 400)


@pytest.mark.parametrize("kind", ["source2token", "output", "s"])
def test_token_vectors_from_the_fast_path_equal_the_trace(kind):
    pipe = pipeline()
    token_lists = [["the", "glass", "bottle", "is", "big"], ["a", "man"], ["tea", "of", "the", "restaurant"]]
    places = [(0, 1), (2, 3), (1, 0), (0, 4), (2, 0)]
    vectors = batched.token_vectors(pipe, token_lists, places, kind)
    for row, (s, p) in enumerate(places):
        tr = pipe.trace_tokens(token_lists[s]).trace
        if kind == "source2token":
            expected = tr.source2token.probs[p]
        else:
            expected = torch.cat([getattr(b, "u" if kind == "output" else "s")[p] for b in tr.blocks])
        np.testing.assert_allclose(vectors[row], expected.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("encoder, kinds", [("disan", ["source2token", "output", "s"]), ("bilstm", ["source2token"]),
                                            ("additive", [])])
def test_vector_kinds_follow_the_encoder_and_agree_with_its_trace(encoder, kinds):
    # one rule for Word senses (from a trace) and Corpus senses (from the pipeline): the additive
    # encoder's one weight per token is no vector, so neither page offers source2token vectors for it
    pipe = pipeline(encoder=encoder)
    assert pipe.vector_kinds == kinds
    assert senses.vector_kinds(pipe.trace_sentence("the glass is big").trace) == kinds
    if not kinds:
        with pytest.raises(ValueError, match="no 'source2token' vectors"):
            batched.token_vectors(pipe, [["the", "glass"]], [(0, 1)], "source2token")


# ---------------------------------------------------------------- corpus senses

def test_an_uploaded_text_file_is_one_sentence_per_line():
    data = "\ufeffthe glass bottle\r\n\r\n   \nA man is pouring tea\ncafé au lait".encode("utf-8")
    c = corpus.uploaded_corpus(data, "mine.txt")
    assert c.texts == ["the glass bottle", "A man is pouring tea", "café au lait"] and c.skipped == 2  # blank lines
    assert c.tokens[1] == ["A", "man", "is", "pouring", "tea"] and c.labels == ["", "", ""]
    with pytest.raises(DataError, match=r"^mine.txt: line 6 is not UTF-8 \(byte 0xe9 at character 4\)"):
        corpus.uploaded_corpus(data + b"\ncaf\xe9 au lait\n", "mine.txt")  # a Windows-1252 line: no fallback


def test_an_uploaded_csv_uses_its_text_and_label_columns():
    c = corpus.uploaded_corpus(b'id,Sentence,label\n1,"the glass, big",pos\n2,a man,neg\n3,,neg\n', "x.csv")
    assert c.texts == ["the glass, big", "a man"] and c.labels == ["pos", "neg"] and c.skipped == 1
    plain = corpus.uploaded_corpus(b"the glass bottle,1\na man,2\n", "y.CSV")
    assert plain.texts == ["the glass bottle", "a man"]
    too_long = corpus.uploaded_corpus(("word " * 300 + "\nshort one\n").encode(), "z.txt")
    assert too_long.texts == ["short one"] and too_long.skipped == 1


def test_occurrences_are_found_case_blind_up_to_the_limit():
    c = corpus.make_corpus("t", ["The glass and the bottle", "no match", "THE end"])
    assert corpus.occurrences(c, "the") == [(0, 0), (0, 3), (2, 0)]
    assert corpus.occurrences(c, "The", limit=2) == [(0, 0), (0, 3)]
    counted = corpus.make_corpus("u", ["the glass and the glass", "a bottle , 42", "the big glass"])
    assert corpus.frequent_words(counted) == ["glass", "bottle", "big"]  # no stop word, number or punctuation


def test_corpus_senses_project_cluster_and_find_neighbours():
    texts = [f"the glass {w} is big" for w in ("bottle", "tea", "man", "restaurant")] * 3 + ["a glass of tea"]
    c = corpus.make_corpus("t", texts, labels=["x", "y"] * 6 + ["y"])
    pipe = pipeline()
    result = corpus.analyse(pipe, c, "Glass", "output", k=2)
    table = result.table
    assert len(table) == 13 and set(table.cluster) == {0, 1} and result.k == 2
    assert (table.position == [1] * 12 + [1]).all() and list(table.label[:2]) == ["x", "y"]
    # the same sentence gives the same vector, so repeated sentences are each other's nearest neighbours
    near = corpus.neighbours(result, 0, top=3)
    assert 0 not in set(near.occurrence) and near.cosine.is_monotonic_decreasing
    assert set(near.occurrence[:2]) == {4, 8} and near.cosine[0] == pytest.approx(1.0, abs=1e-6)
    picked = corpus.analyse(pipe, c, "glass", "output")
    assert picked.silhouettes and picked.k == max(picked.silhouettes, key=picked.silhouettes.get)
    exported = pd.read_csv(io.BytesIO(corpus.export_csv(result)))
    assert len(exported) == 13 and set(exported.word) == {"glass"} and "context" in exported
    with pytest.raises(ValueError, match="occurs 0 time"):
        corpus.analyse(pipe, c, "fountain", "output")


def test_a_stage_of_corpus_senses_takes_the_first_occurrences():
    texts = [f"the glass {w} is big" for w in ("bottle", "tea", "man", "restaurant")] * 3
    c = corpus.make_corpus("t", texts)
    analysis = corpus.SensesAnalysis(c, "glass", "output", None)
    assert analysis.total() == 12 and list(analysis.places(5)) == [0, 1, 2, 3, 4]
    stage = analysis.compute(pipeline(), 5)
    assert list(stage.table.sentence) == [0, 1, 2, 3, 4] and stage.k == corpus.CLUSTERS and not stage.silhouettes
    whole = analysis.compute(pipeline(), 12)
    assert whole.silhouettes and len(whole.table) == 12  # the whole: k by silhouette
    assert corpus.SensesAnalysis(c, "glass", "output", 2).compute(pipeline(), 5).k == 2


@pytest.mark.quick
def test_ordinal_labels_are_coloured_in_their_order_and_tiny_clusters_are_flagged():
    scale = ["very negative", "negative", "neutral", "positive", "very positive"]
    texts = [f"the glass {w} is big" for w in ("bottle", "tea", "man")] * 2
    labels = ["very positive", "negative", "very negative"] * 2
    c = corpus.make_corpus("t", texts, labels=labels)
    c.scale = scale
    result = corpus.analyse(pipeline(), corpus.sample(c, 6), "glass", "output", k=3)  # 6 occurrences, 3 clusters
    by_label = corpus_render.drawing(result, "label")
    scatter = by_label["corpus-scatter"]
    # SVG markers, not WebGL: a browser without a GPU draws them in a tenth of the time
    assert {t.type for t in scatter.data} == {"scatter"}
    # the legend in the labels' order, not alphabetical, and colours along one red-to-blue scale
    assert [t.name.split(" (")[0] for t in scatter.data] == ["very negative", "negative", "very positive"]
    red = [int(x) for x in scatter.data[0].marker.color[4:-1].split(",")]
    blue = [int(x) for x in scatter.data[-1].marker.color[4:-1].split(",")]
    assert red[0] > red[2] and blue[2] > blue[0]
    note = by_label["corpus-small-clusters"].text
    assert "6 occurrences in 3 clusters" in note and f"fewer than {corpus_render.SMALLEST_CLUSTER}" in note
    c.scale = None  # labels without an order keep the categorical palette, sorted
    plain = corpus_render.drawing(corpus.analyse(pipeline(), c, "glass", "output", k=2), "label")["corpus-scatter"]
    assert [t.name.split(" (")[0] for t in plain.data] == sorted(set(labels))
    big = corpus.make_corpus("t", texts * 4)
    assert "corpus-small-clusters" not in corpus_render.drawing(corpus.analyse(pipeline(), big, "glass", "output", k=2))


def test_a_corpus_sample_is_seeded_and_in_order():
    c = corpus.make_corpus("t", [f"sentence {i}" for i in range(50)])
    a, b = corpus.sample(c, 10, seed=1), corpus.sample(c, 10, seed=1)
    assert a.texts == b.texts and len(a) == 10
    assert a.texts == sorted(a.texts, key=lambda t: int(t.split()[1]))
    assert corpus.sample(c, 100) is c


def test_a_pair_benchmark_gives_both_sentences_with_the_label(data_root):
    c = corpus.benchmark_corpus("sick-e", "test")
    assert len(c) == 2 * 4927 and c.pairs[0] == (c.texts[0], c.texts[1])
    assert set(c.labels) == {"entailment", "neutral", "contradiction"}


# ---------------------------------------------------------------- counterfactuals

@pytest.mark.quick
def test_edits_and_their_alignment():
    tokens = ["the", "glass", "bottle", "is", "big"]
    assert cf.edit(tokens, "delete", 1) == ["the", "bottle", "is", "big"]
    assert cf.edit(tokens, "mask", 1) == ["the", UNK, "bottle", "is", "big"]
    assert cf.edit(tokens, "replace", 4, "very small") == ["the", "glass", "bottle", "is", "very", "small"]
    with pytest.raises(ValueError):
        cf.edit(["one"], "delete", 0)
    with pytest.raises(ValueError):
        cf.edit(tokens, "replace", 0, "  ")
    assert cf.align(tokens, cf.edit(tokens, "delete", 1)) == ([0, 2, 3, 4], [0, 1, 2, 3])
    assert cf.align(tokens, cf.edit(tokens, "replace", 4, "very small")) == ([0, 1, 2, 3], [0, 1, 2, 3])


def test_an_edit_predicts_as_the_edited_sentence_does():
    pipe = pipeline()
    s = pipe.trace(TEXT).sentence
    edited = cf.edit(s.tokens, "replace", 2, "tea")
    result = cf.compare_edit(pipe, [s], 0, edited)
    expected = pipe.predict([" ".join(edited)])[0].probs
    assert result.prediction_after.probs == pytest.approx(expected, abs=1e-6)
    assert result.prediction_before.probs == pytest.approx(pipe.predict([TEXT])[0].probs, abs=1e-6)
    assert result.aligned.tokens == ["the", "glass", "is", "big"] and result.aligned.positions == [0, 1, 3, 4]
    before, after = result.aligned.attention["forward"]
    # forward attention of the queries before the edit cannot change: they never see the edited token
    np.testing.assert_array_equal(before[:2], after[:2])



@pytest.mark.quick
def test_an_edit_is_drawn_as_its_predictions_and_the_attention_of_the_tokens_both_sentences_share():
    pipe = pipeline()
    s = pipe.trace(TEXT).sentence
    result = cf.compare_edit(pipe, [s], 0, cf.edit(s.tokens, "delete", 2))
    drawing = cf_render.edit_drawing(pipe.kind, result)
    bars = drawing["cf-edit-prediction"]
    # the two predictions side by side, each the probabilities the model gives its sentence
    assert [list(trace.x) for trace in bars.data] == [list(result.prediction_before.probs.values()),
                                                      list(result.prediction_after.probs.values())]
    # the heatmaps show only the tokens both sentences have, in their order
    heat = drawing["cf-edit-forward"].data[0]
    assert [label.split(": ", 1)[1] for label in heat.x] == result.aligned.tokens == ["the", "glass", "is", "big"]
    before, after = result.aligned.attention["forward"]
    shown = np.asarray(heat.z, dtype=float)
    drawn = np.isfinite(shown)
    np.testing.assert_allclose(shown[drawn], (after - before)[drawn], atol=1e-6)  # red where it grew after the edit

def test_occlusion_drops_each_token_and_sorts_by_change():
    pipe = pipeline()
    s = pipe.trace(TEXT).sentence
    table = cf.occlusion(pipe, [s], 0)
    label = pipe.predict([TEXT])[0].label
    base = pipe.predict([TEXT])[0].probs[label]
    assert sorted(table.position) == list(range(5)) and table.change.is_monotonic_increasing
    for row in table.itertuples():
        without = " ".join(t for k, t in enumerate(s.tokens) if k != row.position)
        assert row.without == pytest.approx(pipe.predict([without])[0].probs[label], abs=1e-6)
        assert row.change == pytest.approx(row.without - base, abs=1e-6)


def test_occlusion_of_a_hypothesis_keeps_the_premise():
    pipe = pipeline("pair")
    result = pipe.trace(PAIR)
    table = cf.occlusion(pipe, result.sentences, 1)
    label = result.prediction.label
    first = table.iloc[0]
    hypothesis = " ".join(t for k, t in enumerate(result.hypothesis.tokens) if k != first.position)
    assert first.without == pytest.approx(pipe.predict([(PAIR[0], hypothesis)])[0].probs[label], abs=1e-6)


def test_a_knockout_zeroes_the_chosen_edges_of_the_chosen_blocks():
    pipe = pipeline()
    s = pipe.trace(TEXT).sentence
    result = cf.knockout(pipe, [s], 0, ["forward"], keys=[1], queries=[3, 4])
    fw, bw = result.after.trace.forward, result.after.trace.backward
    assert torch.count_nonzero(fw.probs[[3, 4], 1]) == 0 and fw.probs[2, 1].min() > 0
    torch.testing.assert_close(fw.probs[3].sum(0), torch.ones(fw.probs.shape[-1]))
    assert torch.equal(bw.probs, s.trace.backward.probs)
    assert result.prediction_after.probs != result.prediction_before.probs
    everything = cf.knockout(pipe, [s], 0, ["forward", "backward"], keys=[2])
    assert torch.count_nonzero(everything.after.trace.forward.probs[:, 2]) == 0
    assert torch.count_nonzero(everything.after.trace.backward.probs[:, 2]) == 0
    with pytest.raises(ValueError):
        cf.knockout(pipe, [s], 0, ["forward"], keys=[])


# ---------------------------------------------------------------- attribution

def baseline_output(pipe, sentences, label: str | None) -> float:
    """The followed output with every word vector zero, computed here from the model's parts."""
    model = pipe.model
    with torch.no_grad():
        encodings = []
        for s in sentences:
            ids = pipe.ids([s.tokens])
            encodings.append(model.encoder(torch.zeros_like(model.embed(ids)), ids != 0))
        logits = model.head(*encodings)[0]
    if label is None:
        return float(logits.softmax(-1) @ torch.arange(1.0, len(logits) + 1))
    return float(logits.softmax(-1)[pipe.labels.index(label)])


@pytest.mark.parametrize("kind,text", [("classify", TEXT), ("pair", PAIR), ("relatedness", PAIR)])
def test_integrated_gradients_are_complete_within_five_percent(kind, text):
    pipe = pipeline(kind, seed=3)
    result = pipe.trace(text)
    attr = gradients.attribute(pipe, result.sentences)
    pred = pipe.predict([text])[0]
    label = None if kind == "relatedness" else pred.label
    f_x = pred.score if label is None else pred.probs[label]
    delta = f_x - baseline_output(pipe, result.sentences, label)
    assert abs(delta) > 1e-3  # the check below means something
    total = sum(a.sum() for a in attr.integrated)
    assert abs(total - delta) <= 0.05 * abs(delta)
    assert [len(a) for a in attr.integrated] == [len(s.tokens) for s in result.sentences]


def test_integrated_gradients_are_complete_on_a_trained_checkpoint():
    import disan
    pipe = disan.load("checkpoints/sst5")
    result = pipe.trace("Families have some dogs in front of a carousel")
    attr = gradients.attribute(pipe, result.sentences)
    delta = result.prediction.probs[result.prediction.label] - baseline_output(pipe, result.sentences,
                                                                                result.prediction.label)
    assert abs(delta) > 1e-3 and abs(attr.integrated[0].sum() - delta) <= 0.05 * abs(delta)


def test_gradient_times_input_sums_to_the_derivative_along_the_input():
    model, vocab = make_model()
    model.double()
    pipe = Pipeline(model, vocab, {"labels": LABELS["classify"]}, {})
    s = pipe.trace(TEXT).sentence
    attr = gradients.attribute(pipe, [s])
    target = pipe.labels.index(attr.target)
    ids = pipe.ids([s.tokens])

    def f(scale):
        with torch.no_grad():
            return float(model.head(model.encoder(scale * model.embed(ids), ids != 0)).softmax(-1)[0, target])
    eps = 1e-5
    derivative = (f(1 + eps) - f(1 - eps)) / (2 * eps)  # d/dt f(t x) at t = 1 is the sum of (df/dx_i) . x_i
    assert attr.gradient_input[0].sum() == pytest.approx(derivative, rel=1e-4, abs=1e-9)


def test_agreement_is_kendall_tau_of_the_signed_scores():
    # the ranking rule: evidence against the output (−2) ranks last, below the weaker evidence for it (1);
    # by magnitude the attribution would rank as "up" does (τ 1) and against "down" (τ −1)
    measures = pd.DataFrame({"up": [0.5, 0.3, 0.1], "down": [0.1, 0.3, 0.5]})
    table = attribution.agreement({"signed": np.array([3.0, -2.0, 1.0])}, measures)
    assert table.loc["signed", "up"] == pytest.approx(1 / 3) and table.loc["signed", "down"] == pytest.approx(-1 / 3)


def test_attention_measures_of_a_trace():
    s = pipeline().trace(TEXT).sentence
    m = attribution.attention_measures(s)
    assert list(m.columns) == ["source2token", "received · forward", "received · backward"]
    assert m["source2token"].sum() == pytest.approx(1.0)
    assert np.isnan(m["received · forward"].iloc[-1]) and np.isnan(m["received · backward"].iloc[0])


def test_corpus_agreement_has_a_row_per_sentence():
    pipe = pipeline("pair")
    frame = attribution.corpus_agreement(pipe, [PAIR, ("a man", ""), ("tea", "the glass")], steps=8)
    assert len(frame) == 4  # the pair with an empty hypothesis cannot be traced
    assert list(frame.sentence[:2]) == list(PAIR) and list(frame.input) == [0, 0, 2, 2]
    assert corpus_drawing(attribution.summarised(frame)).rows[0].title == "Over 2 test inputs: 4 sentences"
    assert {f"{m} | source2token" for m in attribution.METHODS} <= set(frame.columns)
    # both sentences of an input share its integrated gradients' completeness gap
    gap = abs(gradients.attribute(pipe, pipe.trace(PAIR).sentences, 8).completeness_gap)
    assert list(frame[attribution.GAP][:2]) == [gap, gap]


# ---------------------------------------------------------------- comparison

def side(encoder, text=TEXT, name=None):
    pipe = pipeline(encoder=encoder)
    r = pipe.trace(text)
    return compare.Side(name or encoder, encoder, r.prediction, r.sentence)


@pytest.mark.quick
def test_what_an_encoder_lacks():
    assert compare.lacks(side("disan")) == []
    nodir, bilstm = compare_render.statements(compare.comparison(side("disan-nodir"), side("bilstm")))
    assert "directional masks" in nodir
    assert "no token2token attention" in bilstm and "no fusion gates" in bilstm and "source2token" not in bilstm
    disan, _ = compare_render.statements(compare.comparison(side("disan"), side("bilstm")))
    assert "has every part" in disan and "has every part" not in bilstm


def test_differences_only_where_both_models_have_the_view():
    a, b = side("disan", name="a"), compare.Side("b", "disan", *_other_trace())
    both = compare_render.drawing(compare.comparison(a, b))
    assert {"compare-diff-forward", "compare-diff-backward", "compare-s2t-diff"} <= set(both)
    for name in ("forward", "backward"):
        pair = both[f"compare-attention-{name}"].data
        assert len(pair) == 2 and pair[0].zmax == pair[1].zmax  # A beside B on one colour scale
    assert list(both["compare-agreement"].view) == ["forward attention (lift)", "backward attention (lift)",
                                                    "source2token importance"]
    nodir = compare_render.drawing(compare.comparison(a, side("disan-nodir")))
    assert not any(k.startswith("compare-diff-") for k in nodir)
    assert {"compare-attention-a-forward", "compare-attention-b-diag_1"} <= set(nodir)
    assert list(nodir["compare-agreement"].view) == ["source2token importance"]
    baseline = compare_render.drawing(compare.comparison(a, side("bilstm")))
    assert "compare-s2t-diff" in baseline and not any(k.startswith("compare-attention-b") for k in baseline)
    with pytest.raises(ValueError):
        compare.comparison(a, side("disan", text="the glass"))


def test_compare_draws_gates_as_the_fusion_gates_page_does():
    a, b = side("disan", name="a"), compare.Side("b", "disan", *_other_trace())
    gates = compare_render.drawing(compare.comparison(a, b))["compare-gates"]
    page = views.mean_gates(a.sentence)
    # bars from 0.5 on an axis centred at 0.5 that fits the deviations, not a 0-1 axis
    assert all(bar.base == 0.5 for bar in gates.data)
    low, high = gates.layout.xaxis.range
    assert low + high == pytest.approx(1.0) and high - low < 0.5
    means = [np.asarray(block.gate, dtype=float).mean(axis=1) for s in (a, b) for block in s.sentence.trace.blocks]
    assert high - 0.5 >= max(np.abs(m - 0.5).max() for m in means)
    # the same height for four series (two models' two blocks) as for the page's two
    assert gates.layout.height == page.layout.height
    assert [bar.name for bar in gates.data] == ["A · forward", "A · backward", "B · forward", "B · backward"]


def _other_trace():
    pipe = pipeline(seed=5)
    r = pipe.trace(TEXT)
    return r.prediction, r.sentence


# ---------------------------------------------------------------- case study

def test_case_study_measures_every_token_of_every_sentence():
    pipe = pipeline()
    token_lists = [s.split() for s in (TEXT, "a man is pouring tea of the restaurant", "tea", "the man")]
    study = casestudy.measure(pipe, token_lists, "tiny")
    assert len(study.tokens) == sum(map(len, token_lists)) and study.blocks == ["forward", "backward"]
    assert list(study.sentences.sentence) == [0, 1, 2, 3]
    for s, group in study.tokens.groupby("sentence"):
        n = len(token_lists[s])
        assert list(group.token) == token_lists[s]
        # every query with a key spreads one unit of attention: n - 1 of them in each direction
        assert group["forward received"].sum() == pytest.approx(max(n - 1, 0), abs=1e-5)
        assert group["backward received"].sum() == pytest.approx(max(n - 1, 0), abs=1e-5)
    row = study.sentences.iloc[3]  # "the man": the only reachable token receives all, uniform or not
    assert np.isnan(row["forward gini"])
    three = casestudy.measure(pipe, [["a", "man", "is"]])
    # forward, 3 tokens: uniform attention gives token 0 one key's worth plus half, token 1 half: Gini of (1.5, 0.5)
    assert three.sentences["forward gini uniform"][0] == pytest.approx(0.25)


def test_a_case_study_of_sentences_measured_apart_is_the_study_of_them_all():
    pipe = pipeline()
    words = "the a man is pouring tea of glass bottle big dogs carousel".split()
    rng = np.random.default_rng(3)
    token_lists = [list(rng.choice(words, int(rng.integers(1, 14)))) for _ in range(30)]
    whole = casestudy.measure(pipe, token_lists, "all")
    # three parts of scattered places, each traced in its own length-bucketed batches, so padded otherwise
    places = np.array_split(rng.permutation(len(token_lists)), 3)
    parts = [(casestudy.measure(pipe, [token_lists[i] for i in p]), p) for p in places]
    joined = casestudy.combine(parts, "all")
    assert joined.blocks == whole.blocks
    pd.testing.assert_frame_equal(joined.tokens, whole.tokens, check_exact=False, rtol=1e-5, atol=1e-6)
    pd.testing.assert_frame_equal(joined.sentences, whole.sentences, check_exact=False, rtol=1e-5, atol=1e-6)
    # the nulls are drawn, not fixed: another seed gives another null, the same model measures
    other = casestudy.measure(pipe, token_lists, "all", seed=1)
    assert not np.allclose(other.sentences["forward gini null"], whole.sentences["forward gini null"],
                           equal_nan=True)
    np.testing.assert_array_equal(other.sentences["forward gini"], whole.sentences["forward gini"])
    with pytest.raises(ValueError, match="share"):
        casestudy.combine([parts[0], parts[0]])


def claims(study: casestudy.CaseStudy, resamples: int) -> pd.DataFrame:
    """The claims table as the page shows it: the study's findings, formatted."""
    return case_render.claims_table(casestudy.findings(study, resamples))


def synthetic_study(stop_relative: float, content_relative: float, tau: float,
                    sentences_n: int = 40) -> casestudy.CaseStudy:
    """Two blocks, sentences of two stop and two content words with the given measures (plus noise); the
    Gini nulls below the model's, the τ null at 0.6."""
    rng = np.random.default_rng(0)
    rows, sentences = [], []
    for s in range(sentences_n):
        words = [("the", "stop", stop_relative), ("dogs", "content", content_relative),
                 ("of", "stop", stop_relative), ("carousel", "content", content_relative)]
        for p, (token, cls, rel) in enumerate(words):
            value = rel + rng.normal(scale=0.01)
            rows.append({"sentence": s, "position": p, "token": token, "class": cls,
                         **{f"{b} {m}": value for b in ("forward", "backward") for m in ("relative", "gate")}})
        sentences.append({"sentence": s, "length": 4, "tau": tau + rng.normal(scale=0.01), "tau null": 0.6,
                          **{f"{b} gini{x}": g + rng.normal(scale=0.01) for b in ("forward", "backward")
                             for x, g in (("", 0.4), (" features", 0.5), (" uniform", 0.3),
                                          (" null", 0.35), (" features null", 0.45))}})
    return casestudy.CaseStudy("synthetic", ["forward", "backward"], pd.DataFrame(rows), pd.DataFrame(sentences), 0.0)


def test_the_claims_table_says_whether_each_claim_holds():
    holds = claims(synthetic_study(0.5, 1.5, 0.1), resamples=200)
    assert list(holds.columns) == ["holds?", "paper claim", "measured", "null", "n"]
    assert list(holds["holds?"]) == ["yes"] * (len(holds) - 1) + ["yes: within the null"]
    fails = claims(synthetic_study(1.5, 0.5, 0.9), resamples=200)
    verdicts = dict(zip(fails["paper claim"], fails["holds?"]))
    assert verdicts["forward: stop words get little attention"] == "no: not beyond the null"
    assert verdicts["backward: the fusion gate F is smaller for stop words"] == "no: not beyond the null"
    assert verdicts["forward and backward attend to different words"] == "no: alike beyond the null"
    small = claims(synthetic_study(1.0, 1.02, 0.1), resamples=200)
    assert small["holds?"][0].startswith("yes, small")
    assert list(holds.n) == [40] * len(holds)  # sentences: the unit the bootstrap resamples


@pytest.mark.quick
def test_the_case_study_drawing_shows_the_paper_sentences():
    pipe = pipeline()
    study = casestudy.measure(pipe, [TEXT.split(), "a man is pouring tea".split()])
    paper = casestudy.measure(pipe, [s.split() for s in casestudy.PAPER_SENTENCES])
    drawing = case_render.drawing(casestudy.findings(study, resamples=50), paper, casestudy.findings(paper, 50))
    assert {"case-claims", "case-received", "case-gates", "case-gini", "case-tau"} <= set(drawing)
    assert {"case-paper-0-received", "case-paper-1-gates", "case-paper-claims"} <= set(drawing)
    # stop words marked as on every page (grey italic labels, hatched bars), their labels whole
    for key in ("case-paper-0-received", "case-paper-0-gates"):
        figure = drawing[key]
        ticks = figure.layout.yaxis.ticktext
        assert any(t.endswith("<i>some</i></span>") for t in ticks) and "dogs" in ticks
        assert not any("…" in t for t in ticks)
        hatched = figure.data[0].marker.pattern.shape
        assert [bool(h) for h in hatched] == [t.startswith("<span") for t in ticks]
    with pytest.raises(ValueError, match="no DiSA blocks"):
        casestudy.measure(pipeline(encoder="bilstm"), [TEXT.split()])


def test_the_word_senses_page_offers_the_attention_outputs_too():
    s = pipeline().trace(TEXT).sentence
    vector = senses.word_vector(s.trace, s.tokens.index("bottle"), "s")
    np.testing.assert_array_equal(vector, torch.cat([s.trace.forward.s[2], s.trace.backward.s[2]]).numpy())


@pytest.mark.quick
def test_the_corpus_summary_counts_the_sentences_with_a_tau():
    frame = pd.DataFrame({"input": [0, 1, 2], "sentence": ["a", "b", "c"], "tokens": [3, 4, 1],
                          attribution.GAP: [0.001, 0.003, 0.002],
                          "integrated gradients | source2token": [0.5, -0.2, np.nan],
                          "gradient × input | source2token": [0.1, 0.3, np.nan]})
    drawing = corpus_drawing(attribution.summarised(frame))
    summary = drawing["attr-corpus-summary"].set_index("attribution | attention")
    row = summary.loc["integrated gradients | source2token"]
    assert row["mean τ"] == pytest.approx(0.15) and row["share with τ > 0"] == 0.5 and row["sentences"] == 2
    assert summary.loc["gradient × input | source2token", "share with τ > 0"] == 1.0
    assert len(drawing["attr-corpus-0"].data) == 1  # one histogram per attention measure
    assert "within 0.20% (median; largest 0.30%)" in drawing.rows[0].caption
    assert drawing.rows[0].title == "Over 3 test inputs"  # single sentences: the inputs are the sentences


@pytest.mark.quick
def test_a_two_class_prediction_change_names_both_classes_with_room_for_them():
    from disan.render import figures
    from disan.render import charts
    fig = charts.prediction_change({"neg": 0.2, "pos": 0.8}, {"neg": 0.7, "pos": 0.3})
    assert [list(bar.y) for bar in fig.data] == [["neg", "pos"], ["neg", "pos"]]
    assert [list(bar.x) for bar in fig.data] == [[0.2, 0.8], [0.7, 0.3]]
    for classes in (2, 3, 5):  # the plot area left under the title and legend, over the axis, for any count
        probs = {f"c{k}": 1 / classes for k in range(classes)}
        for chart in (charts.prediction_change(probs, probs), figures.class_probabilities(probs)):
            margin = chart.layout.margin
            assert chart.layout.height - margin.t - margin.b >= 150
    assert fig.layout.legend.y >= 1 and fig.layout.legend.orientation == "h"  # above the bars, in one row


@pytest.mark.quick
def test_the_context_of_an_occurrence_is_escaped_and_cut_to_its_window():
    from disan.render import charts
    tokens = ["a", "<b>", "c", "word", "d", "e", "f"]
    assert corpus.context_parts(tokens, 3, width=2) == ("… <b> c", "word", "d e …")
    assert charts.marked_context(*corpus.context_parts(tokens, 3, width=2)) == "… &lt;b&gt; c <b>word</b> d e …"
    assert charts.marked_context(*corpus.context_parts(tokens, 0, width=1)) == "<b>a</b> &lt;b&gt; …"


@pytest.mark.quick
def test_the_analysis_bench_times_each_step_of_the_case_study(make_checkpoint):
    from disan import load
    from disan.tools.analysis_bench import case_rows
    pipe = load(make_checkpoint())
    chosen = corpus.make_corpus("tiny", ["the glass is big", "a man pouring tea", "the restaurant is about to close"])
    rows = case_rows(pipe, chosen, repeats=2)
    assert [name.split(" (")[0] for name, _ in rows] == ["trace and measure", "claims and figures"]
    assert all(0 < seconds < 60 for _, seconds in rows)


@pytest.mark.usefixtures("data_root")
def test_the_analysis_bench_times_a_fresh_servers_start_without_spacy():
    from disan.tools.analysis_bench import startup_rows
    rows = startup_rows("trec", repeats=1)
    assert [name for name, _ in rows] == [
        "importing disan.app.opening and disan.app.analyses (spaCy imported: False)",
        "reading trec's train, dev, test", "reading trec's test"]
    assert all(cpu >= 0 for _, cpu in rows)
