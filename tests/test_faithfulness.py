"""Faithfulness checks on constructed models whose output is known by hand."""
import dataclasses
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from disan.data.kinds import KINDS
from disan.data.text import PAD_ID, Vocab
from disan.analyses import explainers as E
from disan.analyses import gradients, progressive
from disan.analyses import faithfulness as F
from disan.inspect.batched import traces
from disan.inspect.pipeline import Pipeline
from disan.nn.masks import attention_mask

from .conftest import make_model


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


class TokenModel(nn.Module):
    """Class 1's logit is the sum of fixed weights of the words present (class 0's is 0): its output
    depends on those words only, with known weights."""

    def __init__(self, vocab: Vocab, weights: dict[str, float]):
        super().__init__()
        self.cfg = SimpleNamespace(kind="classify", n_classes=2)
        table = torch.zeros(len(vocab))
        for word, w in weights.items():
            table[vocab.encode([word])[0]] = w
        self.register_buffer("table", table)

    @property
    def kind(self):
        return KINDS[self.cfg.kind]

    def forward(self, ids):
        score = (self.table[ids] * (ids != PAD_ID)).sum(dim=1)
        return torch.stack([torch.zeros_like(score), score], dim=1)


def token_pipe(weights):
    vocab = Vocab.build([["the", "movie", "is", "great", "good", "film"]])
    return Pipeline(TokenModel(vocab, weights), vocab, {"labels": ["neg", "pos"]}, {})


@pytest.mark.quick
def test_comprehensiveness_of_the_true_ranking_is_largest_at_k_1():
    pipe = token_pipe({"great": 5.0})
    settings = F.Settings(ks=(0.25, 0.5, 1.0))
    item, = E.prepare(pipe, ["the movie is great"])
    assert item.target == 1 and item.value == pytest.approx(sigmoid(5))
    removed, only = F.erase(pipe, [item], [[3, 0, 1, 2]], settings)  # "great" first
    comprehensiveness, sufficiency = item.value - removed[0], item.value - only[0]
    # by hand: without "great" the logits are equal (f = 1/2); with it alone f stays sigmoid(5)
    assert comprehensiveness[0] == pytest.approx(sigmoid(5) - 0.5) and comprehensiveness[0] == comprehensiveness.max()
    assert sufficiency == pytest.approx([0.0, 0.0, 0.0])  # "great" kept at every k: f does not move
    # a ranking that puts "great" last removes it only at k = 100%
    removed, _ = F.erase(pipe, [item], [[0, 1, 2, 3]], settings)
    assert item.value - removed[0] == pytest.approx([0.0, 0.0, sigmoid(5) - 0.5])


@pytest.mark.quick
def test_two_tokens_with_known_weights_and_unk_replacement():
    pipe = token_pipe({"great": 3.0, "good": 1.0})
    settings = F.Settings(ks=(0.33, 0.66))  # of 3 tokens: 1, then 2
    item, = E.prepare(pipe, ["great good film"])
    assert item.value == pytest.approx(sigmoid(4))
    removed, only = F.erase(pipe, [item], [[0, 1, 2]], settings)
    assert removed[0] == pytest.approx([sigmoid(1), 0.5])
    assert only[0] == pytest.approx([sigmoid(3), sigmoid(4)])
    removed, only = F.erase(pipe, [item], [[1, 2, 0]], F.Settings(ks=(0.01,), removal="unk"))
    assert removed[0] == pytest.approx([sigmoid(3)]) and only[0] == pytest.approx([sigmoid(1)])


@pytest.mark.quick
def test_the_random_rankings_expectation_is_the_hand_computed_one():
    # one token of four carries the output: a random top-1 holds it with probability 1/4, a top-2 with 1/2
    pipe = token_pipe({"great": 5.0})
    settings = F.Settings(ks=(0.25, 0.5), random_draws=4000)
    item, = E.prepare(pipe, ["the movie is great"])
    orders = F.random_rankings(0, 4, settings)
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders)
    removed, _ = F.erase(pipe, [item] * len(orders), orders, settings)
    drop = sigmoid(5) - 0.5
    got = (item.value - removed).mean(axis=0)
    se = drop * np.sqrt(np.array([0.25 * 0.75, 0.25]) / len(orders))
    assert np.all(np.abs(got - np.array([drop / 4, drop / 2])) < 4 * se)


def test_top_k_erasure_equals_a_literal_loop_over_edited_sentences():
    model, vocab = make_model("classify")
    pipe = Pipeline(model, vocab, {"labels": ["a", "b", "c"]}, {})
    texts = ["the cat sat on the mat", "a dog", "the bird sang a very long song today"]
    settings = F.Settings(ks=(0.1, 0.5))
    items = E.prepare(pipe, texts)
    rng = np.random.default_rng(1)
    orders = [list(rng.permutation(len(it.places))) for it in items]
    removed, only = F.erase(pipe, items, orders, settings)
    for r, (item, order) in enumerate(zip(items, orders)):
        tokens = item.tokens[0]
        for j, k in enumerate(settings.ks):
            top = set(order[:max(1, math.ceil(k * len(tokens)))])
            for kept, got in ((False, removed[r, j]), (True, only[r, j])):
                edited = [t for p, t in enumerate(tokens) if (p in top) == kept]
                with torch.no_grad():
                    ids = torch.tensor([vocab.encode(edited)]) if edited else torch.zeros(1, 1, dtype=torch.long)
                    want = model(ids).softmax(dim=-1)[0, item.target].item()
                assert got == pytest.approx(want, abs=1e-5)


def test_every_explanations_erasure_records_equal_a_literal_loop_over_edited_sentences():
    # erasure_records reuses leave-one-out's inputs for the top-1 removals: each value must still be f of
    # the edited sentence, run on its own
    model, vocab = make_model("classify")
    pipe = Pipeline(model, vocab, {"labels": ["a", "b", "c"]}, {})
    settings = F.Settings(ks=(0.1, 0.5), random_draws=2)
    records = F.erasure_records(pipe, ["the cat sat on the mat", "a dog sat"], settings)
    for record in records:
        tokens = record.tokens[0]
        with torch.no_grad():
            target = int(model(torch.tensor([vocab.encode(tokens)])).argmax())
        orders = [(record.rankings[n], record.removed[n], record.only[n]) for n in record.rankings]
        orders += list(zip(record.random_rankings, record.random_removed, record.random_only))
        for order, removed, only in orders:
            for j, k in enumerate(settings.ks):
                top = set(order[:max(1, math.ceil(k * len(tokens)))])
                for kept, got in ((False, removed[j]), (True, only[j])):
                    edited = [t for p, t in enumerate(tokens) if (p in top) == kept]
                    with torch.no_grad():
                        ids = torch.tensor([vocab.encode(edited)]) if edited else torch.zeros(1, 1, dtype=torch.long)
                        want = model(ids).softmax(dim=-1)[0, target].item()
                    assert got == pytest.approx(want, abs=1e-5)
        # leave-one-out is f(x) minus f without the token, the same literal loop
        for p in range(len(tokens)):
            with torch.no_grad():
                want = model(torch.tensor([vocab.encode(tokens[:p] + tokens[p + 1:])])).softmax(dim=-1)[0, target].item()
            assert record.value - want == pytest.approx(F.explain(pipe, E.prepare(pipe, [" ".join(tokens)]))[0]
                                                        ["leave-one-out"][p], abs=1e-5)


def test_erasure_records_of_inputs_computed_apart_are_those_of_them_all():
    # a stage of the page computes only the inputs it adds: their random rankings are seeded by their places
    model, vocab = make_model("classify")
    pipe = Pipeline(model, vocab, {"labels": ["a", "b", "c"]}, {})
    settings = F.Settings(ks=(0.1, 0.5), random_draws=2)
    items = ["the cat sat on the mat", "a dog sat", "the mat", "a cat sat on a dog on the mat", "dog", "cat sat"]
    whole = F.erasure_records(pipe, items, settings)
    places = [np.array([1, 2, 5]), np.array([0, 3, 4])]
    joined = progressive.in_order([(F.erasure_records(pipe, [items[i] for i in p], settings, p), p) for p in places])
    assert [r.tokens for r in joined] == [r.tokens for r in whole]
    for a, b in zip(joined, whole):
        assert a.rankings == b.rankings and a.random_rankings == b.random_rankings
        assert a.value == pytest.approx(b.value, abs=1e-6)
        for field in ("removed", "only"):
            for name in a.rankings:
                np.testing.assert_allclose(getattr(a, field)[name], getattr(b, field)[name], atol=1e-6)
            np.testing.assert_allclose(getattr(a, "random_" + field), getattr(b, "random_" + field), atol=1e-6)


def test_the_checks_that_add_up_over_inputs_give_from_parts_what_they_give_whole():
    # a stage of the page computes only the inputs it adds (the protocol's part, join, finish)
    model, vocab = make_model("classify")
    pipe = Pipeline(model, vocab, {"labels": ["a", "b", "c"]}, {})
    items = ("the cat sat on the mat", "a dog sat", "the mat", "a cat sat on a dog on the mat", "dog")
    settings = F.Settings(random_draws=2, resamples=50, explainers=E.on_pages())
    for analysis, whole in ((F.Cascade(items, settings), F.cascade(pipe, items, settings)),
                            (F.Erasure(items, settings), F.erasure_summary(F.erasure_records(pipe, items, settings),
                                                                           settings))):
        places = [np.array([1, 4]), np.array([0, 2, 3])]
        joined = analysis.finish(analysis.join([(analysis.part(pipe, p), p) for p in places]), len(items))
        assert joined.table.equals(whole.table), type(analysis).__name__
    assert F.Interventions(items, settings).compute(pipe, 5).table.equals(
        F.intervention_summary(F.intervention_records(pipe, items, settings), 5, settings).table)


@pytest.mark.quick
def test_the_summarys_random_row_is_the_hand_computed_expectation():
    # one token of four carries the output: random's comprehensiveness at k = 1 token is drop / 4, at 2 tokens
    # drop / 2; its sufficiency (keeping 1 token, then 2) is drop * 3/4, then drop / 2
    pipe = token_pipe({"great": 5.0})
    settings = F.Settings(ks=(0.25, 0.5), random_draws=2000, resamples=50)
    item, = E.prepare(pipe, ["the movie is great"])
    orders = F.random_rankings(0, 4, settings)
    removed, only = F.erase(pipe, [item] * len(orders), orders, settings)
    record = F.SentenceErasure(item.tokens, item.places, item.value, item.target, {}, {}, {}, orders, removed, only)
    summary = F.erasure_summary([record], settings)
    drop = sigmoid(5) - 0.5
    curves = summary.curves[summary.curves["explanation"] == F.RANDOM].set_index(["measure", "k"])["mean"]
    se = drop * np.sqrt(0.25 / 2000)
    for (measure, k), want in {("comprehensiveness", 0.25): drop / 4, ("comprehensiveness", 0.5): drop / 2,
                               ("sufficiency", 0.25): drop * 3 / 4, ("sufficiency", 0.5): drop / 2}.items():
        assert abs(curves[measure, k] - want) < 4 * se, (measure, k)


@pytest.mark.parametrize("kind", ["classify", "pair"])
def test_integrated_gradients_in_batches_reusing_points_equal_one_input_at_a_time(kind):
    model, vocab = make_model(kind)
    pipe = Pipeline(model, vocab, {"labels": ["a", "b", "c"]}, {})
    texts = (["the cat sat on the mat", "a dog", "the bird sang a very long song today", "cat"] if kind == "classify"
             else [("the cat sat", "a dog"), ("a cat", "the dog sat on the mat today"), ("dog", "cat")])
    traced = [pipe.trace(t).sentences for t in texts]
    assert all(b == 2 * a for a, b in zip(gradients.IG_STEPS, gradients.IG_STEPS[1:]))  # what reusing the points needs
    got = gradients.integrated_gradients(pipe, traced)
    for sentences, attr in zip(traced, got):
        # the readable search: one input at a time, the fewest steps whose gap is under COMPLETENESS
        for steps in gradients.IG_STEPS:
            want = gradients.attribute(pipe, sentences, steps)
            if abs(want.completeness_gap) < gradients.COMPLETENESS:
                break
        assert attr.steps == want.steps and attr.target == want.target
        assert attr.value == pytest.approx(want.value, abs=1e-6) and attr.baseline == pytest.approx(want.baseline, abs=1e-6)
        for a, b in zip(attr.integrated + attr.gradient_input, want.integrated + want.gradient_input):
            np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.quick
def test_uniform_attention_is_uniform_over_valid_keys_and_permutations_stay_within_them():
    pad = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    mask = attention_mask(pad, "forward")
    probs = torch.rand(2, 5, 5, 4) * mask[..., None]
    uniform = F.uniform_like(probs, mask)
    # forward query 2 of the 3-token sentence attends tokens 0 and 1: a half each, for every feature
    assert torch.equal(uniform[1, 2, :, 3], torch.tensor([0.5, 0.5, 0.0, 0.0, 0.0]))
    assert torch.equal(uniform[0, 0], torch.zeros(5, 4))  # the first token has no key
    rng = np.random.default_rng(0)
    for _ in range(20):
        moved = F.permuted(probs, mask, rng)
        assert (moved[~mask] == 0).all()
        for b in range(2):
            for j in range(5):
                keys = mask[b, j]
                # the same values among the same keys, for each feature
                assert torch.equal(moved[b, j, keys].sort(dim=0).values, probs[b, j, keys].sort(dim=0).values)
                # one permutation of the row for all features
                for i in torch.nonzero(keys).flatten():
                    hits = [int(i2) for i2 in torch.nonzero(keys).flatten()
                            if torch.equal(moved[b, j, i], probs[b, j, i2])]
                    assert hits


@pytest.mark.quick
def test_the_permutation_gathers_what_take_along_dim_gathers():
    pad = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    for direction in ("forward", "backward"):
        mask = attention_mask(pad, direction)
        probs = torch.rand(2, 6, 6, 3) * mask[..., None]
        index = torch.as_tensor(F.stats.row_shuffle_index(mask.numpy(), np.random.default_rng(5)))
        want = torch.take_along_dim(probs, index[..., None].expand_as(probs), dim=2)  # the readable gather
        assert torch.equal(F.permuted(probs, mask, np.random.default_rng(5)), want)


def test_the_shared_noise_calibration_moves_each_block_by_the_distance_asked():
    model, vocab = make_model("classify")
    model.eval()
    pipe = Pipeline(model, vocab, {"labels": ["a", "b", "c"]}, {})
    ids = torch.tensor([vocab.encode(["the", "cat", "sat", "on", "the", "mat"]), vocab.encode(["a", "dog"]) + [PAD_ID] * 4])
    noise = F.Noise(model, ids, F.blocks_of(pipe), torch.Generator().manual_seed(0))
    for block in F.blocks_of(pipe):
        wanted = noise.reached[0][block] * torch.tensor([0.7, 1.6])  # inside and outside the calibrated span
        out, reached = noise.matched(block, wanted)
        assert torch.allclose(reached, wanted, rtol=0.02)
        # what it returns is the encoding of the word vectors plus that much noise
        moved, distances = noise.run(torch.zeros(2))
        assert torch.allclose(moved, noise.base.encoding, atol=1e-6) and all((d == 0).all() for d in distances.values())


def test_an_intervention_with_the_models_own_attention_gives_its_encoding():
    model, vocab = make_model("classify")
    pipe = Pipeline(model, vocab, {"labels": ["a", "b", "c"]}, {})
    sentences = [["the", "cat", "sat"], ["a", "dog"]]
    batch, trace = next(traces(pipe, sentences))
    ids = pipe.ids([sentences[k] for k in batch])
    for block in F.blocks_of(pipe):
        out, moved = F.intervened_encoding(model, ids, block, lambda probs, mask: probs)
        assert torch.allclose(out, trace.encoding, atol=1e-6)
        assert torch.allclose(moved, F.block_output(trace, block), atol=1e-6)


@pytest.mark.quick
def test_the_cascade_leaves_the_groups_not_yet_randomised_bit_identical():
    model, _ = make_model("pair")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    prefixes = {"head": ("fc.", "out."), "source2token": ("encoder.s2t.",),
                "fusion gates": ("encoder.fw.fuse", "encoder.bw.fuse", "encoder.fw.b_f", "encoder.bw.b_f"),
                "DiSA blocks": ("encoder.fw.", "encoder.bw."), "word vectors": ("embed.",)}
    done = ()
    for stage, group in enumerate(F.CASCADE):
        F.randomise(model, group, stage)
        done += prefixes[group]
        after = model.state_dict()
        for key, value in before.items():
            if key.startswith(done):
                continue
            assert torch.equal(after[key], value), (group, key)
        changed = [k for k in before if k.startswith(prefixes[group]) and not torch.equal(after[k], before[k])]
        assert changed, group
    # the word vectors are drawn from U(-0.05, 0.05)
    assert model.embed.weight.abs().max() <= 0.05


@pytest.mark.quick
def test_verdicts_need_twenty_sentences_and_read_the_interval_in_the_measures_direction():
    from disan.analyses.stats import Estimate
    above, straddles = Estimate(0.1, 0.05, 0.2), Estimate(0.1, -0.05, 0.2)
    assert F.verdict(above, 19, True) == F.TOO_FEW
    assert F.verdict(above, 20, True) == "better than random"
    assert F.verdict(above, 20, False) == "worse"  # sufficiency: a larger drop keeping the top-k is worse
    assert F.verdict(straddles, 20, True) == "no better"


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_gets_its_erasure_interventions_and_cascade(kind):
    model, vocab = make_model(kind)
    pipe = Pipeline(model, vocab, {"labels": [str(i) for i in range(model.cfg.n_classes)]}, {})
    items = ["the cat sat", "a dog"] if not model.kind.pairs else [("the cat sat", "a dog"), ("a cat", "the dog sat")]
    settings = F.Settings(random_draws=2, permutation_draws=2, resamples=50)
    records = F.erasure_records(pipe, items, settings)
    names = set(F.explanation_names(pipe))
    assert all(set(r.rankings) == names for r in records)
    assert all(sorted(order) == list(range(len(r.places))) for r in records for order in r.rankings.values())
    summary = F.erasure_summary(records, settings)
    assert list(summary.table["explanation"]) == F.explanation_names(pipe) + [F.RANDOM]
    inter = F.intervention_summary(F.intervention_records(pipe, items, settings), len(items), settings)
    assert len(inter.table) == 2 * len(F.blocks_of(pipe))
    assert all((c >= 0).all() for c in inter.changes.values())
    agreement = F.cascade(pipe, items, settings)
    assert list(agreement.table["stage"]) == list(F.CASCADE)


@pytest.mark.usefixtures("data_root")
def test_the_command_writes_records_that_recompute_outside_the_tool(tmp_path):
    import json

    from disan.inspect.pipeline import load
    from disan.tools import faithfulness as command

    out = tmp_path / "f.jsonl"
    assert command.main(["checkpoints/trec", "--sentences", "2", "--seed", "3", "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    pipe = load("checkpoints/trec")
    names = F.explanation_names(pipe) + [f"random {d + 1}" for d in range(F.RANDOM_DRAWS)]
    assert len(records) == 2 * len(names) and [r["explanation"] for r in records[:len(names)]] == names
    for r in records[::7]:
        tokens = r["tokens"][0]
        assert sorted(r["ranking"]) == list(range(len(tokens)))
        probs = pipe.logits([[tokens]]).softmax(dim=-1)[0]
        assert r["f"] == pytest.approx(probs.max().item(), abs=1e-5)
        target = int(probs.argmax())
        for step in r["k"]:
            top = set(r["ranking"][:step["tokens"]])
            for kept, key in ((False, "f_removed"), (True, "f_only")):
                edited = [t for p, t in enumerate(tokens) if (p in top) == kept]
                want = pipe.logits([[edited]]).softmax(dim=-1)[0, target].item() if edited else None
                if want is not None:
                    assert step[key] == pytest.approx(want, abs=1e-5)
    # TREC has no human word labels; the taus recompute from the records' scores and rankings
    assert all(r["labels"] is None and "trec is not the Stanford Sentiment Treebank" in r["no_labels"]
               for r in records)
    first = {r["explanation"]: r for r in records[:len(names)]}
    scores = {name: np.array([np.nan if v is None else v for v in r["scores"]]) for name, r in first.items()
              if "scores" in r}
    assert list(scores) == F.explanation_names(pipe)
    for name, r in first.items():
        theirs = scores[name] if name in scores else F.ranked_scores(r["ranking"])
        for other, tau in r["tau"].items():
            want = stats_tau(theirs, scores[other])
            assert (tau is None and np.isnan(want)) or tau == pytest.approx(want), (name, other)


def save_trec(folder, model, vocab):
    """A tiny classifier saved as a TREC checkpoint, whose test split the page samples."""
    from disan.nn import checkpoint

    from .conftest import LABELS
    checkpoint.save(folder, model, vocab, {"task": "trec", "kind": "classify", "labels": LABELS["classify"]},
                    {"test": {"accuracy": 0.5}}, "# tiny\n")


@pytest.mark.usefixtures("data_root")
def test_the_page_draws_erasure_from_the_library_and_the_cascade_on_request(tmp_path, monkeypatch):
    from .test_app import app, charts, visit

    model, vocab = make_model("classify")
    save_trec(tmp_path / "a-trec", model, vocab)
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(tmp_path))
    at = app(**{"faith-n": 24})
    visit(at, "app_pages/faithfulness.py")
    assert "faith-erasure-bars" in charts(at)
    table = at.dataframe[0].value
    assert list(table["explanation"])[-1] == F.RANDOM and len(table) == 9
    assert set(table["verdict"][:-1]) <= {"better than random", "no better", "worse"}  # comprehensiveness
    # only the open tab draws (and computes): the cascade's button is in a tab not open yet
    assert "faith-cascade" not in [b.key for b in at.button]
    at.session_state["faith-tab"] = "Randomisation"
    at.run()
    assert "faith-erasure-bars" not in charts(at) and not at.dataframe
    at.button(key="faith-cascade").click().run()
    assert not at.exception and "faith-agreement-bars" in charts(at)
    assert at.session_state["faith-tab"] == "Randomisation"  # the button's rerun stays on its tab


@pytest.mark.quick
def test_the_commands_records_are_one_per_explanation_and_random_draw():
    from disan.tools import faithfulness as command

    record = F.SentenceErasure([["a", "b"]], [(0, 0), (0, 1)], 0.9, 1, {"x": [1, 0]}, {"x": np.array([0.2, 0.1])},
                               {"x": np.array([0.8, 0.9])}, [[0, 1], [1, 0]], np.array([[0.5, 0.1], [0.6, 0.1]]),
                               np.array([[0.7, 0.9], [0.4, 0.9]]))
    lines = command.lines([record], (0.5, 1.0))
    assert [line["explanation"] for line in lines] == ["x", "random 1", "random 2"]
    assert lines[2]["ranking"] == [1, 0] and lines[2]["k"][0] == {"fraction": 0.5, "tokens": 1, "f_removed": 0.6,
                                                                  "f_only": 0.4}
    assert lines[0]["k"][1]["tokens"] == 2 and lines[0]["f"] == 0.9
    assert command.main(["nowhere", "--sentences", "0", "--out", "x.jsonl"]) == 1


@pytest.mark.usefixtures("data_root")
def test_data_randomisation_against_a_tiny_model_trained_on_shuffled_labels(tmp_path):
    from disan.data.registry import load_task
    from disan.inspect.pipeline import load
    from disan.training.train import TrainConfig, train

    runs = {}
    for shuffled in (False, True):
        out = tmp_path / f"trec-{shuffled}"
        train(TrainConfig(task="trec", out=str(out), epochs=1, patience=0, d_h=8, d_fc=8, max_train=64, batch_size=32,
                          extra_vocab=50, shuffle_labels=shuffled, tensorboard=False), log=open(tmp_path / "log", "w"))
        runs[shuffled] = load(out)
    assert runs[True].config["train_config"]["shuffle_labels"] is True
    items = [e.text for e in load_task("trec").test[:4]]
    result = F.data_randomisation(runs[False], runs[True], items, F.Settings(resamples=50))
    assert list(result.table["stage"]) == ["shuffled labels"]
    assert set(result.table.columns[1:]) == set(F.explanation_names(runs[False]))
    rho = np.concatenate([r for r in result.rho.values()])
    assert np.nanmin(rho) >= -1 and np.nanmax(rho) <= 1


@pytest.mark.quick
def test_the_faithfulness_results_round_trip_through_the_disk_cache(tmp_path, monkeypatch):
    import pandas as pd

    from disan.store import diskcache

    monkeypatch.setenv(diskcache.DIR_ENV, str(tmp_path))
    model, vocab = make_model("pair")
    pipe = Pipeline(model, vocab, {"labels": ["a", "b", "c"]}, {})
    items = [("the cat sat", "a dog"), ("a cat", "the dog sat")]
    settings = F.Settings(random_draws=2, permutation_draws=2, resamples=50)
    from disan.analyses import plausibility as P

    records = F.erasure_records(pipe, items, settings)
    results = {"erasure": F.erasure_summary(records, settings),
               "interventions": F.intervention_summary(F.intervention_records(pipe, items, settings), 2, settings),
               "cascade": F.cascade(pipe, items, settings),
               "plausibility": P.plausibility([r.scores for r in records], F.signs(pipe, settings),
                                              [np.arange(len(r.places)) % 5 for r in records], resamples=50)}

    def same(got, want, where):
        assert type(got) is type(want), where
        if isinstance(want, pd.DataFrame):
            pd.testing.assert_frame_equal(got, want)
        elif isinstance(want, np.ndarray):
            np.testing.assert_array_equal(got, want)
        elif dataclasses.is_dataclass(want):  # an estimate among them: NaN where a ρ or τ is undefined
            for field in want.__dataclass_fields__:
                same(getattr(got, field), getattr(want, field), (*where, field))
        elif isinstance(want, dict):
            assert list(got) == list(want), where
            for key in want:
                same(got[key], want[key], (*where, key))
        elif isinstance(want, float) and math.isnan(want):
            assert math.isnan(got), where
        else:
            assert got == want, where

    for name, result in results.items():
        diskcache.store(name, result)
        same(diskcache.fetch(name), result, (name,))


@pytest.mark.usefixtures("data_root")
def test_the_page_keeps_its_results_and_its_stages_end_in_the_direct_computation(tmp_path, monkeypatch):
    import streamlit as st

    from disan.app import models, runner
    from disan.store import diskcache
    from disan.analyses import corpus
    from disan.inspect.pipeline import load

    from .test_app import app, assert_same_json, charts, decoded, visit

    model, vocab = make_model("classify")
    save_trec(tmp_path / "a-trec", model, vocab)
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(tmp_path))
    monkeypatch.setenv(progressive.FIRST_ENV, str(F.FIRST))  # stages on (conftest turns them off): F.FIRST, then all
    n = F.FIRST + 4
    at = visit(app(**{"faith-n": n}), "app_pages/faithfulness.py")
    pipe = load(tmp_path / "a-trec")
    items = tuple(corpus.trained_items(pipe.config, "test", n))
    settings = F.Settings(explainers=E.on_pages())
    direct = F.erasure_summary(F.erasure_records(pipe, items, settings), settings)
    assert "faith-erasure-bars" in charts(at)
    for shown, m in zip(at.dataframe, F.MEASURES):  # a table per measure, the verdict first
        assert list(shown.value.columns) == ["explanation", "verdict", "− random", "AOPC"]
        assert shown.value.to_numpy().tolist() == direct.table[["explanation", f"{m}: verdict", f"{m} − random",
                                                                f"{m} (AOPC)"]].to_numpy().tolist()
    path = str(tmp_path / "a-trec")
    key = runner.key(F.Erasure(items, settings), path)
    assert diskcache.known(key)  # a restart draws it at once, without loading the model
    drawn, table = charts(at), at.dataframe[0].value
    st.cache_data.clear()
    st.cache_resource.clear()
    again = app(**{"faith-n": n})
    # the first page of the session (Attention) loaded the model and erased its sentence for its reading
    st.cache_resource.clear()
    monkeypatch.setattr(F, "erasure_records", lambda *a, **k: pytest.fail("computed again after a restart"))
    monkeypatch.setattr(models, "load", lambda *a, **k: pytest.fail("the model loaded after a restart"))
    visit(again, "app_pages/faithfulness.py")
    assert again.dataframe[0].value.equals(table) and list(charts(again)) == list(drawn)
    for key_, chart in drawn.items():
        assert_same_json(decoded(json.loads(charts(again)[key_].proto.spec)), decoded(json.loads(chart.proto.spec)), key_)
    # a changed setting, sample, explanation or checkpoint names another entry: an old result is never read
    assert runner.key(F.Erasure(items, F.Settings(removal="unk", explainers=E.on_pages())), path) != key
    assert runner.key(F.Erasure(items[:-1], settings), path) != key
    assert runner.key(F.Erasure(items, F.Settings(explainers=E.on_pages()[:-1])), path) != key
    assert runner.key(F.Interventions(items, settings), path) != key
    with torch.no_grad():
        model.out.linear.bias += 1
    save_trec(tmp_path / "a-trec", model, vocab)
    assert runner.key(F.Erasure(items, settings), path) != key


# ---------------------------------------------------------------- the explanations' registry

def toy_scores(batch: E.Batch, seed: int) -> list[dict]:
    """Seeded noise, one score per token, from a generator of each input's own (its place in the sample)."""
    out = []
    for item, place in zip(batch.items, batch.places):
        rng = E.seeded(seed, place)
        out.append({None: [rng.normal(size=len(tokens)) for tokens in item.tokens]})
    return out


def toy(seed: int = 7) -> E.Explainer:
    """An explanation of the tests' own, registered by the tests that use it."""
    return E.Explainer("toy noise", E.PASSES, E.CHEAP, E.FOLLOWED, signed=True, attention=None, seed=seed,
                       compute=lambda batch: toy_scores(batch, seed))


@pytest.mark.quick
def test_an_entry_states_its_contract_and_a_name_is_registered_once(monkeypatch):
    monkeypatch.setattr(E, "EXPLAINERS", dict(E.EXPLAINERS))  # the registry as it was, after the test
    assert list(E.EXPLAINERS)[:6] == [E.SOURCE2TOKEN, "attention lift", "gate-weighted", gradients.GRADIENT_INPUT,
                                      gradients.INTEGRATED, "leave-one-out"]
    for entry in E.EXPLAINERS.values():
        assert entry.needs in E.NEEDS and entry.cost in E.COSTS and entry.explains in E.EXPLAINS
        # what is read off the forward pass is attention, and says how attention becomes a token's score
        assert entry.explains == E.FOLLOWED or entry.attention is not None
    assert set(E.on_pages()) == {e.name for e in E.EXPLAINERS.values() if e.cost != E.EXPENSIVE}
    E.register(toy())
    assert list(E.EXPLAINERS)[-1] == "toy noise"
    for taken in ("toy noise", F.RANDOM, "random 3"):
        with pytest.raises(ValueError, match="named"):
            E.register(dataclasses.replace(toy(), name=taken))
    with pytest.raises(ValueError, match="read .* or compute"):
        E.Explainer("both", E.TRACE, E.CHEAP, E.FORWARD, False, "x", read=lambda t: {}, compute=lambda b: [])
    with pytest.raises(ValueError, match="cost"):
        E.Explainer("dear", E.TRACE, "dear", E.FORWARD, False, "x", read=lambda t: {})
    with pytest.raises(ValueError, match="no explanation is named"):
        F.Settings(explainers=("nothing",))


def test_a_registered_explanation_is_erased_and_its_draws_do_not_depend_on_its_company(monkeypatch):
    monkeypatch.setitem(E.EXPLAINERS, "toy noise", toy())
    model, vocab = make_model("pair")
    pipe = Pipeline(model, vocab, {"labels": ["a", "b", "c"]}, {})
    items = [("the cat sat", "a dog"), ("a cat", "the dog sat on the mat"), ("dog", "cat sat")]
    settings = F.Settings(random_draws=2, explainers=(E.SOURCE2TOKEN, "toy noise"), side="hypothesis")
    assert F.explanation_names(pipe, settings) == [E.SOURCE2TOKEN, "toy noise"]
    whole = F.erasure_records(pipe, items, settings)
    alone = F.erasure_records(pipe, items[2:], settings, places=[2])
    for place, (record, (premise, hypothesis)) in enumerate(zip(whole, items)):
        rng = np.random.default_rng([7, place])
        rng.normal(size=len(premise.split()))
        scores = rng.normal(size=len(hypothesis.split()))
        # the side ranked only (the hypothesis), by the ranking rule: the highest score first
        assert record.places == [(1, p) for p in range(len(scores))]
        assert record.rankings["toy noise"] == sorted(range(len(scores)), key=lambda p: -scores[p])
    assert alone[0].rankings == whole[2].rankings


def test_a_registered_explanation_is_in_the_commands_records_and_on_the_page(tmp_path, monkeypatch, data_root):
    from disan.tools import faithfulness as command

    from .test_app import app, visit

    monkeypatch.setitem(E.EXPLAINERS, "toy noise", toy())
    model, vocab = make_model("classify")
    save_trec(tmp_path / "a-trec", model, vocab)
    out = tmp_path / "f.jsonl"
    assert command.main([str(tmp_path / "a-trec"), "--sentences", "2", "--out", str(out)]) == 0
    names = [json.loads(line)["explanation"] for line in out.read_text().splitlines()]
    assert names.count("toy noise") == 2 and names.index("toy noise") == len(names) // 2 - F.RANDOM_DRAWS - 1
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(tmp_path))
    at = visit(app(**{"faith-n": 3}), "app_pages/faithfulness.py")
    table = at.dataframe[0].value
    assert list(table["explanation"])[-2:] == ["toy noise", F.RANDOM]
    assert "toy noise" in at.caption[0].value  # the page says what it tests
    # an expensive one is left to the command, and the page says so
    monkeypatch.setitem(E.EXPLAINERS, "toy noise", dataclasses.replace(toy(), cost=E.EXPENSIVE))
    at = visit(app(**{"faith-n": 3}), "app_pages/faithfulness.py")
    assert "toy noise" not in list(at.dataframe[0].value["explanation"])
    left = [c.value for c in at.caption if "Left to `disan faithfulness`" in c.value]
    assert len(left) == 1 and "toy noise" in left[0] and "toy noise" not in at.caption[0].value


# ---------------------------------------------------------------- which explanations agree

@pytest.mark.quick
def test_the_tau_matrix_is_scipys_tau_b_for_every_pair_nan_tokens_left_out():
    from scipy.stats import kendalltau

    from disan.analyses.stats import kendall_matrix

    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, size=(4, 12)).astype(float)  # few distinct values: ties everywhere
    x[1, 3] = x[2, [0, 7]] = np.nan
    y = rng.normal(size=(3, 12))
    for got, rows, columns in ((kendall_matrix(x), x, x), (kendall_matrix(x, y), x, y)):
        assert got.shape == (len(rows), len(columns))
        for a, first in enumerate(rows):
            for b, second in enumerate(columns):
                kept = np.isfinite(first) & np.isfinite(second)
                want = kendalltau(first[kept], second[kept], variant="b").statistic
                assert got[a, b] == pytest.approx(want, abs=1e-12), (a, b)
    # a constant row ranks nothing: tau is undefined, not 0
    assert np.isnan(kendall_matrix(np.array([[1.0, 1, 1], [1, 2, 3]]))[0]).all()


@pytest.mark.quick
def test_the_agreement_of_the_explanations_is_symmetric_one_on_the_diagonal_and_its_null_near_zero():
    model, vocab = make_model("classify")
    pipe = Pipeline(model, vocab, {"labels": ["a", "b", "c"]}, {})
    rng = np.random.default_rng(0)
    items = [" ".join(rng.choice(vocab.itos[2:], int(rng.integers(5, 12)))) for _ in range(24)]
    settings = F.Settings(random_draws=40, resamples=200, explainers=E.on_pages())
    records = F.erasure_records(pipe, items, settings)
    agreement = F.erasure_summary(records, settings).agreement
    names = F.explanation_names(pipe, settings)
    assert agreement.names == names and agreement.inputs == len(items)
    assert list(agreement.matrix.columns) == [*names, F.RANDOM]
    matrix = agreement.matrix[names].to_numpy()
    np.testing.assert_allclose(matrix, matrix.T)
    np.testing.assert_allclose(np.diag(matrix), 1.0)
    np.testing.assert_allclose(agreement.taus, agreement.taus.transpose(0, 2, 1))
    # each input's tau is the one of its scores, as erasure ranked it
    first = records[0]
    a, b = names.index("integrated gradients"), names.index(E.SOURCE2TOKEN)
    assert agreement.taus[0, a, b] == pytest.approx(
        stats_tau(first.scores["integrated gradients"], first.scores[E.SOURCE2TOKEN]))
    # random rankings agree with nothing: the null is near 0 for every explanation (24 inputs x 40 draws)
    null = agreement.matrix[F.RANDOM].to_numpy()
    assert np.all(np.abs(null) < 0.06), null
    assert agreement.null_taus.shape == (len(items), 40, len(names))
    for name in names:
        e = agreement.estimates[name, F.RANDOM]
        assert e.low <= e.value <= e.high


def stats_tau(x, y) -> float:
    """scipy's tau-b of two score vectors, NaN tokens left out."""
    from scipy.stats import kendalltau

    x, y = np.asarray(x), np.asarray(y)
    kept = np.isfinite(x) & np.isfinite(y)
    return kendalltau(x[kept], y[kept], variant="b").statistic


# ---------------------------------------------------------------- plausibility against SST's human word labels

def save_tiny(folder, task: str, kind: str = "classify", classes: int | None = None):
    """A tiny untrained model saved as a checkpoint of a benchmark ``task``, whose test split the page samples."""
    from disan.nn import checkpoint
    from disan.nn.heads import ModelConfig, TextModel

    from .conftest import LABELS
    model, vocab = make_model(kind)
    labels = LABELS[kind] if classes is None else [str(c) for c in range(classes)]
    if classes is not None:  # the benchmark's number of classes (SST-5's five)
        torch.manual_seed(0)
        model = TextModel(dataclasses.replace(model.cfg, n_classes=classes)).eval()
        torch.nn.init.normal_(model.embed.weight)
    checkpoint.save(folder, model, vocab, {"task": task, "kind": kind, "labels": labels}, {"test": {"accuracy": 0.5}},
                    "# tiny\n")


def test_the_commands_records_carry_the_human_labels_and_each_explanations_average_precision(tmp_path, data_root):
    from sklearn.metrics import average_precision_score

    from disan.analyses import corpus
    from disan.data.text import check_text
    from disan.data.treebank import split_trees, token_labels
    from disan.tools import faithfulness as command

    save_tiny(tmp_path / "sst5", "sst5", classes=5)
    out = tmp_path / "f.jsonl"
    assert command.main([str(tmp_path / "sst5"), "--sentences", "4", "--seed", "2", "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    items = corpus.trained_items({"task": "sst5"}, "test", 4, 2)
    trees = split_trees("sst5", "test", data_root)
    signed = {e.name: e.signed for e in E.EXPLAINERS.values()}
    scored = 0
    for r in records:
        text = next(t for t in items if check_text(t) == r["tokens"][0])
        assert r["labels"] == token_labels(trees[text], r["tokens"][0]).tolist()
        assert set(r["tau"]) == set(F.explanation_names(load_tiny(tmp_path / "sst5"))) - {r["explanation"]}
        if r["explanation"].startswith(F.RANDOM):
            assert "ap" not in r
            continue
        marked = np.array(r["labels"]) != 2
        if r["left_out"]:
            assert r["ap"] is None and (not marked.any() or marked.all())
            continue
        scores = np.array([np.nan if s is None else s for s in r["scores"]])
        scores = np.abs(scores) if signed[r["explanation"].split(" · ")[0]] else scores
        # a token without a score ranks last
        last = np.nan_to_num(scores, nan=np.nanmin(scores) - 1)
        assert r["ap"] == pytest.approx(average_precision_score(marked, last))
        assert 0 < r["null_ap"] < 1
        scored += 1
    assert scored > 0


def load_tiny(folder):
    from disan.inspect.pipeline import load
    return load(folder)


@pytest.mark.usefixtures("data_root")
@pytest.mark.parametrize("task, kind", [("trec", "classify"), ("sick-e", "pair")])
def test_a_model_without_sst_has_no_plausibility_tab_and_a_line_saying_why(task, kind, tmp_path, monkeypatch):
    from .test_app import app, texts, visit

    save_tiny(tmp_path / f"a-{task}", task, kind)
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(tmp_path))
    at = visit(app(**{"faith-n": 3}), "app_pages/faithfulness.py")
    assert [t.label for t in at.tabs] == ["Erasure", "Interventions", "Randomisation"]
    assert f"No Plausibility tab: {task} is not the Stanford Sentiment Treebank" in texts(at.caption)
    assert "faith-explanations-tau" in [c.key for c in at.get("plotly_chart")]  # the erasure tab's agreement


@pytest.mark.usefixtures("data_root")
def test_the_plausibility_tab_draws_for_a_model_of_sst5(tmp_path, monkeypatch):
    from disan.analyses import corpus
    from disan.analyses import plausibility as P
    from disan.data.treebank import trained_labels

    from .test_app import app, charts, texts, visit

    save_tiny(tmp_path / "a-sst5", "sst5", classes=5)
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(tmp_path))
    n = 24
    at = visit(app(**{"faith-n": n}), "app_pages/faithfulness.py")
    assert [t.label for t in at.tabs][-1] == "Plausibility" and "No Plausibility tab" not in texts(at.caption)
    at.session_state["faith-tab"] = "Plausibility"
    at.run()
    assert not at.exception and "faith-plausibility-bars" in charts(at)
    table = at.dataframe[0].value
    assert list(table["explanation"]) == F.explanation_names(load_tiny(tmp_path / "a-sst5"), F.Settings(
        explainers=E.on_pages()))
    # the library's figures over the page's sample and labels
    pipe = load_tiny(tmp_path / "a-sst5")
    items = corpus.trained_items(pipe.config, "test", n)
    labels = trained_labels(pipe.config, items).labels
    settings = F.Settings(explainers=E.on_pages())
    direct = P.plausibility(F.explain(pipe, E.prepare(pipe, items), settings), F.signs(pipe, settings), labels)
    assert list(table["verdict"]) == list(direct.summary["verdict"])
    # the sentences used, the same for every explanation, are said above the table
    title = json.loads(charts(at)["faith-plausibility-bars"].proto.spec)["layout"]["title"]["text"]
    assert set(direct.summary["sentences"]) == {int(title.split(" over ")[1].split()[0])}


@pytest.mark.usefixtures("data_root")
def test_viz_draws_plausibility_for_sst5_and_says_why_not_for_trec(tmp_path):
    from disan import viz
    from disan.render.views import Drawing

    save_tiny(tmp_path / "sst5", "sst5", classes=5)
    drawing = viz.plausibility(load_tiny(tmp_path / "sst5"), 3, settings=F.Settings(explainers=(E.SOURCE2TOKEN,)))
    assert isinstance(drawing, Drawing) and list(drawing) == ["faith-plausibility-bars", "faith-plausibility-table"]
    assert list(drawing["faith-plausibility-table"]["explanation"]) == [E.SOURCE2TOKEN]
    save_tiny(tmp_path / "trec", "trec")
    with pytest.raises(ValueError, match="trec is not the Stanford Sentiment Treebank"):
        viz.plausibility(load_tiny(tmp_path / "trec"), 3)




# ---------------------------------------------------------------- one input's reading, beside its heatmap

@pytest.mark.parametrize("kind", list(KINDS))
def test_a_reading_is_f_of_its_edited_inputs_each_predicted_alone(kind):
    from .conftest import LABELS

    model, vocab = make_model(kind)
    pipe = Pipeline(model, vocab, {"labels": LABELS[kind]}, {})
    item = ("the man is pouring tea", "a man is big") if model.kind.pairs else "the glass bottle is big a man of tea"
    names = (E.SOURCE2TOKEN, E.ATTENTION_LIFT, "leave-one-out")
    sentences = pipe.trace(item).sentences
    tokens = [s.tokens for s in sentences]
    readings = F.reading(pipe, tokens, names)
    places = [(s, p) for s, t in enumerate(tokens) for p in range(len(t))]  # both sentences of a pair, by default
    n = len(places)

    def logits(kept) -> torch.Tensor:
        """The model's logits for the input with only the tokens at the places ``kept``, run on its own."""
        ids = []
        for s, t in enumerate(tokens):
            words = [w for p, w in enumerate(t) if (s, p) in kept]
            ids.append(torch.tensor([vocab.encode(words)]) if words else torch.zeros(1, 1, dtype=torch.long))
        with torch.no_grad():
            return model(*ids)

    whole = logits(set(places))
    target = None if model.kind.scored else int(whole.argmax())

    def f(kept) -> float:
        out = logits(kept)
        return float(model.kind.read(out)) if target is None else out.softmax(dim=-1)[0, target].item()

    value = f(set(places))
    scores = {}  # explanation -> (n,) scores in place order
    for name in (E.SOURCE2TOKEN, E.ATTENTION_LIFT):
        per = [E.EXPLAINERS[name].read(s.trace) for s in sentences]
        for block in per[0]:
            scores[E.EXPLAINERS[name].named(block)] = np.concatenate([got[block] for got in per])
    scores["leave-one-out"] = np.array([value - f(set(places) - {q}) for q in places])

    def curves(order) -> dict[str, np.ndarray]:
        """Per measure, f(x) − f(edited) at each k of the ranking ``order`` (indices into places)."""
        out = {"comprehensiveness": [], "sufficiency": []}
        for k in F.K_FRACTIONS:
            top = {places[i] for i in order[:max(1, math.ceil(k * n))]}
            out["comprehensiveness"].append(value - f(set(places) - top))
            out["sufficiency"].append(value - f(top))
        return {m: np.array(v) for m, v in out.items()}

    assert [r.explanation for r in readings] == list(scores)
    draws = readings[0].draws
    assert draws >= F.RANDOM_DRAWS  # at least as many as the corpus's
    rng = np.random.default_rng([0, 0])  # the draws of the first input of a sample seeded 0
    drawn = [curves(list(rng.permutation(n))) for _ in range(draws)]
    k = F.K_FRACTIONS.index(0.2)  # the reading's k: 20%
    for r in readings:
        assert r.value == pytest.approx(value, abs=1e-5)
        assert r.target == (None if target is None else LABELS[kind][target])
        assert (r.tokens, r.k, r.count) == (n, 0.2, max(1, math.ceil(0.2 * n)))
        s = np.where(np.isnan(scores[r.explanation]), -np.inf, scores[r.explanation])
        own = curves(sorted(range(n), key=lambda i: (-s[i], i)))  # highest first, ties in order, NaN last
        for m, higher in (("comprehensiveness", True), ("sufficiency", False)):
            assert r.aopc[m] == pytest.approx(own[m].mean(), abs=1e-5)
            assert r.at_k[m] == pytest.approx(own[m][k], abs=1e-5)
            np.testing.assert_allclose(r.random_aopc[m], [d[m].mean() for d in drawn], atol=1e-5)
            np.testing.assert_allclose(r.random_at_k[m], [d[m][k] for d in drawn], atol=1e-5)
            for aopc, mine, theirs in ((True, own[m].mean(), [d[m].mean() for d in drawn]),
                                       (False, own[m][k], [d[m][k] for d in drawn])):
                margin = (mine - np.array(theirs)) * (1 if higher else -1)  # > 0: this draw is beaten
                # float noise between a batch and a lone input may reorder a near tie, and only that
                assert (margin > 1e-6).sum() <= r.beaten(m, aopc) <= (margin > -1e-6).sum(), (r.explanation, m)


@pytest.mark.quick
def test_a_readings_line_says_what_its_top_tokens_do_to_f_against_random_ones():
    from types import SimpleNamespace

    import pandas as pd

    from disan.render.faithfulness import reading_line

    ks = (0.01, 0.05, 0.1, 0.2, 0.5)
    # removing its 8 tokens: 0.62 − 0.31 = 0.31, against drops of 0.1 (19 draws) and 0.4 (1); keeping only them:
    # 0.62 − 0.07 = 0.55, against 0.62 − 0.2 = 0.42 (17 draws, beaten) and 0.62 (3)
    r = F.Reading("attention lift · forward", "positive", 0.62, ("sentence",), 40, ks, 0.2, 8,
                  {"comprehensiveness": 0.31, "sufficiency": 0.07},
                  {"comprehensiveness": np.array([0.1] * 19 + [0.4]), "sufficiency": np.array([0.2] * 17 + [0.0] * 3)},
                  {"comprehensiveness": 0.2, "sufficiency": 0.1},
                  {"comprehensiveness": np.array([0.05] * 12 + [0.3] * 8), "sufficiency": np.full(20, 0.3)})
    assert reading_line(r, "classify") == (
        "attention lift · forward: removing the 8 tokens (20% of 40) it ranks highest takes p(\u2068positive\u2069) "
        "from 0.620 to 0.310, lower than removing 8 random ones leaves it in 19 of 20 draws; keeping only them leaves "
        "0.550, higher than keeping 8 random ones in 17 of 20. By AOPC over k = 1% to 50% it beats 12 "
        "(comprehensiveness) and 20 (sufficiency) of the 20 random rankings.")
    # a relatedness model's score, over both sentences of a pair, one token of five; with the corpus's verdicts
    r = F.Reading("source2token", None, 3.9, ("premise", "hypothesis"), 5, ks, 0.2, 1,
                  {"comprehensiveness": 0.8, "sufficiency": 1.5}, {"comprehensiveness": np.zeros(2),
                                                                   "sufficiency": np.ones(2)},
                  {"comprehensiveness": 0.8, "sufficiency": 1.5}, {"comprehensiveness": np.zeros(2),
                                                                   "sufficiency": np.ones(2)})
    summary = SimpleNamespace(sentences=100, random_spread={"comprehensiveness": None, "sufficiency": None},
                              table=pd.DataFrame({"explanation": ["source2token", "random"],
                                                  "comprehensiveness: verdict": ["better than random", "—"],
                                                  "sufficiency: verdict": ["no better", "—"]}))
    assert reading_line(r, "relatedness", summary) == (
        "source2token: removing the 1 token (20% of the 5 in both sentences) it ranks highest takes the relatedness "
        "score from 3.90 to 3.10, lower than removing 1 random one leaves it in 2 of 2 draws; keeping only them "
        "leaves 2.40, higher than keeping 1 random one in 0 of 2. By AOPC over k = 1% to 50% it beats 2 "
        "(comprehensiveness) and 0 (sufficiency) of the 2 random rankings. Over 100 test inputs: comprehensiveness "
        "better than random, sufficiency no better.")
    # one side of a pair
    r.sides = ("hypothesis",)
    assert "(20% of the 5 in the hypothesis)" in reading_line(r, "pair")


@pytest.mark.usefixtures("data_root")
def test_the_reading_links_to_the_faithfulness_page_until_its_result_is_kept_then_gives_its_verdicts(tmp_path,
                                                                                                    monkeypatch):
    from disan.app import analyses as glue
    from disan.store import diskcache

    from .test_app import app, texts, visit

    model, vocab = make_model("classify")
    save_trec(tmp_path / "a-trec", model, vocab)
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(tmp_path))
    monkeypatch.setenv(diskcache.DIR_ENV, str(tmp_path / "cache"))  # not the page's result of another test's model
    monkeypatch.setattr(glue, "FAITHFULNESS_SAMPLE", 24)  # the page's default sample, small: a verdict from 20
    at = app(text="the glass bottle is big")
    lines = [c for c in at.caption if "ranks highest" in c.value]
    assert len(lines) == 2 and "test inputs:" not in texts(lines)
    link, = at.get("page_link")
    assert link.proto.page == "faithfulness"
    visit(at, "app_pages/faithfulness.py")
    # the erasure tab's tables, a measure each (comprehensiveness, then sufficiency), the verdict first
    comprehensiveness, sufficiency = (frame.value.set_index("explanation") for frame in at.dataframe[:2])
    visit(at, "app_pages/attention.py")
    lines = [texts([c]) for c in at.caption if "ranks highest" in c.value]
    for block, line in zip(("forward", "backward"), lines):
        name = f"{E.ATTENTION_LIFT} · {block}"
        assert line.startswith(name) and line.endswith(
            f"Over 24 test inputs: comprehensiveness {comprehensiveness.loc[name, 'verdict']}, sufficiency "
            f"{sufficiency.loc[name, 'verdict']}.")
    assert not at.get("page_link")
