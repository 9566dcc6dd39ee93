"""The project's gradient × input and integrated gradients against captum's (zero baseline, float64), and captum's
methods as explanations of the registry (disan.analyses.explainers) against the same computed by hand."""
import numpy as np
import pytest
import torch
from captum.attr import InputXGradient, IntegratedGradients

from disan.data.text import PAD_ID
from disan.analyses import explainers as E
from disan.analyses.gradients import attribute
from disan.inspect.pipeline import Pipeline
from disan.nn.hooks import recorded

from .conftest import LABELS, make_model

INPUTS = {"classify": "the glass bottle is big", "pair": ("a man pouring tea", "the restaurant is about to close"),
          "relatedness": ("a biker", "the man is pouring tea")}
STEPS = 16


@pytest.mark.parametrize("kind", list(INPUTS))
def test_gradient_input_and_integrated_gradients_equal_captums(kind):
    model, vocab = make_model(kind)
    pipe = Pipeline(model.double(), vocab, {"labels": LABELS[kind]}, {})
    sentences = pipe.trace(INPUTS[kind]).sentences
    ours = attribute(pipe, sentences, STEPS)
    ids = [pipe.ids([s.tokens]) for s in sentences]
    pads = [i != PAD_ID for i in ids]
    x = tuple(model.embed(i).detach().requires_grad_() for i in ids)      # (1, n_k, d_e) each

    def followed(*x):
        """The output the project follows, of word vectors (m, n_k, d_e): class probabilities (captum takes the
        target's column), or the relatedness score."""
        logits = model.head(*(model.encoder(e, p.expand(len(e), -1)) for e, p in zip(x, pads)))
        return model.kind.read(logits) if model.kind.scored else logits.softmax(dim=-1)

    target = None if model.kind.scored else int(model.kind.read(model(*ids))[0])
    # captum's riemann_trapezoid weighs n points by 1/n with halved ends: the project's steps + 1 points
    # weigh 1/steps, so captum's sums are scaled by (steps + 1) / steps
    integrated = IntegratedGradients(followed).attribute(x, baselines=tuple(torch.zeros_like(e) for e in x),
                                                         target=target, n_steps=STEPS + 1,
                                                         method="riemann_trapezoid")
    gradient_input = InputXGradient(followed).attribute(x, target=target)
    for k in range(len(sentences)):
        torch.testing.assert_close(torch.as_tensor(ours.integrated[k]),
                                   integrated[k].sum(dim=-1)[0] * (STEPS + 1) / STEPS, rtol=0, atol=1e-5)
        torch.testing.assert_close(torch.as_tensor(ours.gradient_input[k]), gradient_input[k].sum(dim=-1)[0],
                                   rtol=0, atol=1e-5)
    assert any(abs(a).max() > 1e-3 for a in ours.integrated)  # not equal by being zero


# ---------------------------------------------------------------- captum's methods as registered explanations

def explained(pipe, text, name: str) -> dict:
    """The registry's explanation ``name`` of one input: its scores by block (None: not per block), per sentence."""
    batch = E.Batch(pipe, E.prepare(pipe, [text]), [0])
    return E.EXPLAINERS[name].scores(batch)[0]


def followed(model, logits, target):
    """f of logits (1, K): the target class's probability, or the relatedness score."""
    return model.kind.read(logits)[0] if target is None else logits.softmax(dim=-1)[0, target]


@pytest.mark.parametrize("kind", list(INPUTS))
def test_the_registered_saliency_is_the_gradients_magnitude_summed_over_the_embedding(kind):
    model, vocab = make_model(kind)
    pipe = Pipeline(model.double(), vocab, {"labels": LABELS[kind]}, {})
    assert E.EXPLAINERS["saliency"].cost == E.EXPENSIVE and "saliency" not in E.on_pages()
    sentences = pipe.trace(INPUTS[kind]).sentences
    ids = [pipe.ids([s.tokens]) for s in sentences]
    x = [model.embed(i).detach().requires_grad_() for i in ids]
    target = None if model.kind.scored else int(model.kind.read(model(*ids))[0])
    out = followed(model, model.head(*(model.encoder(e, i != PAD_ID) for e, i in zip(x, ids))), target)
    grads = torch.autograd.grad(out, x)
    got = explained(pipe, INPUTS[kind], "saliency")[None]
    for k, g in enumerate(grads):
        np.testing.assert_allclose(got[k], g.abs().sum(dim=-1)[0].numpy(), rtol=0, atol=1e-9)
    assert any(s.max() > 1e-4 for s in got)  # not equal by being zero


@pytest.mark.parametrize("kind", list(INPUTS))
def test_the_registered_attention_ig_is_a_hand_computed_path_from_uniform_attention(kind):
    model, vocab = make_model(kind)
    model.eval()
    pipe = Pipeline(model.double(), vocab, {"labels": LABELS[kind]}, {})
    assert E.EXPLAINERS["attention IG"].cost == E.EXPENSIVE
    sentences = pipe.trace(INPUTS[kind]).sentences
    ids = [pipe.ids([s.tokens]) for s in sentences]
    x = [model.embed(i).detach() for i in ids]
    with torch.no_grad():
        encodings = [model.encoder(e, i != PAD_ID) for e, i in zip(x, ids)]
        target = None if model.kind.scored else int(model.kind.read(model.head(*encodings))[0])
    got = explained(pipe, INPUTS[kind], "attention IG")
    nodes, weights = np.polynomial.legendre.leggauss(E.ATTENTION_STEPS)  # on [-1, 1]: moved to [0, 1]
    for block in model.encoder.blocks:
        for k in range(len(ids)):
            def f(probs=None):
                """f with sentence k's P in this block replaced by ``probs`` (None: the model's own)."""
                handle = block.hook_attention.register_forward_hook(lambda m, a, out: probs)
                try:
                    encs = list(encodings)
                    encs[k] = model.encoder(x[k], ids[k] != PAD_ID)
                    return followed(model, model.head(*encs), target)
                finally:
                    handle.remove()

            with recorded({"P": block.hook_attention, "mask": block.hook_mask}) as seen:
                f()
            P, mask = seen["P"].detach(), seen["mask"]
            U = (mask / mask.sum(dim=-1, keepdim=True).clamp(min=1)).to(P.dtype)[..., None].expand_as(P)
            mean_gradient = torch.zeros_like(P)
            for node, weight in zip(nodes, weights):
                point = (U + (node + 1) / 2 * (P - U)).requires_grad_()
                mean_gradient += weight / 2 * torch.autograd.grad(f(point), point)[0]
            want = ((P - U) * mean_gradient).sum(dim=(1, 3))[0]
            np.testing.assert_allclose(got[block.name][k], want.numpy(), rtol=1e-6, atol=1e-9)
            # completeness: the cells' attributions add up to f(P) − f(U), here to the quadrature's error
            with torch.no_grad():
                assert got[block.name][k].sum() == pytest.approx(float(f(P) - f(U)), abs=1e-6)
    assert any(abs(s).max() > 1e-6 for scores in got.values() for s in scores)
