"""The word embedding with frozen float16 rows: values and gradients against one plain table,
what training changes, and how a checkpoint stores it."""
import json

import pytest
import torch
from safetensors import safe_open
from torch.nn import functional as F

from disan.data.text import Vocab
from disan.nn import checkpoint
from disan.nn.heads import ModelConfig, TextModel, WordEmbedding
from disan.nn.model import DiSANConfig

pytestmark = pytest.mark.quick

VOCAB, FROZEN, D = 12, 5, 4


def embedding(seed=0) -> tuple[WordEmbedding, torch.Tensor]:
    torch.manual_seed(seed)
    table = torch.randn(VOCAB, D)
    table[0] = 0
    emb = WordEmbedding(VOCAB, D, FROZEN)
    emb.set_vectors(table)
    return emb, table


def test_lookup_and_gradients_equal_one_table_whose_last_rows_are_fixed():
    emb, table = embedding()
    # the model computes with the float16 values of the frozen rows
    reference_table = torch.cat([table[: VOCAB - FROZEN], table[VOCAB - FROZEN:].half().float()]).requires_grad_()
    ids = torch.tensor([[0, 1, 6, 7, 11, 3], [11, 8, 2, 0, 0, 0]])
    weights = torch.randn(2, 6, D)
    out = emb(ids)
    expected = F.embedding(ids, reference_table, padding_idx=0)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    (out * weights).sum().backward()
    (expected * weights).sum().backward()
    torch.testing.assert_close(emb.weight.grad, reference_table.grad[: VOCAB - FROZEN], rtol=0, atol=1e-6)
    assert not emb.weight.grad[0].any()                              # padding learns nothing
    assert reference_table.grad[VOCAB - FROZEN:].abs().sum() > 0     # ... and frozen rows were used
    assert [name for name, _ in emb.named_parameters()] == ["weight"] and emb.frozen.dtype == torch.float16


def test_a_training_step_leaves_frozen_rows_and_padding_unchanged():
    emb, _ = embedding()
    before_frozen, before_weight = emb.frozen.clone(), emb.weight.detach().clone()
    opt = torch.optim.Adadelta(emb.parameters(), lr=0.5)
    emb(torch.tensor([[1, 2, 9, 10]])).pow(2).sum().backward()
    opt.step()
    assert torch.equal(emb.frozen, before_frozen) and torch.equal(emb.weight[0], before_weight[0])
    assert not torch.equal(emb.weight[1], before_weight[1])


def test_without_frozen_rows_it_is_a_plain_embedding():
    emb = WordEmbedding(VOCAB, D)
    torch.nn.init.normal_(emb.weight)
    ids = torch.tensor([[3, 0, 11]])
    assert not hasattr(emb, "frozen")
    torch.testing.assert_close(emb(ids), F.embedding(ids, emb.weight), rtol=0, atol=0)


@pytest.mark.parametrize("frozen", [-1, VOCAB - 1])
def test_padding_and_unknown_cannot_be_frozen(frozen):
    with pytest.raises(ValueError, match="frozen_vocab"):
        ModelConfig(vocab_size=VOCAB, n_classes=2, frozen_vocab=frozen)


def test_a_checkpoint_stores_the_embedding_at_half_precision_and_loads_what_it_stored(tmp_path):
    torch.manual_seed(1)
    words = [f"w{i}" for i in range(VOCAB - 2)]
    vocab = Vocab.build([words])
    cfg = ModelConfig(vocab_size=VOCAB, n_classes=3, d_fc=6, frozen_vocab=FROZEN,
                      encoder_cfg=DiSANConfig(d_e=D, d_h=5, dropout=0.0))
    model = TextModel(cfg).eval()
    model.embed.set_vectors(torch.randn(VOCAB, D))
    checkpoint.save(tmp_path / "m", model, vocab, {"task": "t", "kind": "classify", "labels": ["a", "b", "c"]})
    with safe_open(str(tmp_path / "m" / "model.safetensors"), "pt") as f:
        assert f.get_tensor("embed.weight").dtype == f.get_tensor("embed.frozen").dtype == torch.float16
        assert all(f.get_tensor(k).dtype == torch.float32 for k in f.keys() if not k.startswith("embed."))
    loaded, _, config, _ = checkpoint.load(tmp_path / "m")
    assert config["model"]["frozen_vocab"] == FROZEN and loaded.embed.weight.dtype == torch.float32
    torch.testing.assert_close(loaded.embed.weight, model.embed.weight.half().float(), rtol=0, atol=0)
    ids = torch.tensor([[2, 5, 9, 11]])
    model.embed.weight.data = model.embed.weight.data.half().float()
    torch.testing.assert_close(loaded(ids), model(ids), rtol=0, atol=0)


def test_a_checkpoint_without_frozen_rows_still_loads(make_checkpoint):
    """Checkpoints written before the frozen rows existed have no frozen_vocab and one float32 table."""
    path = make_checkpoint()
    config = json.loads((path / "config.json").read_text())
    del config["model"]["frozen_vocab"]
    (path / "config.json").write_text(json.dumps(config))
    model, vocab, _, _ = checkpoint.load(path)
    assert model.cfg.frozen_vocab == 0 and model.embed.weight.shape[0] == len(vocab)
