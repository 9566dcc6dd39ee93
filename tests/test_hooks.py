"""Hook points: read and replace P, F and source2token's attention inside the model; the trace is what they output."""
import pytest
import torch

from disan.inspect.pipeline import Pipeline
from disan.nn import attention, kernels
from disan.nn.attention import uniform_probs
from disan.nn.baselines import build_encoder, sinusoidal_positions
from disan.nn.hooks import hook_points
from disan.nn.model import DiSANConfig, DiSANEncoder

from . import reference
from .conftest import LABELS, make_model

CPP = pytest.param("cpp", marks=pytest.mark.skipif(not kernels.cpp_ready(wait=True), reason="no C++ kernel here"))
PATHS = ["dense", "eager", CPP]  # the dense path, and the fast ones that never make P
BLOCK_POINTS = ("hook_h", "hook_mask", "hook_attention", "hook_s", "hook_gate", "hook_u")


def encoder(kernel: str, seed: int = 0) -> DiSANEncoder:
    torch.manual_seed(seed)
    return DiSANEncoder(DiSANConfig(d_e=4, d_h=5, dropout=0.0, kernel=kernel)).double().eval()


def batch(seed: int = 1):
    """Three sentences of 6, 4 and 1 tokens: padding, and a query without any key."""
    x = torch.randn(3, 6, 4, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    pad = torch.tensor([[True] * 6, [True] * 4 + [False] * 2, [True] + [False] * 5])
    return x, pad


def hooked(model, names, fn=None):
    """Register ``fn`` (default: keep the output) on the named hook points; (what they output, handles)."""
    seen, points = {}, hook_points(model)

    def make(name):
        def hook(module, args, output):
            seen[name] = output
            return None if fn is None else fn(name, output)
        return hook
    return seen, [points[name].register_forward_hook(make(name)) for name in names]


@pytest.mark.quick
def test_every_encoder_names_its_hook_points_alike():
    cfg = DiSANConfig(d_e=4, d_h=4, dropout=0.0)
    disan = list(hook_points(build_encoder("disan", cfg)))
    assert disan == [f"{b}.{p}" for b in ("fw", "bw") for p in BLOCK_POINTS] + ["s2t.hook_attention", "hook_encoding"]
    assert list(hook_points(build_encoder("disan-nodir", cfg)))[0] == "diag1.hook_h"
    for name in ("bilstm", "s2t"):
        assert list(hook_points(build_encoder(name, cfg))) == ["hook_encoding", "s2t.hook_attention"], name
    assert list(hook_points(build_encoder("multihead", cfg))) == ["hook_encoding", "hook_attention",
                                                                   "s2t.hook_attention"]
    assert list(hook_points(build_encoder("additive", cfg))) == ["hook_attention", "hook_encoding"]


@pytest.mark.parametrize("kernel", PATHS)
def test_hooked_attention_gates_and_source2token_equal_the_trace(kernel):
    enc = encoder(kernel)
    x, pad = batch()
    _, trace = enc(x, pad, trace=True)
    names = ["fw.hook_attention", "bw.hook_attention", "fw.hook_gate", "bw.hook_gate", "s2t.hook_attention"]
    seen, handles = hooked(enc, names)
    with torch.no_grad():
        out = enc(x, pad)
    for h in handles:
        h.remove()
    for block in trace.blocks:
        short = "fw" if block.name == "forward" else "bw"
        torch.testing.assert_close(seen[f"{short}.hook_attention"], block.probs, rtol=0, atol=1e-6)
        torch.testing.assert_close(seen[f"{short}.hook_gate"], block.gate, rtol=0, atol=1e-6)
    torch.testing.assert_close(seen["s2t.hook_attention"], trace.source2token.probs, rtol=0, atol=1e-6)
    torch.testing.assert_close(out, trace.encoding, rtol=0, atol=1e-6)
    # the padded queries' rows are zero, and a query without any key attends nothing
    assert (seen["fw.hook_attention"][1, 4:] == 0).all() and (seen["fw.hook_attention"][:, 0] == 0).all()


@pytest.mark.parametrize("kernel", ["eager", CPP])
def test_gates_read_on_the_fast_path_equal_the_trace_and_p_is_never_made(kernel, monkeypatch):
    enc = encoder(kernel)
    x, pad = batch()
    _, trace = enc(x, pad, trace=True)
    made = []
    monkeypatch.setattr("disan.nn.model.token2token_probs", lambda *a: made.append(a))
    seen, _ = hooked(enc, ["fw.hook_gate", "bw.hook_gate", "fw.hook_s", "s2t.hook_attention"])
    with torch.no_grad():
        enc(x, pad)
        _, tokens = enc(x, pad, trace="tokens")
    assert made == [] and tokens.forward.probs is None
    torch.testing.assert_close(seen["fw.hook_gate"], trace.forward.gate, rtol=0, atol=1e-6)
    torch.testing.assert_close(seen["bw.hook_gate"], trace.backward.gate, rtol=0, atol=1e-6)
    torch.testing.assert_close(seen["s2t.hook_attention"], trace.source2token.probs, rtol=0, atol=1e-6)


@pytest.mark.parametrize("kernel", PATHS)
def test_without_a_hook_s_is_what_the_kernel_returns_bit_for_bit(kernel):
    """What a block computes with nothing on hook_attention is the kernel's s (the dense path's, for "dense"),
    from the block's own h and mask: nothing is added between the kernel and the rest of the block."""
    enc = encoder(kernel)
    x, pad = batch()
    seen, _ = hooked(enc, [f"{b}.{p}" for b in ("fw", "bw") for p in ("hook_h", "hook_mask", "hook_s")])
    with torch.no_grad():
        out = enc(x, pad)
        for short in ("fw", "bw"):
            block = getattr(enc, short)
            h, mask = seen[f"{short}.hook_h"], seen[f"{short}.hook_mask"]
            key, query = torch.nn.functional.linear(h, torch.cat([block.w1.weight, block.w2.weight])).split(5, dim=-1)
            query = query + block.b1
            assert torch.equal(seen[f"{short}.hook_s"], kernels.token2token(key, query, h, mask, block.c, kernel))
    # and the dense trace, which makes P, gives the dense path's encoding bit for bit
    if kernel == "dense":
        assert torch.equal(enc(x, pad, trace=True)[0], out)


def random_attention(mask: torch.Tensor, d: int, seed: int) -> torch.Tensor:
    """A P (B, n, n, d) that sums to 1 over each query's valid keys, for every feature, and is 0 elsewhere."""
    w = torch.rand(*mask.shape, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    w = w * mask[..., None]
    return w / w.sum(dim=2, keepdim=True).clamp_min(1e-12)


@pytest.mark.parametrize("kernel", PATHS)
def test_a_replaced_attention_or_gate_gives_what_the_equations_give(kernel):
    enc = encoder(kernel)
    x, pad = batch()
    lengths = pad.sum(dim=1)
    _, trace = enc(x, pad, trace=True)
    new_p = random_attention(trace.forward.mask, 5, seed=2)
    new_f = torch.rand(3, 6, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    changes = {"fw.hook_attention": new_p, "bw.hook_gate": new_f}
    _, handles = hooked(enc, list(changes), lambda name, output: changes[name])
    with torch.no_grad():
        out, after = enc(x, pad, trace=True)
    for h in handles:
        h.remove()
    for b, n in enumerate(lengths.tolist()):
        replaced = {"forward": {"probs": new_p[b]}, "backward": {"gate": new_f[b]}}
        fw, bw, _, want = reference.disan(enc, x[b], n, replaced=replaced)
        torch.testing.assert_close(out[b], want)
        torch.testing.assert_close(after.forward.s[b], fw[2])  # s = P′h
        torch.testing.assert_close(after.backward.u[b], bw[4])  # u from F′
    assert torch.equal(after.forward.probs, new_p) and torch.equal(after.backward.gate, new_f)


def test_a_replaced_attention_is_differentiable():
    enc = encoder("eager")
    x, pad = batch()
    _, trace = enc(x, pad, trace=True)
    p = trace.forward.probs.detach().clone().requires_grad_()
    handle = enc.fw.hook_attention.register_forward_hook(lambda module, args, output: p)
    enc(x, pad).sum().backward()
    handle.remove()
    assert p.grad is not None and p.grad.abs().sum() > 0
    assert (p.grad[1, 4:] == 0).all()  # padded queries reach nothing


@pytest.mark.quick
def test_the_switch_makes_p_without_a_forward_hook():
    enc = encoder("eager")
    x, pad = batch()
    made = []
    point = enc.fw.hook_attention
    real = attention.token2token_probs

    def count(*args):
        made.append(1)
        return real(*args)
    with pytest.MonkeyPatch.context() as m:
        m.setattr("disan.nn.model.token2token_probs", count)
        enc(x, pad)
        assert made == [] and not point.hooked
        point.active = True
        out = enc(x, pad)
        assert made == [1] and point.hooked
    torch.testing.assert_close(out, enc(x, pad), rtol=0, atol=1e-12)


def tiny_pipe(kind: str = "classify") -> Pipeline:
    model, vocab = make_model(kind)
    return Pipeline(model, vocab, {"labels": LABELS[kind]}, {})


@pytest.mark.quick
def test_an_unknown_hook_point_is_refused_with_the_list_of_them():
    pipe = tiny_pipe()
    with pytest.raises(ValueError, match=r"'encoder.fw.hook_attn'.*encoder\.fw\.hook_h, .*encoder\.hook_encoding"):
        with pipe.hooks({"encoder.fw.hook_attn": print}):
            pass
    with pytest.raises(ValueError, match="no hook point is named 'encoder.gate'"):
        pipe.run_with_cache("the man", ["encoder.gate"])


def test_pipe_hooks_tell_the_sides_apart_and_replace_what_the_model_goes_on_from():
    pipe = tiny_pipe("pair")
    pair = ("the man is pouring tea", "a biker")
    before = pipe.predict([pair])[0]
    sides = []

    def uniform(probs, site):
        sides.append(site)
        return uniform_probs(probs.sum(dim=-1) > 0, probs.dtype)[..., None].expand_as(probs)

    with pipe.hooks({"encoder.fw.hook_attention": uniform}):
        after = pipe.predict([pair])[0]
    assert [s.side for s in sides] == ["premise", "hypothesis"]
    assert {s.name for s in sides} == {"encoder.fw.hook_attention"}
    assert after.probs != before.probs
    assert pipe.predict([pair])[0] == before and not pipe.model.encoder.fw.hook_attention.hooked  # hooks removed


def test_run_with_cache_gives_every_hook_points_output_as_the_trace_has_it():
    pipe = tiny_pipe()
    prediction, cache = pipe.run_with_cache("the glass bottle is big")
    trace = pipe.trace("the glass bottle is big")
    assert prediction == trace.prediction and list(cache) == list(pipe.hook_points)
    sentence = trace.sentence.trace
    torch.testing.assert_close(cache["encoder.fw.hook_attention"][0], sentence.forward.probs, rtol=0, atol=1e-6)
    torch.testing.assert_close(cache["encoder.bw.hook_gate"][0], sentence.backward.gate, rtol=0, atol=1e-6)
    torch.testing.assert_close(cache["encoder.s2t.hook_attention"][0], sentence.source2token.probs, rtol=0, atol=1e-6)
    _, pair = tiny_pipe("pair").run_with_cache(("the man", "a biker is big"), ["encoder.hook_encoding"])
    assert list(pair) == ["premise/encoder.hook_encoding", "hypothesis/encoder.hook_encoding"]


@pytest.mark.quick
def test_threads_sharing_one_model_each_get_their_own_trace_and_intervention():
    """The app's sessions trace one cached model in threads of their own: what one thread's trace records, or
    its intervention replaces, must not be another's forward pass running meanwhile (sentences of other
    lengths then mixed their shapes into each other's traces)."""
    import threading

    from disan.analyses.faithfulness import intervened_encoding, uniform_like
    model, vocab = make_model()
    ids = {n: torch.tensor([vocab.encode((["the", "glass", "bottle", "is", "big"] * 8)[:n])]) for n in (3, 7, 12)}
    alone = {n: model.encoder(model.embed(i), i != 0, trace=True)[1] for n, i in ids.items()}
    intervened = {n: intervened_encoding(model, i, "forward", uniform_like)[0] for n, i in ids.items()}
    plain = {n: model.encode(i) for n, i in ids.items()}
    failures, start = [], threading.Barrier(3)

    def work(n):
        start.wait()
        for round_ in range(30):
            with torch.no_grad():
                if round_ % 3 == 0:
                    trace = model.encoder(model.embed(ids[n]), ids[n] != 0, trace=True)[1]
                    same = all(torch.equal(a.probs, b.probs) and torch.equal(a.gate, b.gate)
                               for a, b in zip(trace.blocks, alone[n].blocks))
                elif round_ % 3 == 1:
                    # the other block may take the dense path while another thread hooks it: equal to rounding
                    again = intervened_encoding(model, ids[n], "forward", uniform_like)[0]
                    same = torch.allclose(again, intervened[n], atol=1e-6)
                else:
                    same = torch.allclose(model.encode(ids[n]), plain[n], atol=1e-6)
            if not same:
                failures.append((n, round_))

    threads = [threading.Thread(target=work, args=(n,)) for n in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def test_the_multihead_attention_is_read_and_replaced_at_its_hook_point():
    torch.manual_seed(0)
    enc = build_encoder("multihead", DiSANConfig(d_e=4, d_h=8, dropout=0.0)).double().eval()
    x, pad = batch()
    with torch.no_grad():
        plain = enc(x, pad)
        seen, handles = hooked(enc, ["hook_attention"])
        read = enc(x, pad)
        for h in handles:
            h.remove()
    torch.testing.assert_close(read, plain, rtol=0, atol=0)  # reading changes nothing
    probs = seen["hook_attention"]
    assert probs.shape == (3, 6, 6, enc.heads)
    # rows are queries j: each real query's attention over real keys i sums to 1 in every head; padding gets none
    torch.testing.assert_close(probs[1, :4, :4].sum(dim=1), torch.ones(4, enc.heads, dtype=torch.float64))
    assert (probs[1, :, 4:] == 0).all()
    # the same attention recomputed in the test, head by head, from the encoder's own projections
    q, k, v = enc.qkv(x + sinusoidal_positions(6, 4, x.device).to(x.dtype)).view(3, 6, 3, enc.heads, -1).unbind(2)
    logits = torch.einsum("bjhd,bihd->bjih", q, k) / q.shape[-1] ** 0.5
    logits = logits.masked_fill(~(pad[:, :, None] & pad[:, None, :])[..., None], float("-inf"))
    expected = torch.nan_to_num(torch.softmax(logits, dim=2))
    torch.testing.assert_close(probs[:2], expected[:2].detach())
    # a uniform replacement over each query's keys changes the encoding, and the model goes on from it
    def uniform(name, p):
        real = (p.sum(dim=2, keepdim=True) > 0).to(p.dtype) * (pad[:, None, :, None]).to(p.dtype)
        return real / real.sum(dim=2, keepdim=True).clamp(min=1)
    with torch.no_grad():
        _, handles = hooked(enc, ["hook_attention"], uniform)
        changed = enc(x, pad)
        for h in handles:
            h.remove()
    assert not torch.allclose(changed, plain)
