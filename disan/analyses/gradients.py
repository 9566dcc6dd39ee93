"""Gradient attributions of the followed output (the probability of the predicted class; the expected score
for relatedness) to each token, summed over the embedding dimensions:

* gradient × input, (df/dx_i) · x_i;
* integrated gradients (Sundararajan et al. 2017), (x_i − x'_i) · the mean gradient on the straight path
  from the baseline x' (zero word vectors) to x, by the trapezoidal rule with ``steps`` intervals. They
  sum to f(x) − f(x') up to the quadrature error (completeness): :func:`attribute` takes a number of steps,
  :func:`integrated_gradients` the fewest of :data:`IG_STEPS` whose completeness gap is under
  :data:`COMPLETENESS`.

Both are explanations of :mod:`disan.analyses.explainers`, under the names :data:`GRADIENT_INPUT` and
:data:`INTEGRATED`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from disan.data.batching import BUDGET, length_batches
from disan.data.text import PAD_ID
from disan.analyses.choices import STEPS
from disan.inspect.pipeline import SentenceTrace

GRADIENT_INPUT = "gradient × input"
INTEGRATED = "integrated gradients"
IG_STEPS = (8, 16, 32, 64, 128, 256)  # integrated gradients takes the first whose completeness gap is small;
                                      # each doubles the one before (the points are reused)
IG_POINTS = 512  # points on the integrated-gradients paths per batch: several inputs share one backward pass
COMPLETENESS = 0.01


@dataclass
class Attribution:
    """Per-token attributions of one input (one or two sentences) to the followed output."""
    tokens: list[list[str]]          # per sentence
    integrated: list[np.ndarray]     # per sentence (n,)
    gradient_input: list[np.ndarray]  # per sentence (n,)
    target: str | None               # the label of the class whose probability is followed; None: the score
    value: float                     # f(x)
    baseline: float                  # f(x') with zero word vectors
    steps: int

    @property
    def completeness_gap(self) -> float:
        """(sum of integrated gradients - (f(x) - f(x'))) / |f(x) - f(x')|: the quadrature's relative error."""
        total = sum(float(a.sum()) for a in self.integrated)
        delta = self.value - self.baseline
        return (total - delta) / abs(delta) if delta else float("nan")

    def method(self, name: str) -> list[np.ndarray]:
        """The attributions of :data:`INTEGRATED` or :data:`GRADIENT_INPUT`, per sentence."""
        methods = {INTEGRATED: self.integrated, GRADIENT_INPUT: self.gradient_input}
        if name not in methods:
            raise ValueError(f"method must be one of {tuple(methods)}, not {name!r}")
        return methods[name]


def attribute(pipe, sentences: Sequence[SentenceTrace], steps: int = STEPS) -> Attribution:
    """Integrated gradients and gradient x input of every token of the input (one sentence, or a premise
    and a hypothesis) for the predicted class, in one batch of ``steps + 1`` points on the path."""
    return attribute_many(pipe, [sentences], steps)[0]


def attribute_many(pipe, inputs: Sequence[Sequence[SentenceTrace]], steps: int = STEPS) -> list[Attribution]:
    """:func:`attribute` of each of several inputs, all in one batch of ``len(inputs) * (steps + 1)`` points
    (each sentence padded to the longest of its position): the same values up to rounding, without the cost
    of one small batch per input. The caller bounds the batch."""
    outputs, points, targets = path_points(pipe, inputs, np.linspace(0, 1, steps + 1))
    return [from_points(pipe, sentences, outputs[r], [p[r] for p in points], targets[r])
            for r, sentences in enumerate(inputs)]


def path_points(pipe, inputs: Sequence[Sequence[SentenceTrace]], alphas: Sequence[float]
                ) -> tuple[np.ndarray, list[np.ndarray], list[int | None]]:
    """At each point alpha x of each input's straight path from zero word vectors (all inputs in one
    batch): the followed output (m, S), per sentence the gradient times the word vectors summed over the
    embedding, (df/dx_i at alpha x) . x_i (m, S, n_k), and each input's target (None: the score)."""
    model = pipe.model
    count = len(alphas)
    ids = [pipe.ids([x[k].tokens for x in inputs]) for k in range(len(inputs[0]))]    # (m, n_k) each
    with torch.no_grad():
        x = [model.embed(i) for i in ids]                                                 # (m, n_k, d_e) each
        logits = model.head(*(model.encoder(e, i != PAD_ID) for e, i in zip(x, ids)))   # (m, K)
    targets = None if model.kind.scored else model.kind.read(logits)                     # (m,) class indices
    alphas = torch.as_tensor(alphas, device=x[0].device, dtype=x[0].dtype)               # (S,)
    # input r's path is rows r S .. r S + S - 1
    path = [(alphas[None, :, None, None] * e[:, None]).flatten(0, 1).requires_grad_() for e in x]  # (m S, n_k, d_e)
    pads = [(i != PAD_ID).repeat_interleave(count, dim=0) for i in ids]
    with torch.enable_grad():
        logits = model.head(*(model.encoder(e, p) for e, p in zip(path, pads)))          # (m S, K)
        out = (model.kind.read(logits) if targets is None else
               logits.softmax(dim=-1).gather(1, targets.repeat_interleave(count)[:, None])[:, 0])  # (m S,)
        grads = torch.autograd.grad(out.sum(), path)                                      # (m S, n_k, d_e) each
    points = [(g.view(len(inputs), count, *g.shape[1:]) * e[:, None]).sum(-1).detach().cpu().numpy()
              for g, e in zip(grads, x)]                                                  # (m, S, n_k) each
    return (out.detach().view(len(inputs), count).cpu().numpy(), points,
            [None] * len(inputs) if targets is None else [int(t) for t in targets])


def from_points(pipe, sentences: Sequence[SentenceTrace], outputs: np.ndarray, points: Sequence[np.ndarray],
                target: int | None) -> Attribution:
    """The :class:`Attribution` of one input from :func:`path_points` at the S = steps + 1 equally spaced
    points from 0 to 1: outputs (S,), per sentence (S, n_k) (padding past its tokens left out)."""
    steps = len(outputs) - 1
    weights = np.full(steps + 1, 1.0 / steps)
    weights[[0, -1]] /= 2                                                                 # trapezoidal rule
    return Attribution([list(s.tokens) for s in sentences],
                       [weights @ p[:, :len(s.tokens)] for p, s in zip(points, sentences)],
                       [p[-1, :len(s.tokens)] for p, s in zip(points, sentences)],
                       None if target is None else pipe.labels[target], float(outputs[-1]), float(outputs[0]), steps)


def integrated_gradients(pipe, inputs: Sequence[Sequence[SentenceTrace]]) -> list:
    """:func:`attribute` of each input with the fewest of :data:`IG_STEPS`
    whose completeness gap is under :data:`COMPLETENESS` (the last one tried when none is). Each step count
    doubles the one before, so its path's points are the last one's and the midpoints between them: only
    the midpoints are computed (:func:`path_points`), for the inputs
    still searching together, in batches of similar length of at most :data:`IG_POINTS` points."""
    outputs: list = [np.zeros(0)] * len(inputs)          # per input (S,), and per sentence (S, n_k)
    points: list = [[np.zeros((0, 0))] * len(x) for x in inputs]
    targets: list = [None] * len(inputs)
    out: list = [None] * len(inputs)
    searching, last = list(range(len(inputs))), 0
    for steps in IG_STEPS:
        # the first count's every point, then the midpoints between the last count's
        alphas = np.linspace(0, 1, steps + 1) if not last else (np.arange(last) + 0.5) / last
        lengths = [max(len(s.tokens) for s in inputs[i]) for i in searching]
        for batch in length_batches(lengths, max(1, IG_POINTS // len(alphas)), max(1, BUDGET // len(alphas))):
            chosen = [searching[b] for b in batch]
            got, per, aims = path_points(pipe, [inputs[i] for i in chosen], alphas)
            for r, i in enumerate(chosen):
                outputs[i] = _interleave(outputs[i], got[r])
                points[i] = [_interleave(old, new[r][:, :len(sentence.tokens)])  # the batch's padding left out
                             for old, new, sentence in zip(points[i], per, inputs[i])]
                targets[i] = aims[r]
                out[i] = from_points(pipe, inputs[i], outputs[i], points[i], targets[i])
        searching = [i for i in searching
                     if math.isfinite(out[i].completeness_gap) and abs(out[i].completeness_gap) >= COMPLETENESS]
        last = steps
        if not searching:
            break
    return out


def _interleave(old: np.ndarray, midpoints: np.ndarray) -> np.ndarray:
    """A path's points (S, ...) with the midpoints between them (S - 1, ...) put in place; the midpoints
    alone where there were none."""
    if not len(old):
        return midpoints
    merged = np.empty((len(old) + len(midpoints), *old.shape[1:]), dtype=midpoints.dtype)
    merged[0::2], merged[1::2] = old, midpoints
    return merged


