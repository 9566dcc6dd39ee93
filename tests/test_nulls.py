"""Readings that must survive a null model: Kendall's tau checked against its pairwise definition, PCA
signs that do not depend on the order of the points, k-means that finds planted clusters, model
comparison on lift against two unrelated models, and case-study claims against their nulls."""
import numpy as np
import pandas as pd
import pytest
import torch

from disan.analyses import casestudy, compare, stats
from disan.inspect import measures
from disan.inspect.pipeline import Pipeline
from disan.nn.model import DirectionTrace, EncoderTrace

from .conftest import LABELS, make_model
from .test_analyses import claims, synthetic_study

pytestmark = pytest.mark.quick

# ---------------------------------------------------------------- statistics

def pairwise_tau(x, y) -> float:
    """tau-b from its definition: (concordant − discordant) / sqrt(pairs untied in x × pairs untied in y)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    upper = np.triu_indices(len(x), 1)
    dx = np.sign(x[:, None] - x[None, :])[upper]
    dy = np.sign(y[:, None] - y[None, :])[upper]
    if not np.count_nonzero(dx) or not np.count_nonzero(dy):
        return float("nan")
    return float((dx * dy).sum() / np.sqrt(np.count_nonzero(dx) * np.count_nonzero(dy)))


def test_kendall_tau_equals_its_pairwise_definition_with_ties_and_nans():
    rng = np.random.default_rng(0)
    for _ in range(300):
        m = int(rng.integers(0, 60))
        x = rng.integers(0, rng.integers(1, 9), m).astype(float)
        y = x * rng.integers(-1, 2) + rng.integers(0, rng.integers(1, 9), m)
        if m:
            x[rng.integers(m)] = np.nan
        expected = pairwise_tau(x, y)
        got = stats.kendall_tau(x, y)
        assert (np.isnan(got) and np.isnan(expected)) or got == pytest.approx(expected, abs=1e-12)
    x = rng.normal(size=2000)  # long enough for several levels of the merge sort, with no ties
    y = x + rng.normal(size=2000)
    assert stats.kendall_tau(x, y) == pytest.approx(pairwise_tau(x, y), abs=1e-12)


def test_pca_signs_do_not_depend_on_the_order_of_the_points():
    rng = np.random.default_rng(1)
    points = rng.normal(size=(60, 8)) * np.arange(8, 0, -1)  # distinct variances: distinct components
    order = rng.permutation(60)
    p, q = stats.pca_2d(points), stats.pca_2d(points[order])
    np.testing.assert_allclose(q.coords, p.coords[order], atol=1e-10)
    np.testing.assert_allclose(q.components, p.components, atol=1e-12)
    flipped = stats.pca_2d(-points)  # the mirrored cloud: same components, signed by the same rule
    np.testing.assert_allclose(flipped.components, p.components, atol=1e-12)
    largest = p.components[np.arange(2), np.abs(p.components).argmax(axis=1)]
    assert (largest > 0).all()


def planted(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Eight separated blobs of unequal sizes in 5-D; a single k-means++ run often merges two of them."""
    rng = np.random.default_rng(seed)
    sizes = [60, 50, 40, 30, 25, 20, 15, 10]
    centres = rng.normal(scale=4.0, size=(len(sizes), 5))
    points = np.concatenate([c + rng.normal(scale=0.5, size=(s, 5)) for c, s in zip(centres, sizes)])
    return points, np.repeat(np.arange(len(sizes)), sizes)


def same_partition(a, b) -> bool:
    return len(set(zip(a, b))) == len(set(a)) == len(set(b))


def test_kmeans_finds_planted_clusters_every_time():
    sets = [planted(seed) for seed in range(3)]
    for seed in range(30):
        points, truth = sets[seed % 3]
        assert same_partition(stats.kmeans(points, 8, seed=seed), truth), seed
    # the set is hard enough that a single run is not enough
    single = [same_partition(stats.kmeans(points, 8, seed=seed, restarts=1), truth)
              for seed in range(30) for points, truth in [sets[seed % 3]]]
    assert not all(single)


def test_bootstrap_counts_the_resamples_where_the_statistic_is_undefined():
    # one cluster of two holds every token of the class: resamples without it have no mean
    sums = np.array([[3.0, 1.0], [0.0, 0.0]])
    est = stats.cluster_bootstrap(sums, lambda t: t[..., 0] / t[..., 1], resamples=400)
    assert 60 < est.undefined < 140  # both draws miss the cluster: 1/4 of the resamples
    assert est.low == est.high == 3.0


# ---------------------------------------------------------------- comparing models

def random_attention(rng: np.random.Generator, mask: np.ndarray, features: int = 8) -> np.ndarray:
    """(n, n) mean over features of softmax attention with random logits: a model that prefers nothing."""
    logits = np.where(mask[..., None], rng.normal(scale=1.5, size=mask.shape + (features,)), -np.inf)
    weights = np.where(mask[..., None], np.exp(logits - logits.max(axis=1, keepdims=True, initial=0.0)), 0.0)
    totals = weights.sum(axis=1, keepdims=True)
    return (weights / np.where(totals > 0, totals, 1.0)).mean(axis=-1)


def test_unrelated_models_agree_on_raw_probabilities_but_not_on_lift():
    rng = np.random.default_rng(0)
    forward = np.tril(np.ones((30, 30), dtype=bool), -1)
    inside = 0
    for _ in range(10):
        a, b = random_attention(rng, forward), random_attention(rng, forward)
        # raw probabilities: short rows hold large values in both, so the models look alike
        assert stats.kendall_tau(a[forward], b[forward]) > 0.15
        unrelated = compare.agreement(measures.lift(a, forward), measures.lift(b, forward), forward, draws=100)
        assert abs(unrelated.tau) < 0.1 and abs(unrelated.null.mean) < 0.1
        inside += unrelated.null.low < unrelated.tau < unrelated.null.high
    assert inside >= 7  # the null's 5-95% range holds the τ of unrelated models about 9 times in 10
    # a model against a noisy copy of itself agrees far beyond the null
    copy = measures.lift(a * np.exp(rng.normal(scale=0.3, size=a.shape)), forward)
    related = compare.agreement(measures.lift(a, forward), copy, forward)
    assert related.tau > 0.5 > related.null.high


def test_a_row_shuffle_keeps_every_rows_values_and_the_masked_cells():
    rng = np.random.default_rng(2)
    values = rng.normal(size=(4, 6, 6))
    mask = rng.random((4, 6, 6)) < 0.6
    shuffled = stats.shuffle_rows(values, mask, rng)
    np.testing.assert_array_equal(shuffled[~mask], values[~mask])
    for b in range(4):
        for j in range(6):
            np.testing.assert_array_equal(np.sort(shuffled[b, j][mask[b, j]]), np.sort(values[b, j][mask[b, j]]))
    assert not np.array_equal(shuffled, values)


# ---------------------------------------------------------------- case-study claims against their nulls

def masked_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, n, n, d) softmax over the keys i of each query j and feature k; rows without keys are 0."""
    logits = logits.masked_fill(~mask[..., None], float("-inf"))
    return torch.nan_to_num(torch.softmax(logits, dim=2))


def synthetic_batch(rng: np.random.Generator, sentences: int = 40, n: int = 20, features: int = 16,
                    preference: float = 0.0):
    """One batch of sentences through forward and backward blocks whose logits are i.i.d. per query,
    key and feature (σ = 1), plus ``preference`` × one weight per word shared by every query and feature:
    0 gives a model with no preferred word."""
    gen = torch.Generator().manual_seed(int(rng.integers(1 << 31)))
    words = torch.randn(sentences, 1, n, 1, generator=gen)
    blocks = []
    for name, mask in (("forward", torch.ones(n, n).tril(-1)), ("backward", torch.ones(n, n).triu(1))):
        mask = mask.bool().expand(sentences, n, n)
        logits = torch.randn(sentences, n, n, features, generator=gen) + preference * words
        probs = masked_softmax(logits, mask)
        zeros = torch.zeros(sentences, n, features)
        blocks.append(DirectionTrace(name, name, zeros, probs, zeros, torch.rand(sentences, n, features, generator=gen),
                                     zeros, mask))
    trace = EncoderTrace(tuple(blocks), None, torch.zeros(sentences, 1), torch.full((sentences,), n))
    tokens = [[f"w{i}" for i in range(n)] for _ in range(sentences)]
    return [(list(range(sentences)), trace)], tokens


def verdicts(study: casestudy.CaseStudy) -> dict[str, str]:
    table = claims(study, resamples=300)
    return dict(zip(table["paper claim"], table["holds?"]))


def test_a_model_with_no_preferred_word_fails_the_per_feature_concentration_claim():
    batches, tokens = synthetic_batch(np.random.default_rng(0))
    study = casestudy.measure_traces(batches, tokens, "i.i.d. noise")
    s = study.sentences
    # by construction each feature's received attention is more unequal than uniform attention ...
    assert (s["forward gini features"] - s["forward gini uniform"]).mean() > 0.01
    # ... and every sentence's mean of per-feature Ginis exceeds the Gini of the mean (Gini is convex)
    assert (s["forward gini features"] >= s["forward gini"]).all()
    # ... which the null shares, so the claim does not hold against it
    got = verdicts(study)
    for name in ("forward", "backward"):
        assert got[f"{name}, each feature: a few words receive large attention from all others"].startswith("no")
        assert got[f"{name}, mean over features: a few words receive large attention from all others"].startswith("no")


def test_a_model_with_preferred_words_beats_the_null():
    batches, tokens = synthetic_batch(np.random.default_rng(0), preference=1.0)
    got = verdicts(casestudy.measure_traces(batches, tokens, "preferred words"))
    for name in ("forward", "backward"):
        assert got[f"{name}, each feature: a few words receive large attention from all others"] == "yes"
        assert got[f"{name}, mean over features: a few words receive large attention from all others"] == "yes"


def test_directions_that_prefer_the_same_words_do_not_attend_to_different_words():
    batches, tokens = synthetic_batch(np.random.default_rng(1), preference=2.0)
    study = casestudy.measure_traces(batches, tokens, "one preference")
    assert verdicts(study)["forward and backward attend to different words"] == "no: alike beyond the null"
    batches, tokens = synthetic_batch(np.random.default_rng(1))
    study = casestudy.measure_traces(batches, tokens, "no preference")
    assert verdicts(study)["forward and backward attend to different words"] == "yes: within the null"


def test_a_stop_word_effect_made_by_sentence_composition_does_not_beat_the_shuffled_classes():
    # sentences with three stop words get 0.8 everywhere, those with one get 1.2: pooled over tokens,
    # content words receive more (Δ = +0.2), yet within no sentence do they
    rows = []
    for s in range(40):
        stop_words, value = (3, 0.8) if s % 2 else (1, 1.2)
        for p in range(4):
            stop = p < stop_words
            rows.append({"sentence": s, "position": p, "token": "the" if stop else "dogs",
                         "class": "stop" if stop else "content",
                         **{f"{b} {m}": value for b in ("forward", "backward") for m in ("relative", "gate")}})
    sentences = pd.DataFrame({"sentence": range(40), "length": 4, "tau": 0.5, "tau null": 0.5,
                              **{f"{b} gini{x}": 0.3 for b in ("forward", "backward")
                                 for x in ("", " features", " uniform", " null", " features null")}})
    study = casestudy.CaseStudy("composition", ["forward", "backward"], pd.DataFrame(rows), sentences, 0.0)
    null = casestudy.shuffled_classes(study, ["forward relative"], draws=50)["forward relative"]
    np.testing.assert_allclose(null, 0.2, atol=1e-12)
    table = claims(study, resamples=200)
    row = table.set_index("paper claim").loc["forward: stop words get little attention"]
    assert "Δ +0.200" in row["measured"] and row["holds?"] == "no: not beyond the null"


@pytest.mark.parametrize("sentences", [1, 2])
def test_one_or_two_sentences_give_measures_and_no_verdict(sentences):
    pipe = Pipeline(*make_model("classify", "disan", 0), {"labels": LABELS["classify"]}, {})
    texts = ["the glass bottle is big", "a man is pouring tea of the restaurant"][:sentences]
    table = claims(casestudy.measure(pipe, [t.split() for t in texts]), resamples=100)
    assert set(table["holds?"]) == {casestudy.TOO_FEW}
    assert table["measured"].str.contains("Δ|τ").all() and (table["n"] <= sentences).all()


def test_the_minimum_number_of_sentences_is_where_verdicts_start():
    below = claims(synthetic_study(0.5, 1.5, 0.1, casestudy.MIN_SENTENCES - 1), resamples=100)
    at = claims(synthetic_study(0.5, 1.5, 0.1, casestudy.MIN_SENTENCES), resamples=100)
    assert set(below["holds?"]) == {casestudy.TOO_FEW} and at["holds?"].str.startswith("yes").all()
    assert casestudy.MIN_SENTENCES >= 20
