"""Custom token2token masks through the model (the attention knockout of the Counterfactuals page)."""
import pytest
import torch

from disan.nn.heads import TextModel

from .conftest import make_model

pytestmark = pytest.mark.quick

IDS = torch.tensor([[2, 3, 4, 5, 6, 7], [8, 9, 10, 0, 0, 0]])  # the second sentence is padded


def with_kernel(model: TextModel, kernel: str) -> TextModel:
    """The same weights with the token2token path named (dense: the reference; fast: the kernel)."""
    for block in model.encoder.blocks:
        block.attention = kernel
    return model


def forbid(n: int, *edges: tuple[int, int]) -> torch.Tensor:
    """(n, n) bool, True everywhere except the (query j, key i) edges given."""
    allowed = torch.ones(n, n, dtype=torch.bool)
    for j, i in edges:
        allowed[j, i] = False
    return allowed


@torch.no_grad()
def test_the_model_accepts_custom_masks_of_every_form():
    model, _ = make_model()
    n = IDS.shape[1]
    plain = model.encode(IDS)
    shared = forbid(n, (4, 1), (5, 1))
    batched = shared.expand(2, n, n).clone()
    by_name = {"forward": shared}
    a, b, c = (model.encode(IDS, t2t_mask=m) for m in (shared, batched, by_name))
    assert torch.equal(a, b)
    assert not torch.allclose(a[0], plain[0])  # the first sentence attends differently
    assert torch.equal(a[1], plain[1])          # the second has only 3 tokens: queries 4, 5 are padding
    # the mapping touched only the forward block, and (4, 1) is a backward edge that the backward mask forbids anyway
    assert torch.equal(a, c)
    _, tr = model.encode(IDS, trace=True, t2t_mask={"backward": forbid(n, (0, 2))})
    assert not tr.backward.mask[0, 0, 2] and tr.backward.mask[0, 0, 3]
    assert torch.equal(tr.forward.mask[0], torch.tril(torch.ones(n, n, dtype=torch.bool), -1))


@torch.no_grad()
def test_the_kernel_and_the_dense_reference_agree_under_a_knockout():
    n = IDS.shape[1]
    allowed = forbid(n, *[(j, 2) for j in range(n)])  # every edge into token 2
    dense = with_kernel(make_model()[0], "dense").encode(IDS, t2t_mask=allowed)
    fast = with_kernel(make_model()[0], "fast").encode(IDS, t2t_mask=allowed)
    torch.testing.assert_close(fast, dense, rtol=1e-5, atol=1e-6)


@torch.no_grad()
def test_a_knocked_out_edge_gets_exactly_zero_and_its_row_is_renormalised():
    model, _ = make_model()
    _, before = model.encode(IDS, trace=True)
    _, after = model.encode(IDS, trace=True, t2t_mask={"forward": forbid(IDS.shape[1], (4, 1))})
    p0, p1 = before.forward.probs[0], after.forward.probs[0]  # (n, n, d) [j, i, k]
    assert torch.count_nonzero(p1[4, 1]) == 0
    assert p0[4, 1].min() > 0  # the edge had attention to lose
    torch.testing.assert_close(p1[4].sum(dim=0), torch.ones(p1.shape[-1]))
    # the other keys of row 4 keep their proportions: P'[4, i] = P[4, i] / (1 - P[4, 1])
    keys = [0, 2, 3]
    torch.testing.assert_close(p1[4, keys], p0[4, keys] / (1 - p0[4, 1]), rtol=1e-5, atol=1e-7)
    others = [j for j in range(IDS.shape[1]) if j != 4]
    assert torch.equal(p1[others], p0[others])
    assert torch.equal(after.backward.probs, before.backward.probs)


@pytest.mark.parametrize("kernel", ["dense", "fast"])
@torch.no_grad()
def test_knocking_out_nothing_changes_nothing(kernel):
    model = with_kernel(make_model()[0], kernel)
    n = IDS.shape[1]
    everything = torch.ones(n, n, dtype=torch.bool)
    assert torch.equal(model.encode(IDS, t2t_mask=everything), model.encode(IDS))
    assert torch.equal(model.encode(IDS, t2t_mask={}), model.encode(IDS))
    (_, a), (_, b) = model.encode(IDS, trace=True, t2t_mask=everything), model.encode(IDS, trace=True)
    for x, y in zip(a.blocks, b.blocks):
        assert torch.equal(x.probs, y.probs) and torch.equal(x.mask, y.mask) and torch.equal(x.u, y.u)


def test_bad_masks_are_refused_with_the_reason():
    model, _ = make_model()
    n = IDS.shape[1]
    with pytest.raises(ValueError, match="does not fit"):
        model.encode(IDS, t2t_mask=torch.ones(n + 1, n + 1, dtype=torch.bool))
    with pytest.raises(TypeError, match="bool"):
        model.encode(IDS, t2t_mask=torch.ones(n, n))
    with pytest.raises(ValueError, match="no DiSA block is named 'fw'"):
        model.encode(IDS, t2t_mask={"fw": forbid(n)})
    baseline, _ = make_model(encoder="bilstm")
    with pytest.raises(ValueError, match="bilstm encoder has no token2token attention"):
        baseline.encode(IDS, t2t_mask=forbid(n))

