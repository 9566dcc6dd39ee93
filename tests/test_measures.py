"""The batched measures of disan.inspect.measures: a hand-worked example, a padded batch against the same
sentence alone, and real batched traces against the per-sentence traces the pages measure."""
import math

import numpy as np
import pytest
import torch

from disan.inspect import measures
from disan.inspect.batched import traces
from disan.inspect.pipeline import Pipeline

from .conftest import LABELS, WORDS, make_model

pytestmark = pytest.mark.quick

# A forward block over three tokens with two features, worked by hand:
# query 0 attends nothing, query 1 attends token 0, query 2 attends tokens 0 and 1.
MASK = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=bool)                 # (n, n) [j, i]
PROBS = np.zeros((3, 3, 2))                                                     # (n, n, d) [j, i, k]
PROBS[1, 0] = [1.0, 1.0]
PROBS[2, :2, 0] = [0.5, 0.5]
PROBS[2, :2, 1] = [0.25, 0.75]
GATE = np.array([[0.9, 0.1], [0.5, 0.2], [0.6, 0.8]])                          # (n, d) [j, k]

KEYS = [0, 1, 2]
UNIFORM = [[0, 0, 0], [1, 0, 0], [0.5, 0.5, 0]]
ENTROPY = [[np.nan, np.nan], [0.0, 0.0], [math.log(2), -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))]]
RECEIVED_BY_FEATURE = [[1.5, 1.25], [0.5, 0.75], [0.0, 0.0]]                   # r_i = sum_j P[j, i, k]
RECEIVED_UNIFORM = [1.5, 0.5, 0.0]                                              # u_i = sum_j U[j, i]
RECEIVED = [1.375, 0.625, 0.0]                                                  # mean over the two features
# g_0 = mean((1 - .5)·1 + (1 - .6)·.5, (1 - .2)·1 + (1 - .8)·.25) = mean(.7, .85); g_1 = mean(.4·.5, .2·.75)
GATE_WEIGHTED = [0.775, 0.175, 0.0]
MEAN_GATE = [0.5, 0.35, 0.7]
LIFT = [[[0, 0], [0, 0], [0, 0]], [[1, 1], [0, 0], [0, 0]], [[1, 0.5], [1, 1.5], [0, 0]]]  # P x keys(j)


def padded_batch():
    """The hand-worked sentence padded to 4 tokens beside a 4-token sentence of random attention, with
    garbage in the padded gate row: (B, n, n, d) probs, (B, n, n) mask, (B, n, d) gate."""
    rng = np.random.default_rng(0)
    mask = np.zeros((2, 4, 4), dtype=bool)
    mask[0, :3, :3] = MASK
    mask[1] = np.tril(np.ones((4, 4), dtype=bool), -1)
    probs = np.zeros((2, 4, 4, 2))
    probs[0, :3, :3] = PROBS
    logits = np.where(mask[1][..., None], rng.normal(size=(4, 4, 2)), -np.inf)
    with np.errstate(invalid="ignore"):
        probs[1] = np.nan_to_num(np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True))
    gate = rng.uniform(size=(2, 4, 2))
    gate[0, :3] = GATE
    return probs, mask, gate


def test_every_measure_by_hand():
    np.testing.assert_array_equal(measures.key_counts(MASK), KEYS)
    np.testing.assert_array_equal(measures.key_counts(torch.from_numpy(MASK)).numpy(), KEYS)
    np.testing.assert_allclose(measures.uniform_attention(MASK, torch.float64).numpy(), UNIFORM)
    np.testing.assert_allclose(measures.query_entropy(PROBS, MASK), ENTROPY, atol=1e-12)
    got, uniform = measures.received(PROBS, MASK, by_feature=True)
    np.testing.assert_allclose(got.numpy(), RECEIVED_BY_FEATURE)
    np.testing.assert_allclose(uniform.numpy(), RECEIVED_UNIFORM)
    np.testing.assert_allclose(measures.received(PROBS, MASK)[0].numpy(), RECEIVED)
    np.testing.assert_allclose(measures.gate_weighted_received(PROBS, GATE).numpy(), GATE_WEIGHTED)
    np.testing.assert_allclose(measures.mean_gate(GATE), MEAN_GATE)
    np.testing.assert_allclose(measures.lift(PROBS, MASK), LIFT)


def test_a_padded_batch_gives_each_sentence_its_own_measures():
    probs, mask, gate = padded_batch()
    # the hand-worked sentence, padded: its values, and nothing (0 or NaN) at the padding
    np.testing.assert_array_equal(measures.key_counts(mask)[0], KEYS + [0])
    np.testing.assert_allclose(measures.uniform_attention(mask, torch.float64)[0].numpy(),
                               np.pad(UNIFORM, ((0, 1), (0, 1))))
    entropy = measures.query_entropy(probs, mask)
    np.testing.assert_allclose(entropy[0, :3], ENTROPY, atol=1e-12)
    assert np.isnan(entropy[0, 3]).all()
    got, uniform = measures.received(probs, mask, by_feature=True)
    np.testing.assert_allclose(got[0].numpy(), RECEIVED_BY_FEATURE + [[0, 0]])
    np.testing.assert_allclose(uniform[0].numpy(), RECEIVED_UNIFORM + [0])
    np.testing.assert_allclose(measures.received(probs, mask)[0][0].numpy(), RECEIVED + [0])
    np.testing.assert_allclose(measures.gate_weighted_received(probs, gate)[0].numpy(), GATE_WEIGHTED + [0])
    np.testing.assert_allclose(measures.mean_gate(gate)[0, :3], MEAN_GATE)
    np.testing.assert_allclose(measures.lift(probs, mask)[0, :3, :3], LIFT)
    # the unpadded sentence: the batch row equals the measure of the sentence alone
    alone = probs[1], mask[1], gate[1]
    np.testing.assert_array_equal(measures.query_entropy(probs, mask)[1], measures.query_entropy(*alone[:2]))
    for by_feature in (False, True):
        for batched, single in zip(measures.received(probs, mask, by_feature),
                                   measures.received(*alone[:2], by_feature)):
            np.testing.assert_allclose(batched[1].numpy(), single.numpy(), rtol=1e-12)
    np.testing.assert_allclose(measures.gate_weighted_received(probs, gate)[1].numpy(),
                               measures.gate_weighted_received(alone[0], alone[2]).numpy(), rtol=1e-12)
    np.testing.assert_allclose(measures.lift(probs, mask)[1], measures.lift(*alone[:2]))
    np.testing.assert_allclose(measures.uniform_attention(mask)[1].numpy(),
                               measures.uniform_attention(mask[1]).numpy())


def test_gate_weighted_received_is_the_literal_sum():
    rng = np.random.default_rng(1)
    b, n, d = 3, 6, 4
    probs, gate = rng.uniform(size=(b, n, n, d)), rng.uniform(size=(b, n, d))
    expected = np.zeros((b, n))
    for s in range(b):
        for i in range(n):
            expected[s, i] = sum((1 - gate[s, j, k]) * probs[s, j, i, k] for j in range(n) for k in range(d)) / d
    np.testing.assert_allclose(measures.gate_weighted_received(probs, gate).numpy(), expected, rtol=1e-12)
    # a gate of 0 passes all of s on: every query counts fully, as in the attention received
    np.testing.assert_allclose(measures.gate_weighted_received(probs, np.zeros((b, n, d))).numpy(),
                               probs.sum(axis=1).mean(axis=-1), rtol=1e-12)


def test_query_entropy_in_steps_equals_it_in_one(monkeypatch):
    rng = np.random.default_rng(2)
    probs = rng.uniform(size=(2, 7, 7, 3)).astype(np.float32)  # garbage in the masked cells too
    mask = rng.uniform(size=(2, 7, 7)) < 0.5
    mask[0, 3] = [1, 0, 1, 0, 0, 1, 0]
    whole = measures.query_entropy(probs, mask)
    monkeypatch.setattr(measures, "ENTROPY_CELLS", 7 * 3)  # one row at a time
    np.testing.assert_array_equal(measures.query_entropy(probs, mask), whole)
    # masked cells do not count, whatever they hold
    row = probs[0, 3, [0, 2, 5]].astype(float)
    np.testing.assert_allclose(whole[0, 3], -(row * np.log(row)).sum(axis=0), rtol=1e-6)


SENTENCES = [WORDS[:2], WORDS[3:9], WORDS[:1], WORDS[5:9], WORDS[2:13]]


@pytest.fixture(scope="module")
def traced():
    model, vocab = make_model("classify", "disan", 0)
    pipe = Pipeline(model, vocab, {"labels": LABELS["classify"]}, {})
    batches = list(traces(pipe, SENTENCES))
    assert any(len(idx) > 1 for idx, _ in batches)  # some sentences are padded
    return pipe, batches


def test_batched_traces_give_the_measures_of_each_sentence_traced_alone(traced):
    pipe, batches = traced
    for idx, tr in batches:
        for c, block in enumerate(tr.blocks):
            entropy = measures.query_entropy(block.probs, block.mask)
            got, uniform = measures.received(block.probs, block.mask)
            by_feature, _ = measures.received(block.probs, block.mask, by_feature=True)
            weighted = measures.gate_weighted_received(block.probs, block.gate)
            gate, keys = measures.mean_gate(block.gate), measures.key_counts(block.mask)
            for b, s in enumerate(idx):
                n = len(SENTENCES[s])
                one = pipe.trace_sentence(" ".join(SENTENCES[s])).trace.blocks[c]
                assert keys[b, :n].tolist() == measures.key_counts(one.mask).tolist()
                assert not keys[b, n:].any()
                np.testing.assert_allclose(entropy[b, :n], measures.query_entropy(one.probs, one.mask),
                                           rtol=1e-5, atol=1e-6)
                assert np.isnan(entropy[b, n:]).all()
                single_got, single_uniform = measures.received(one.probs, one.mask)
                np.testing.assert_allclose(got[b, :n].numpy(), single_got.numpy(), rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(uniform[b, :n].numpy(), single_uniform.numpy(), rtol=1e-6)
                np.testing.assert_allclose(by_feature[b, :n].numpy(),
                                           measures.received(one.probs, one.mask, by_feature=True)[0].numpy(),
                                           rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(weighted[b, :n].numpy(),
                                           measures.gate_weighted_received(one.probs, one.gate).numpy(),
                                           rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(gate[b, :n], measures.mean_gate(one.gate), rtol=1e-5)
                assert not got[b, n:].any() and not weighted[b, n:].any()


def test_the_pages_import_and_classify_words_without_spacy_whose_stop_words_they_use():
    """Importing spaCy costs half a second of a fresh server's first page: what a page imports leaves it out,
    classifying a word too (its list is read from spaCy's file), and the stop words are spaCy's own."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys\n"
            "import disan.app.opening, disan.app.analyses, disan.render.views, disan.render.markup\n"
            "print('spacy' in sys.modules, 'sklearn' in sys.modules)\n"
            "from disan.inspect.measures import is_stop_word, word_class\n"
            "print(word_class('The'), 'spacy' in sys.modules)\n"
            "import spacy\n"
            "stop = spacy.blank('en').Defaults.stop_words\n"
            "print(all(is_stop_word(w) for w in stop), is_stop_word('The'), is_stop_word('carousel'))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "stop", "False", "True", "True", "False"]
