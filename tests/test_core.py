"""The DiSAN core against the literal equations in tests/reference.py."""
import math
import shutil

import pytest
import torch

from disan.data.kinds import relatedness_score, relatedness_target
from disan.nn import attention
from disan.nn.attention import masked_softmax, token2token_dense, weighted_sum
from disan.nn.baselines import ENCODERS, build_encoder
from disan.nn.heads import ModelConfig, TextModel, count_parameters, param_groups
from disan.nn.kernels import token2token
from disan.nn.masks import (
    attention_mask,
    backward_mask,
    diag_disabled_mask,
    forward_mask,
)
from disan.nn.model import DiSANConfig, DiSANEncoder

from . import reference

CPP = pytest.param("cpp", marks=pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler"))


@pytest.fixture(autouse=True)
def _float64():
    """The equations are checked in float64, where allclose's default tolerance is meaningful."""
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(torch.float32)


def tiny_encoder(kernel="dense", activation="elu", d_e=4, d_h=3, seed=0, directions=("forward", "backward")):
    torch.manual_seed(seed)
    enc = DiSANEncoder(DiSANConfig(d_e=d_e, d_h=d_h, activation=activation, kernel=kernel,
                                   directions=directions, dropout=0.0))
    # non-zero biases so that every term of the equations is exercised
    for p in enc.parameters():
        if p.dim() == 1:
            torch.nn.init.uniform_(p, -0.5, 0.5)
    return enc.double().eval()


def test_masks_follow_the_axis_convention():
    f, b, g = forward_mask(4), backward_mask(4), diag_disabled_mask(4)
    for j in range(4):
        for i in range(4):
            assert f[j, i] == (i < j) and b[j, i] == (i > j) and g[j, i] == (i != j)
    pad = torch.tensor([[True, True, False]])
    m = attention_mask(pad, "diag")
    assert m.shape == (1, 3, 3)
    assert not m[0, :, 2].any() and not m[0, 2, :].any() and m[0, 0, 1] and m[0, 1, 0]
    custom = torch.tensor([[True, False, True]] * 3)
    assert torch.equal(attention_mask(pad, custom)[0], custom & pad[0][:, None] & pad[0][None, :])
    with pytest.raises(ValueError):
        attention_mask(pad, torch.ones(4, 4, dtype=torch.bool))


@pytest.mark.parametrize("activation", ["elu", "relu"])
@pytest.mark.parametrize("kernel", ["dense", CPP, "eager"])
def test_encoder_matches_the_literal_equations(kernel, activation):
    enc = tiny_encoder(kernel, activation, d_e=4, d_h=3)
    x = torch.randn(2, 5, 4, requires_grad=True)
    pad = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    out = enc(x, pad)
    for b, length in enumerate([5, 3]):
        fw, bw, P, ref_out = reference.disan(enc, x[b], length, activation)
        assert torch.allclose(out[b], ref_out)
        _, tr = enc(x[b:b + 1], pad[b:b + 1], trace=True)
        assert [t.name for t in tr.blocks] == ["forward", "backward"]
        for block, got in zip((fw, bw), tr.blocks):
            h, probs, s, gate, u = block
            assert torch.allclose(got.h[0, :length], h[:length])
            assert torch.allclose(got.probs[0], probs)
            assert torch.allclose(got.s[0], s)
            assert torch.allclose(got.gate[0, :length], gate[:length])
            assert torch.allclose(got.u[0], u)
        assert torch.allclose(tr.source2token.probs[0], P)
    # gradients of a scalar function of the output, w.r.t. the input and every parameter
    params = [x] + list(enc.parameters())
    got = torch.autograd.grad((out * torch.arange(out.numel()).view_as(out)).sum(), params)
    ref = torch.stack([reference.disan(enc, x[b], n, activation)[3] for b, n in enumerate([5, 3])])
    want = torch.autograd.grad((ref * torch.arange(ref.numel()).view_as(ref)).sum(), params)
    for g1, g2 in zip(got, want):
        assert torch.allclose(g1, g2)


def test_diag_disabled_blocks_match_the_literal_equations():
    enc = tiny_encoder("auto", directions=("diag", "diag"))
    x = torch.randn(1, 4, 4)
    first, second, _, ref_out = reference.disan(enc, x[0], 4)
    _, tr = enc(x, torch.ones(1, 4, dtype=torch.bool), trace=True)
    one, two = tr.blocks
    assert torch.allclose(one.probs[0], first[1]) and torch.allclose(two.probs[0], second[1])
    assert torch.allclose(tr.encoding[0], ref_out)
    assert (one.probs[0].diagonal(dim1=0, dim2=1) == 0).all()


def test_blocks_are_named_after_their_masks():
    cfg = DiSANConfig(d_e=4, d_h=3, dropout=0.0)
    x, pad = torch.randn(1, 3, 4), torch.ones(1, 3, dtype=torch.bool)
    disan, nodir = build_encoder("disan", cfg), build_encoder("disan-nodir", cfg)
    # the shipped checkpoints' keys, encoder.fw.* and encoder.bw.*, load unchanged
    assert {k.split(".")[0] for k in disan.state_dict()} == {"fw", "bw", "s2t"}
    assert {k.split(".")[0] for k in nodir.state_dict()} == {"diag1", "diag2", "s2t"}
    _, tr = disan(x, pad, trace=True)
    assert [(t.name, t.direction) for t in tr.blocks] == [("forward", "forward"), ("backward", "backward")]
    assert tr.forward is tr.blocks[0] and tr.backward is tr.blocks[1]
    _, tr = nodir(x, pad, trace=True)
    assert [(t.name, t.direction) for t in tr.blocks] == [("diag 1", "diag"), ("diag 2", "diag")]
    assert tr.forward is None and tr.backward is None
    assert [t.name for t in tr[0].blocks] == ["diag 1", "diag 2"]


@pytest.mark.parametrize("name", [n for n in ENCODERS if not n.startswith("disan")])
def test_encoders_without_disa_blocks_trace_none(name):
    enc = build_encoder(name, DiSANConfig(d_e=4, d_h=4, dropout=0.0)).eval()
    _, tr = enc(torch.randn(1, 3, 4), torch.ones(1, 3, dtype=torch.bool), trace=True)
    assert tr.blocks == () and tr.forward is None and tr.backward is None
    assert tr[0].blocks == () and tr[0].source2token.probs.shape[0] == 3


@pytest.mark.parametrize("name,allowed", [("disan", [lambda j, i: i < j, lambda j, i: i > j]),
                                          ("disan-nodir", [lambda j, i: i != j] * 2)])
def test_the_trace_keeps_the_mask_each_block_used_padding_included(name, allowed):
    enc = build_encoder(name, DiSANConfig(d_e=4, d_h=3, dropout=0.0)).eval()
    lengths = [5, 3, 1]
    pad = torch.arange(5)[None, :] < torch.tensor(lengths)[:, None]  # (3, 5)
    _, tr = enc(torch.randn(3, 5, 4), pad, trace=True)
    for block, rule in zip(tr.blocks, allowed):
        assert block.mask.dtype == torch.bool and block.mask.shape == (3, 5, 5)
        for b, n in enumerate(lengths):
            want = torch.tensor([[j < n and i < n and rule(j, i) for i in range(5)] for j in range(5)])
            assert torch.equal(block.mask[b], want)
            # the mask the block used: probabilities vanish outside it and sum to 1 in every row that has a key
            assert (block.probs[b][~want] == 0).all()
            rows = want.any(dim=1)
            assert torch.allclose(block.probs[b].sum(dim=1)[rows], torch.ones(int(rows.sum()), 3))
    for b, n in enumerate(lengths):
        for block, cut in zip(tr.blocks, tr[b].blocks):
            assert torch.equal(cut.mask, block.mask[b, :n, :n])


@pytest.mark.parametrize("kernel", [CPP, "eager"])
@pytest.mark.parametrize("structure", ["forward", "backward", "diag", "random"])
def test_faster_kernels_equal_dense_in_values_and_gradients(kernel, structure):
    torch.manual_seed(1)
    B, n, d = 3, 9, 4
    args = [torch.randn(B, n, d, requires_grad=True) for _ in range(3)]
    pad = torch.ones(B, n, dtype=torch.bool)
    pad[1, 5:] = False
    pad[2] = False
    if structure == "random":
        structure = torch.rand(B, n, n) > 0.6
    mask = attention_mask(pad, structure)
    s_ref, _ = token2token_dense(*args, mask)
    s_fast = token2token(*args, mask, kernel=kernel)
    assert torch.allclose(s_ref, s_fast)
    g = torch.randn_like(s_ref)
    for a, b in zip(torch.autograd.grad(s_ref, args, g), torch.autograd.grad(s_fast, args, g)):
        assert torch.allclose(a, b)
    assert torch.autograd.gradcheck(lambda *a: token2token(*a, mask, kernel=kernel), args)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_trace_makes_the_reference_probabilities_in_place_to_the_bit(dtype):
    torch.manual_seed(4)
    key, query, values = (torch.randn(3, 9, 5, dtype=dtype) * 4 for _ in range(3))
    pad = torch.ones(3, 9, dtype=torch.bool)
    pad[1, 6:] = False
    for direction in ("forward", "backward", "diag"):
        mask = attention_mask(pad, direction)
        # the reference, written out as the paper states it: c·tanh(·/c), softmax over the keys, masked
        logits = 5.0 * torch.tanh((key[:, None, :, :] + query[:, :, None, :]) / 5.0)
        expected = torch.softmax(logits.masked_fill(~mask[..., None], torch.finfo(dtype).min), dim=2) * mask[..., None]
        with torch.no_grad():
            s, probs = token2token_dense(key, query, values, mask)
        assert torch.equal(probs, expected)
        # s_j = sum_i P[j, i] values_i: a product summed in another order than the reference's, so equal within rounding
        assert torch.allclose(s, torch.einsum("bjid,bid->bjd", expected, values), rtol=1e-5, atol=1e-6)
        grad_key = key.clone().requires_grad_()  # with a gradient wanted: the reference itself, differentiable
        s_grad, probs_grad = token2token_dense(grad_key, query, values, mask)
        assert torch.equal(probs_grad.detach(), expected) and s_grad.requires_grad


@pytest.mark.parametrize("cells", [1, 60, 2**18])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_weighted_sum_is_the_reference_product_in_values_and_gradients(cells, dtype, monkeypatch):
    # cells: one query row at a time, 2 of 7 rows (a last chunk of 1), every row at once
    monkeypatch.setattr(attention, "PRODUCT_CELLS", cells)
    torch.manual_seed(5)
    probs = torch.rand(2, 7, 7, 4, dtype=dtype, requires_grad=True)
    values = torch.randn(2, 7, 4, dtype=dtype, requires_grad=True)
    # the reference, as the equation reads: s[b, j, k] = sum_i P[b, j, i, k] * values[b, i, k]
    expected = torch.stack([torch.stack([sum(probs[b, j, i] * values[b, i] for i in range(7)) for j in range(7)])
                            for b in range(2)])
    s = weighted_sum(probs, values)
    assert s.shape == (2, 7, 4) and s.dtype == dtype
    assert torch.allclose(s, expected, rtol=1e-5, atol=1e-6)
    g = torch.randn_like(s)
    for fast, ref in zip(torch.autograd.grad(s, (probs, values), g), torch.autograd.grad(expected, (probs, values), g)):
        assert torch.allclose(fast, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kernel", [CPP, "eager"])
def test_faster_kernels_in_float32_within_1e5_of_float64_reference(kernel):
    torch.manual_seed(2)
    args64 = [torch.randn(4, 30, 16, requires_grad=True) for _ in range(3)]
    args32 = [a.detach().float().requires_grad_() for a in args64]
    mask = attention_mask(torch.ones(4, 30, dtype=torch.bool), "forward")
    s64, _ = token2token_dense(*args64, mask)
    s32 = token2token(*args32, mask, kernel=kernel)
    assert torch.allclose(s32.double(), s64, atol=1e-5)
    g = torch.randn_like(s64)
    for a, b in zip(torch.autograd.grad(s64, args64, g), torch.autograd.grad(s32, args32, g.float())):
        assert torch.allclose(b.double(), a, atol=1e-5)


@pytest.mark.parametrize("kernel", ["dense", CPP, "eager"])
def test_training_keeps_nothing_of_size_n2_d_for_backward(kernel):
    """Every tensor saved for the backward pass of a training forward: only dense keeps a (B, n, n, d) one."""
    B, n, d = 2, 7, 5
    enc = DiSANEncoder(DiSANConfig(d_e=4, d_h=d, kernel=kernel, dropout=0.25)).train()
    x = torch.randn(B, n, 4, requires_grad=True)
    pad = torch.ones(B, n, dtype=torch.bool)
    pad[1, 4:] = False
    saved = []

    def pack(t):
        saved.append(tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = enc(x, pad)
    out.sum().backward()  # the graph is complete and runs
    assert saved and x.grad is not None
    plane = [shape for shape in saved if math.prod(shape) >= n * n * d]
    if kernel == "dense":
        assert (B, n, n, d) in plane
    else:
        assert plane == [], plane


@pytest.mark.parametrize("kernel", [CPP, "eager"])
def test_the_trace_gives_the_encoding_of_the_kernel(kernel):
    """trace=True runs the dense path (it needs P); its encoding is what the kernel computes."""
    enc = tiny_encoder(kernel, d_e=4, d_h=6, seed=4)
    x = torch.randn(3, 7, 4)
    pad = torch.ones(3, 7, dtype=torch.bool)
    pad[1, 3:] = False
    pad[2, 1:] = False
    out = enc(x, pad)
    traced, tr = enc(x, pad, trace=True)
    assert tr.forward.probs.shape == (3, 7, 7, 6)
    assert torch.allclose(traced, out) and torch.allclose(tr.encoding, out)


@pytest.mark.parametrize("c", [0.0, -5.0, math.inf, math.nan])
def test_c_must_be_finite_and_positive(c):
    with pytest.raises(ValueError, match="c .* finite number > 0"):
        DiSANConfig(c=c)


def test_unknown_kernel_is_rejected_by_the_config():
    with pytest.raises(ValueError, match="kernel must be one of"):
        DiSANConfig(kernel="fast")


@pytest.mark.parametrize("direction,later", [("forward", True), ("backward", False)])
def test_direction_hides_the_other_side(direction, later):
    enc = tiny_encoder("auto")
    block = enc.fw if direction == "forward" else enc.bw
    x = torch.randn(1, 6, 4)
    pos = 3
    y = x.clone()
    y[0, pos] = torch.randn(4)
    _, t1 = block(x, torch.ones(1, 6, dtype=torch.bool), trace=True)
    _, t2 = block(y, torch.ones(1, 6, dtype=torch.bool), trace=True)
    # forward: tokens before pos see nothing of it; backward: tokens after pos
    unaffected = slice(0, pos) if later else slice(pos + 1, 6)
    for name in ("s", "gate", "u"):
        assert torch.equal(getattr(t1, name)[0, unaffected], getattr(t2, name)[0, unaffected])
        assert not torch.allclose(getattr(t1, name)[0], getattr(t2, name)[0])


@pytest.mark.parametrize("name", list(ENCODERS))
def test_padding_and_batching_do_not_change_a_sentence(name):
    torch.manual_seed(3)
    enc = build_encoder(name, DiSANConfig(d_e=6, d_h=8, dropout=0.0)).double().eval()
    x = torch.randn(1, 4, 6)
    alone = enc(x, torch.ones(1, 4, dtype=torch.bool))
    batch = torch.randn(3, 7, 6)
    batch[1, :4] = x[0]
    pad = torch.ones(3, 7, dtype=torch.bool)
    pad[1, 4:] = False
    pad[2, 2:] = False
    batched = enc(batch, pad)
    assert torch.allclose(alone[0], batched[1], atol=1e-6)


def test_probabilities_sum_to_one_and_masked_entries_are_zero():
    enc = tiny_encoder("dense")
    pad = torch.tensor([[True] * 5, [True] * 2 + [False] * 3])
    _, tr = enc(torch.randn(2, 5, 4), pad, trace=True)
    for block in tr.blocks:
        mask = block.mask
        assert torch.equal(mask, attention_mask(pad, block.direction))
        assert (block.probs[~mask] == 0).all()
        sums = block.probs.sum(dim=2)  # (B, n_query, d)
        has_key = mask.any(dim=2)
        assert torch.allclose(sums[has_key], torch.ones_like(sums[has_key]))
        assert (sums[~has_key] == 0).all()
        assert (block.s[~has_key] == 0).all()
    assert torch.allclose(tr.source2token.probs.sum(dim=1), torch.ones(2, 6))
    assert (tr.source2token.probs[1, 2:] == 0).all()


@pytest.mark.parametrize("name", list(ENCODERS))
def test_degenerate_inputs_give_finite_outputs_and_gradients(name):
    enc = build_encoder(name, DiSANConfig(d_e=5, d_h=4, dropout=0.0)).double()
    x = torch.randn(3, 3, 5, requires_grad=True)
    pad = torch.tensor([[True, False, False], [False, False, False], [True, True, True]])
    out = enc(x, pad)
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(x.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in enc.parameters() if p.grad is not None)
    assert (out[1] == 0).all()  # a sentence with no token encodes to zeros
    one = enc(x[:1, :1], pad[:1, :1])  # a batch of one one-token sentence
    assert torch.isfinite(one).all()


def test_masked_softmax_with_no_valid_entry_has_zero_gradient():
    logits = torch.randn(2, 3, requires_grad=True)
    mask = torch.tensor([[True, False, True], [False, False, False]])
    p = masked_softmax(logits, mask, dim=1)
    p[:, 0].sum().backward()
    assert (p[1] == 0).all() and torch.isfinite(logits.grad).all() and (logits.grad[1] == 0).all()


# Table 1 of the paper: parameters of each SNLI model (encoder and head, without word embeddings).
TABLE_1 = {"additive": 0.45e6, "s2t": 0.54e6, "multihead": 1.98e6, "bilstm": 2.88e6, "disan-nodir": 2.35e6,
           "disan": 2.35e6}


@pytest.mark.parametrize("name", list(TABLE_1))
def test_parameter_counts_match_table_1(name):
    model = TextModel(ModelConfig(vocab_size=2, n_classes=3, kind="pair", encoder=name))
    total = count_parameters(model) - count_parameters(model.embed)
    assert abs(total - TABLE_1[name]) / TABLE_1[name] < 0.01
    if name == "disan":
        # the paper's own breakdown of DiSAN (d_e = d_h = 300): two DiSA blocks and source2token
        assert count_parameters(model.encoder) == 1_624_200
        assert count_parameters(model.encoder.fw) == count_parameters(model.encoder.bw) == 451_500
        assert count_parameters(model.encoder.s2t) == 721_200


def test_different_word_vector_and_hidden_sizes():
    enc = DiSANEncoder(DiSANConfig(d_e=50, d_h=300))
    out, tr = enc(torch.randn(2, 7, 50), torch.ones(2, 7, dtype=torch.bool), trace=True)
    assert out.shape == (2, 600) and tr[0].forward.probs.shape == (7, 7, 300)
    assert tr[0].source2token.probs.shape == (7, 600) and tr[0].forward.gate.shape == (7, 300)


def test_trace_off_keeps_nothing_and_dropout_never_touches_probabilities():
    enc = DiSANEncoder(DiSANConfig(d_e=4, d_h=3, dropout=0.5)).train()
    out = enc(torch.randn(2, 5, 4), torch.ones(2, 5, dtype=torch.bool))
    assert isinstance(out, torch.Tensor)
    _, tr = enc(torch.randn(2, 5, 4), torch.ones(2, 5, dtype=torch.bool), trace=True)
    sums = tr.forward.probs.sum(dim=2)[:, 1:]
    assert torch.allclose(sums, torch.ones_like(sums))


def test_init_and_l2_groups():
    model = TextModel(ModelConfig(vocab_size=11, n_classes=5, encoder_cfg=DiSANConfig(d_e=8, d_h=6)))
    decay, plain = param_groups(model, 1e-4)
    assert decay["weight_decay"] == 1e-4 and plain["weight_decay"] == 0.0
    assert all(p.dim() == 2 for p in decay["params"])
    assert any(p is model.embed.weight for p in plain["params"])
    assert all(p.dim() == 1 for p in plain["params"] if p is not model.embed.weight)
    w = model.encoder.fw.w1.weight
    bound = (6 / (w.shape[0] + w.shape[1])) ** 0.5
    assert w.abs().max() <= bound and w.abs().max() > bound / 2
    assert (model.encoder.fw.fc_h.linear.bias == 0).all() and (model.encoder.fw.b_f == 0).all()


def test_relatedness_target_and_score_are_consistent():
    scores = torch.tensor([1.0, 2.4, 3.0, 4.75, 5.0])
    p = relatedness_target(scores, 5)
    assert torch.allclose(p.sum(dim=1), torch.ones(5))
    assert torch.allclose(p @ torch.arange(1.0, 6.0), scores)
    assert torch.allclose(relatedness_score(p.log()), scores, atol=1e-6)


def test_dropout_keeps_the_expectation_and_is_off_in_eval():
    from disan.nn.model import Dropout
    torch.manual_seed(0)
    drop = Dropout(0.25).train()
    x = torch.ones(200_000)
    y = drop(x)
    kept = y != 0
    assert abs(kept.double().mean().item() - 0.75) < 0.01
    assert torch.allclose(y[kept], torch.full_like(y[kept], 1 / 0.75))
    assert abs(y.mean().item() - 1.0) < 0.01
    assert torch.equal(drop.eval()(x), x)


@pytest.mark.quick
def test_uniform_attention_is_exactly_uniform_over_each_querys_valid_keys():
    # disan-uniform: P[j, i] = 1 / (keys j may attend) for those keys, 0 elsewhere, for every feature;
    # s_j the plain mean of h_i over them (hand count: forward, query 3 of a 4-token sentence has keys 0, 1, 2)
    enc = build_encoder("disan-uniform", DiSANConfig(d_e=4, d_h=3, dropout=0.0)).eval()
    pad = torch.tensor([[True] * 5, [True] * 4 + [False]])
    _, tr = enc(torch.randn(2, 5, 4), pad, trace=True)
    forward, backward = tr.blocks
    assert torch.equal(forward.probs[1, 3, :, 0], torch.tensor([1 / 3, 1 / 3, 1 / 3, 0.0, 0.0]))
    assert torch.equal(backward.probs[1, 1, :, 2], torch.tensor([0.0, 0.0, 0.5, 0.5, 0.0]))
    for block in tr.blocks:
        for b in range(2):
            for j in range(5):
                keys = [i for i in range(5) if block.mask[b, j, i]]
                want = torch.zeros(5, 3)
                want[keys] = 1 / len(keys) if keys else 0.0
                assert torch.equal(block.probs[b, j], want)
                mean = block.h[b, keys].mean(dim=0) if keys else torch.zeros(3)
                assert torch.allclose(block.s[b, j], mean, atol=1e-6)
    # the same parameters as DiSAN, and the untraced path gives the traced encoding
    assert {k for k in enc.state_dict()} == {k for k in build_encoder("disan", DiSANConfig(d_e=4, d_h=3)).state_dict()}
    x = torch.randn(2, 5, 4)
    assert torch.allclose(enc(x, pad), enc(x, pad, trace=True)[0], atol=1e-6)
