"""The authors' training recipe, item by item (``--recipe authors``), and step-based training."""
import io
import math
import random

import numpy as np
import pytest
import torch

import disan
from disan.data.batching import batch_indices, encode, tokens_of
from disan.data.loaders import Example, TaskData
from disan.data.registry import load_task
from disan.data.text import PAD_ID, UNK_ID, Vocab
from disan.data.vectors import embedding_matrix
from disan.nn import checkpoint
from disan.nn.heads import ModelConfig, TextModel, param_groups
from disan.nn.model import DiSANConfig
from disan.training import train as train_module
from disan.training.config import (
    RECIPES,
    TrainConfig,
    parse_args,
    parse_command_line,
    recipe_items,
)
from disan.training.train import make_optimizer, model_card, train

from .test_train import tiny_trec

# ---------------------------------------------------------------- item 1: SST's nodes

TREES = ["(3 (2 a) (3 (3 good) (2 film)))",   # root 3, 'a' 2, 'good film' 3, 'good' 3, 'film' 2
         "(2 (2 a) (1 (1 bad) (2 film)))"]     # root 2, 'a' 2, 'bad film' 1, 'bad' 1, 'film' 2


@pytest.fixture
def sst_root(tmp_path):
    (tmp_path / "SST").mkdir()
    for split in ("train", "dev", "test"):
        (tmp_path / "SST" / f"{split}.txt").write_text("\n".join(TREES) + "\n", encoding="utf-8")
    return tmp_path


def test_unique_nodes_keep_each_text_once(sst_root):
    texts = [e.text for e in load_task("sst5", sst_root, nodes="unique").train]
    assert sorted(texts) == sorted(["a good film", "a", "good film", "good", "film", "a bad film", "bad film", "bad"])


def test_every_node_counts_each_occurrence(sst_root):
    train = load_task("sst5", sst_root, nodes="every").train
    assert len(train) == 10
    assert sum(e.text == "a" for e in train) == 2 and sum(e.text == "film" for e in train) == 2


def test_oversampling_adds_three_copies_of_non_neutral_nodes_and_of_whole_sentences(sst_root):
    train = load_task("sst5", sst_root, nodes="oversampled").train
    count = {text: sum(e.text == text for e in train) for text in {e.text for e in train}}
    # non-neutral nodes 4 times; the neutral root 'a bad film' 4 times too; neutral inner nodes once per tree
    assert count == {"a good film": 4, "good film": 4, "good": 4, "a bad film": 4, "bad film": 4, "bad": 4,
                     "a": 2, "film": 2}
    assert {e.label for e in train if e.text == "a bad film"} == {2}


# ---------------------------------------------------------------- item 8: tokens

def test_leaves_keep_sst_tokens_that_spacy_splits():
    data = TaskData("sst5", "classify", ["x"], [Example("a sci-fi film we 've seen", 0),
                                                Example("caf\u00e9\u00a0society", 0)], [], [], "")
    spacy, leaves = (tokens_of(data, ["train"], t)["train"] for t in ("spacy", "leaves"))
    assert leaves[0] == [["a", "sci-fi", "film", "we", "'ve", "seen"]]
    assert leaves[1] == [["caf\u00e9\u00a0society"]]  # a no-break space is inside a leaf
    assert "sci-fi" not in spacy[0][0] and len(spacy[0][0]) > len(leaves[0][0])


def test_leaves_are_refused_for_tasks_without_trees(tmp_path):
    with pytest.raises(ValueError, match="leaves"):
        TrainConfig(task="trec", out=str(tmp_path), tokens="leaves")


# ---------------------------------------------------------------- the recipe as flags

def test_recipe_authors_sets_every_item_and_flags_beside_it_win():
    cfg = parse_args(["--task", "sst5", "--out", "x", "--recipe", "authors"])
    assert {k: getattr(cfg, k) for k in RECIPES["authors"]} == RECIPES["authors"]
    assert recipe_items(cfg) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    mixed = parse_args(["--dropout", "0.2", "--recipe", "authors", "--task", "sst5", "--out", "x", "--head-bias"])
    assert mixed.dropout == 0.2 and mixed.head_bias and mixed.rho == 0.95
    assert recipe_items(mixed) == [1, 2, 3, 4, 7, 8, 9]
    assert parse_command_line(mixed.command) == mixed
    assert recipe_items(parse_args(["--task", "sst5", "--out", "x"])) == []


def test_the_model_card_names_the_items_followed(tmp_path):
    cfg = TrainConfig(task="sst5", out=str(tmp_path), dropout=0.3, tokens="leaves", rho=0.95)
    data = TaskData("sst5", "classify", ["a", "b"], [], [], [], "p")
    card = model_card(cfg, data, {}, 10)
    assert "items 5, 8 of 9 (dropout 0.3 (keep 0.7); SST's leaves as tokens)" in card
    assert "rho 0.95, eps 1e-06" in card  # item 3 half followed: not listed, but the values are there


# ---------------------------------------------------------------- item 4: word vectors

def test_normal_oov_rows_are_standard_normal_with_zero_padding_and_unknown_rows():
    vocab = Vocab.build([["known"] + [f"new{i}" for i in range(400)]])
    words, vectors = ["known"], np.full((1, 50), 7.0, dtype=np.float32)
    matrix, found = embedding_matrix(vocab, words, vectors, seed=1, oov="normal")
    assert found == 1 and (matrix[vocab.stoi["known"]] == 7).all()
    assert not matrix[PAD_ID].any() and not matrix[UNK_ID].any()
    rows = [vocab.stoi[f"new{i}"] for i in range(400)]
    assert abs(matrix[rows].mean()) < 0.02 and 0.97 < matrix[rows].std() < 1.03
    uniform, _ = embedding_matrix(vocab, words, vectors, seed=1)
    assert 0 < np.abs(uniform[UNK_ID]).max() <= 0.05 and np.abs(uniform[rows]).max() <= 0.05


@pytest.mark.usefixtures("data_root")
def test_eval_words_give_dev_and_test_words_their_glove_vectors(tmp_path):
    def prepared(**changes):
        return train_module.prepare_data(tiny_trec(tmp_path, **changes), random.Random(0))
    plain, known = prepared(), prepared(eval_words=True)
    train_words = {w for w in plain.vocab.itos[: len(plain.vocab) - plain.frozen]}
    added = [w for w in known.vocab.itos if w not in plain.vocab.stoi]
    assert added and not set(added) & train_words
    dev_unknown = sum(t == UNK_ID for col in known.splits["dev"].columns for row in col for t in row)
    assert dev_unknown < sum(t == UNK_ID for col in plain.splits["dev"].columns for row in col for t in row)
    # the added rows are frozen GloVe rows: the last ones of the vocabulary
    assert known.frozen - plain.frozen == len(added)


# ---------------------------------------------------------------- items 3, 6, 7: optimiser, head, L2

def small_model(out_bias=True) -> TextModel:
    torch.manual_seed(0)
    return TextModel(ModelConfig(vocab_size=10, n_classes=3, d_fc=4, out_bias=out_bias,
                                 encoder_cfg=DiSANConfig(d_e=4, d_h=3, dropout=0.0)))


def test_adadelta_takes_rho_and_eps_from_the_config(tmp_path):
    rho, eps, lr = 0.95, 1e-8, 0.5
    model = small_model()
    opt = make_optimizer(TrainConfig(task="sst5", out=str(tmp_path), rho=rho, eps=eps, lr=lr, weight_decay=0.0), model)
    w = model.out.linear.weight
    before = w.detach().clone()
    g = torch.randn_like(w)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    w.grad = g.clone()
    opt.step()
    # Adadelta's first step from zero accumulators: dx = sqrt(eps) / sqrt((1 - rho) g^2 + eps) * g
    expected = before - lr * math.sqrt(eps) / torch.sqrt((1 - rho) * g ** 2 + eps) * g
    assert torch.allclose(w.detach(), expected, rtol=1e-5, atol=1e-9)


def test_without_attention_decay_w1_and_w2_go_undecayed_and_the_other_matrices_keep_it():
    model = small_model()
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = {names[id(p)] for p in param_groups(model, 1e-4, attention=False)[0]["params"]}
    everything = {names[id(p)] for p in param_groups(model, 1e-4)[0]["params"]}
    assert everything - decayed == {f"encoder.{b}.{w}.weight" for b in ("fw", "bw") for w in ("w1", "w2")}
    assert {"encoder.fw.fc_h.linear.weight", "encoder.fw.fuse_s.linear.weight", "encoder.s2t.fc2.linear.weight",
            "fc.linear.weight", "out.linear.weight"} <= decayed


def test_a_head_without_logit_bias_saves_and_loads(tmp_path):
    model = small_model(out_bias=False)
    assert model.out.linear.bias is None
    vocab = Vocab.build([[f"w{i}" for i in range(8)]])
    checkpoint.save(tmp_path / "c", model, vocab, {"task": "t", "kind": "classify", "labels": ["a", "b", "c"]})
    loaded = disan.load(tmp_path / "c").model
    ids = torch.tensor([[2, 3, 4]])
    assert not loaded.cfg.out_bias and torch.equal(loaded(ids), model.eval()(ids))


# ---------------------------------------------------------------- item 2: steps, dev every N steps, resume

def without_seconds(history):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in history]


@pytest.mark.usefixtures("data_root")
@pytest.mark.parametrize("batching", ["bucketed", "random"])
def test_steps_evaluate_every_n_and_a_run_stopped_mid_epoch_resumes_to_the_same_result(batching, tmp_path, capsys):
    # 96 examples in batches of 32: 3 steps per epoch; dev at steps 2, 4, 6, 7
    settings = dict(steps=7, eval_every=2, patience=0, batching=batching)
    whole = train(tiny_trec(tmp_path / "whole", **settings), log=io.StringIO())
    assert [(r["step"], r["epoch"]) for r in whole["history"]] == [(2, 1), (4, 2), (6, 2), (7, 3)]
    assert whole["steps_run"] == 7 and "best_step" in whole
    done = []
    out = tmp_path / "cut"
    first = train(tiny_trec(out, **settings), progress=lambda e: e["event"] == "step" and done.append(e),
                  should_stop=lambda: len(done) == 5, log=io.StringIO())
    assert [r["step"] for r in first["history"]] == [2, 4]  # the state file stands at step 4, inside epoch 2
    resumed = train(tiny_trec(out, resume=True, **settings), log=io.StringIO())
    assert "resuming at step 4, epoch 2" in capsys.readouterr().err
    assert without_seconds(resumed["history"]) == without_seconds(whole["history"])
    assert resumed["test"] == whole["test"]
    a, b = disan.load(tmp_path / "whole").model.state_dict(), disan.load(out).model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.usefixtures("data_root")
@pytest.mark.parametrize("patience, evaluations", [(1, 2), (0, 5)])
def test_patience_counts_evaluations_and_zero_never_stops(tmp_path, monkeypatch, patience, evaluations):
    monkeypatch.setattr(train_module, "evaluate", lambda model, data: {"accuracy": 0.5, "n": len(data)})
    run = train(tiny_trec(tmp_path / "run", steps=5, eval_every=1, patience=patience), log=io.StringIO())
    assert len(run["history"]) == evaluations and run["best_step"] == 1


@pytest.mark.usefixtures("data_root")
def test_resume_takes_a_setting_the_state_file_lacks_as_its_default_and_refuses_old_state_files(tmp_path):
    out = tmp_path / "run"
    train(tiny_trec(out, epochs=1), log=io.StringIO())
    path = train_module.state_path(tiny_trec(out))
    state = torch.load(path, weights_only=True)
    del state["config"]["oov_init"]  # written before --oov-init existed
    torch.save(state, path)
    with pytest.raises(ValueError, match=r"other settings \(oov_init='uniform', not 'normal'\)"):
        train(tiny_trec(out, epochs=2, resume=True, oov_init="normal"), log=io.StringIO())
    assert len(train(tiny_trec(out, epochs=2, resume=True), log=io.StringIO())["history"]) == 2
    state = torch.load(path, weights_only=True)
    del state["batches"]
    torch.save(state, path)
    with pytest.raises(ValueError, match="earlier version"):
        train(tiny_trec(out, epochs=3, resume=True), log=io.StringIO())


# ---------------------------------------------------------------- item 9: batches


def test_random_batches_mix_lengths_cover_every_example_once_and_replay_from_a_seed():
    vocab = Vocab.build([["a"]])
    lengths = [1 + i % 40 for i in range(1000)]
    data = encode(vocab, [[["a"] * n] for n in lengths], [0] * len(lengths))

    def spread(chunks):  # mean over batches of (longest - shortest) length
        return sum(max(lengths[i] for i in c) - min(lengths[i] for i in c) for c in chunks) / len(chunks)

    bucketed = batch_indices(data, 64, True, random.Random(1))
    uniform = batch_indices(data, 64, True, random.Random(1), "random")
    assert sorted(i for c in uniform for i in c) == list(range(1000))
    assert [len(c) for c in uniform] == [64] * 15 + [40]
    assert spread(bucketed) < 5 and spread(uniform) > 30  # lengths 1..40: bucketed batches are near-uniform
    assert uniform == batch_indices(data, 64, True, random.Random(1), "random")
    with pytest.raises(ValueError, match="batching must be one of"):
        batch_indices(data, 64, True, random.Random(1), "sorted")
