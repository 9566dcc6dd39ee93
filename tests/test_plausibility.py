"""Plausibility: average precision against the tokens humans marked, its null, exclusions and verdicts."""
import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from disan.analyses.casestudy import MIN_SENTENCES
from disan.analyses.plausibility import average_precision, plausibility, score_sentences

pytestmark = pytest.mark.quick


def test_average_precision_worked_by_hand():
    # marked at ranks 1 and 3: precisions 1/1 and 2/3
    assert average_precision([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0]) == pytest.approx((1 + 2 / 3) / 2)
    # a tie is one threshold: the two tokens at 0.5 give precision 1/2 for half the recall, then 2/3 for the rest
    assert average_precision([0.5, 0.5, 0.1], [1, 0, 1]) == pytest.approx(0.5 * 0.5 + 0.5 * 2 / 3)
    # a token without a score ranks last
    assert average_precision([np.nan, 1.0, 0.0], [1, 0, 0]) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="relevant"):
        average_precision([1.0, 2.0], [0, 0])


def test_average_precision_agrees_with_scikit_learn():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(2, 30))
        relevant = rng.random(n) < rng.uniform(0.1, 0.9)
        relevant[rng.integers(n)] = True
        # few distinct values, so that ties are common
        scores = rng.integers(0, 4, size=(3, n)).astype(float) if rng.random() < 0.5 else rng.normal(size=(3, n))
        got = average_precision(scores, relevant)
        assert got.shape == (3,)
        for row, value in zip(scores, got):
            assert value == pytest.approx(average_precision_score(relevant, row))


def test_signed_scores_rank_by_their_size():
    labels = [np.array([0, 2, 2])]  # the first token marked (very negative)
    table = score_sentences([{"gradient": np.array([-2.0, 0.1, 1.0]), "attention": np.array([-2.0, 0.1, 1.0])}],
                            {"gradient": True, "attention": False}, labels)
    ap = dict(zip(table["explanation"], table["ap"]))
    assert ap["gradient"] == pytest.approx(1.0)      # |-2| first
    assert ap["attention"] == pytest.approx(1 / 3)   # -2 last


def expected_random_ap(n: int, marked: int) -> float:
    """E[AP] of a uniformly random ranking of n tokens, ``marked`` of them relevant: a marked token's rank k is
    uniform on 1..n, and of the k - 1 tokens above it (marked - 1) / (n - 1) are marked on average."""
    return float(np.mean([(1 + (marked - 1) * (k - 1) / (n - 1)) / k for k in range(1, n + 1)]))


def test_the_null_is_the_ap_of_random_scores_and_depends_on_the_sentence_alone():
    labels = [np.array([2, 3, 2, 2, 1, 2, 2, 2]), np.array([4, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0])]
    scores = [{"e": np.arange(len(h), dtype=float)} for h in labels]
    table = score_sentences(scores, {"e": False}, labels, draws=4000)
    for null, human in zip(table["null ap"], labels):
        assert null == pytest.approx(expected_random_ap(len(human), int((human != 2).sum())), abs=0.01)
    # seeded: the same again, and a sentence's null is the same whatever it is scored with
    assert table.equals(score_sentences(scores, {"e": False}, labels, draws=4000))
    alone = score_sentences(scores[1:], {"e": False}, labels[1:], draws=4000)
    assert alone["null ap"].iloc[0] == table["null ap"].iloc[1]
    assert table["difference"].to_numpy() == pytest.approx((table["ap"] - table["null ap"]).to_numpy())


def test_sentences_without_a_marked_or_a_neutral_token_are_left_out_and_counted():
    labels = [np.array([2, 2, 2]), np.array([0, 4]), np.array([1, 2, 3, 2]), np.array([2])]
    scores = [{"e": np.ones(len(h)), "f": np.arange(len(h), dtype=float)[::-1]} for h in labels]
    result = plausibility(scores, {"e": False, "f": False}, labels)
    rows = result.sentences[result.sentences["explanation"] == "e"]
    assert rows["left out"].tolist() == ["no token marked", "every token marked", "", "no token marked"]
    assert rows["ap"].isna().tolist() == [True, True, False, True]
    assert result.summary["sentences"].tolist() == [1, 1]
    assert result.summary["left out"].tolist() == [3, 3]
    # the one sentence used: e ties all, AP = the share marked; f ranks the tokens in order, marked at ranks 1 and 3
    assert result.summary["ap"].tolist() == pytest.approx([0.5, (1 + 2 / 3) / 2])


def corpus_of(size: int, reverse: bool = False):
    """``size`` sentences of 10 tokens with 3 marked, and scores that rank the marked ones first (or last)."""
    rng = np.random.default_rng(size)
    labels, scores = [], []
    for _ in range(size):
        human = np.full(10, 2)
        chosen = rng.choice(10, 3, replace=False)
        human[chosen] = 3
        good = (human != 2) + 0.1 * rng.random(10)
        scores.append({"explanation": -good if reverse else good})
        labels.append(human)
    return scores, labels


def test_a_verdict_needs_enough_sentences():
    for size, reverse, expected in ((MIN_SENTENCES - 1, False, "too few"), (MIN_SENTENCES, False, "better than random"),
                                    (MIN_SENTENCES, True, "worse")):
        scores, labels = corpus_of(size, reverse)
        row = plausibility(scores, {"explanation": False}, labels, resamples=500).summary.iloc[0]
        assert expected in row["verdict"], (size, reverse, row["verdict"])
        assert row["sentences"] == size and row["left out"] == 0
        assert row["difference low"] <= row["difference"] <= row["difference high"]
        assert row["null low"] <= row["null ap"] <= row["null high"]
    assert MIN_SENTENCES == 20  # the threshold the issue asks for


def test_the_explanations_must_match_the_labels():
    with pytest.raises(ValueError, match="against"):
        score_sentences([{"e": np.ones(3)}], {"e": False}, [np.array([1, 2])])
    with pytest.raises(ValueError, match="explanations"):
        score_sentences([{"e": np.ones(2)}, {"f": np.ones(2)}], {"e": False, "f": False}, [[1, 2], [1, 2]])
    with pytest.raises(ValueError, match="signed"):
        score_sentences([{"e": np.ones(2)}], {}, [[1, 2]])


def test_the_analysis_adds_up_over_its_inputs_and_is_the_direct_computation():
    from disan.analyses import explainers as E
    from disan.analyses import faithfulness as F
    from disan.analyses.plausibility import Plausible
    from disan.data.text import check_text
    from disan.inspect.pipeline import Pipeline

    from .conftest import make_model

    model, vocab = make_model("classify")
    pipe = Pipeline(model, vocab, {"labels": ["a", "b", "c"]}, {})
    rng = np.random.default_rng(1)
    items = tuple(" ".join(rng.choice(vocab.itos[2:], int(rng.integers(3, 9)))) for _ in range(6))
    labels = tuple(tuple(int(v) for v in rng.choice([1, 2, 2, 3], len(check_text(t)))) for t in items)
    settings = F.Settings(random_draws=2, resamples=100, explainers=E.on_pages())
    analysis = Plausible(items, settings, labels)
    places = [np.array([1, 4]), np.array([0, 2, 3, 5])]
    joined = analysis.finish(analysis.join([(analysis.part(pipe, p), p) for p in places]), len(items))
    direct = plausibility(F.explain(pipe, E.prepare(pipe, items), settings), F.signs(pipe, settings),
                          [np.array(h) for h in labels], resamples=100)
    assert joined.sentences.equals(direct.sentences) and joined.summary.equals(direct.summary)
    assert analysis.compute(pipe, len(items)).summary.equals(direct.summary)
    # the labels name the result: other labels, another entry
    other = Plausible(items, settings, labels[:-1] + (tuple(2 for _ in labels[-1]),))
    assert other.settings() != analysis.settings()
