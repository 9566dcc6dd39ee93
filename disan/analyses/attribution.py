"""Attribution against attention: does what DiSAN attends to agree with what its prediction depends on?
(Jain & Wallace 2019, "Attention is not explanation"; Wiegreffe & Pinter 2019.)

Two gradient attributions of the followed output (the probability of the predicted class; the
expected score for relatedness) to each token, summed over the embedding dimensions:

* gradient x input, (df/dx_i) . x_i;
* integrated gradients (Sundararajan et al. 2017), (x_i - x'_i) . the mean gradient on the straight path
  from the baseline x' (zero word vectors) to x, by the trapezoidal rule with ``steps`` intervals. They
  sum to f(x) - f(x') up to the quadrature error (completeness).

Attention measures per token: its source2token importance (mean over features) and, per DiSA block,
the attention it receives relative to uniform attention (:mod:`disan.inspect.measures`).
Agreement is Kendall's tau-b between |attribution| and each measure.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from disan.data.text import PAD_ID
from disan.render import charts
from disan.analyses import stats
from disan.analyses.choices import STEPS
from disan.render.kinds import look_of
from disan.render.views import Drawing, Row
from disan.inspect import measures
from disan.inspect.pipeline import SentenceTrace

# STEPS integrated-gradients steps for one input (disan.analyses.choices) ... and for each input of a corpus, where they are most of the cost: on 60 sst5 test sentences, 16 steps
# took 2.4 s of CPU against 5.9 s for 50, their completeness gap 0.14% (median; 90th percentile 0.23%,
# largest 1.5%) against 0.014%; Kendall's tau ranks |attribution|, which so small an error rarely reorders.
# Every input's gap is kept with its taus, and the corpus summary shows it.
CORPUS_STEPS = 16
GAP = "completeness gap"  # the column of each input's |completeness gap| in the corpus table
METHODS = ("integrated gradients", "gradient × input")


@dataclass
class Attribution:
    """Per-token attributions of one input (one or two sentences) to the followed output."""
    tokens: list[list[str]]          # per sentence
    integrated: list[np.ndarray]     # per sentence (n,)
    gradient_input: list[np.ndarray]  # per sentence (n,)
    target: str                      # the class whose probability is followed, or "relatedness score"
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
        """The attributions of one of :data:`METHODS`, per sentence."""
        if name not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, not {name!r}")
        return self.integrated if name == METHODS[0] else self.gradient_input


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
    label = look_of(pipe.kind).followed if target is None else pipe.labels[target]
    return Attribution([list(s.tokens) for s in sentences],
                       [weights @ p[:, :len(s.tokens)] for p, s in zip(points, sentences)],
                       [p[-1, :len(s.tokens)] for p, s in zip(points, sentences)],
                       label, float(outputs[-1]), float(outputs[0]), steps)


def attention_measures(sentence: SentenceTrace) -> pd.DataFrame:
    """Per token: ``source2token`` (its importance, when the encoder has source2token attention) and
    ``received · {block}`` (attention received relative to uniform, NaN where no query may attend it)."""
    tr = sentence.trace
    columns = {}
    if tr.source2token is not None:
        columns["source2token"] = measures.token_importance(np.asarray(tr.source2token.probs))
    for block in tr.blocks:
        columns[f"received · {block.name}"] = measures.received_lift(block.probs, block.mask)
    return pd.DataFrame(columns, index=pd.RangeIndex(len(sentence.tokens), name="position"))


def agreement(attributions: dict[str, np.ndarray], measures: pd.DataFrame) -> pd.DataFrame:
    """Kendall's tau-b between |attribution| (rows: methods) and each attention measure (columns)."""
    return pd.DataFrame({measure: [stats.kendall_tau(np.abs(a), measures[measure].to_numpy())
                                   for a in attributions.values()] for measure in measures.columns},
                        index=pd.Index(list(attributions), name="attribution"))


def corpus_agreement(pipe, items: Sequence, steps: int = CORPUS_STEPS) -> pd.DataFrame:
    """One row per sentence of the items (texts, or (premise, hypothesis) pairs): input (the item's place in
    ``items``), sentence, tokens, the |completeness gap| of its input's integrated gradients (:data:`GAP`), and
    the tau of each (method, measure) as a column "method | measure". Items that cannot be traced are left out."""
    rows = []
    for index, item in enumerate(items):
        try:
            result = pipe.trace(item)
        except ValueError:
            continue
        sentences = result.sentences
        attr = attribute(pipe, sentences, steps)
        for k, sentence in enumerate(sentences):
            table = agreement({m: attr.method(m)[k] for m in METHODS}, attention_measures(sentence))
            row = {"input": index, "sentence": sentence.text, "tokens": len(sentence.tokens),
                   GAP: abs(attr.completeness_gap)}
            row.update({f"{m} | {measure}": table.loc[m, measure] for m in METHODS for measure in table.columns})
            rows.append(row)
    return pd.DataFrame(rows)


def drawing(attr: Attribution, sentences: Sequence[SentenceTrace]) -> Drawing:
    """Per sentence: the attributions beside the attention measures (tokens x measures), and their
    agreement (Kendall's tau)."""
    rows = []
    for k, sentence in enumerate(sentences):
        measures = attention_measures(sentence)
        values = np.column_stack([attr.integrated[k], attr.gradient_input[k], measures.to_numpy()])
        names = list(METHODS) + list(measures.columns)
        part = "" if len(sentences) == 1 else ("premise: " if k == 0 else "hypothesis: ")
        title = f"{part}attribution to “{attr.target}” beside attention"
        rows.append(Row({f"attr-measures-{k}": charts.measures_heatmap(values, sentence.tokens, names, title)}))
        rows.append(Row({f"attr-tau-{k}": agreement({m: attr.method(m)[k] for m in METHODS}, measures)},
                        f"{part.capitalize()}Kendall's τ between |attribution| and attention".strip()))
    return Drawing(rows)


def corpus_drawing(frame: pd.DataFrame) -> Drawing:
    """Histograms of tau over the sampled sentences, one panel per attribution method, and a summary table
    (mean tau, the share of sentences with tau > 0)."""
    pairs = [c for c in frame.columns if " | " in c]
    panels = {}
    for m, method in enumerate(METHODS):
        series = {c.split(" | ")[1]: frame[c].to_numpy(dtype=float) for c in pairs if c.startswith(method)}
        panels[f"attr-corpus-{m}"] = charts.histograms(series, f"{method} against attention, per sentence",
                                                       "Kendall's τ", reference=0.0)
    values = frame[pairs].astype(float)
    counted = values.notna().sum().to_numpy()
    summary = pd.DataFrame({"attribution | attention": pairs, "mean τ": values.mean().to_numpy(),
                            "share with τ > 0": (values > 0).sum().to_numpy() / counted.clip(min=1),
                            "sentences": counted})
    gaps = frame[GAP].to_numpy(dtype=float) if GAP in frame else np.array([])
    caption = (f"The integrated gradients of each input sum to within {np.nanmedian(gaps):.2%} (median; largest "
               f"{np.nanmax(gaps):.2%}) of f(x) − f(x′)." if np.isfinite(gaps).any() else None)
    inputs = frame["input"].nunique()
    title = f"Over {inputs} test inputs" + (f": {len(frame)} sentences" if len(frame) != inputs else "")
    return Drawing([Row(panels, title, caption), Row({"attr-corpus-summary": summary})])
