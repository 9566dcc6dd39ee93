"""The project's gradient × input and integrated gradients against captum's (zero baseline, float64)."""
import pytest
import torch
from captum.attr import InputXGradient, IntegratedGradients

from disan.data.text import PAD_ID
from disan.analyses.attribution import attribute
from disan.inspect.pipeline import Pipeline

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
