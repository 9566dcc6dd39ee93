"""Faithfulness: does DiSAN's attention explain its predictions? Each check against its null.

* **Explanations**: the registry's (:mod:`disan.analyses.explainers`: source2token importance; per DiSA
  block the attention received as lift over uniform and the gate-weighted attention received; gradient ×
  input and integrated gradients, with the fewest of :data:`~disan.analyses.gradients.IG_STEPS` whose
  completeness gap stays under :data:`~disan.analyses.gradients.COMPLETENESS`; leave-one-out,
  f(x) − f(x without token i); captum's where it is installed), the ones :attr:`Settings.explainers` names,
  each ranking the tokens by the registry's one rule (highest score first, NaN last); and
  :data:`RANDOM_DRAWS` random rankings per sentence, the null.
* **Erasure** (DeYoung et al. 2020, ERASER): f is the probability of the predicted class (the expected
  score for relatedness); for k of each of :data:`K_FRACTIONS` of the tokens (``ceil``, so at least one),
  comprehensiveness = f(x) − f(x without its top-k tokens), sufficiency = f(x) − f(only its top-k
  tokens); AOPC is their mean over the k's. Tokens are deleted (or replaced by ``<unk>``); for a pair,
  ranked and removed on the side named, both by default. Higher comprehensiveness and lower sufficiency
  are better. Every edited input runs once, in length-bucketed batches on the fast path.
* **Interventions** (Jain & Wallace 2019; Wiegreffe & Pinter 2019): per block (each DiSA block, and
  source2token), P replaced by uniform attention over the same valid keys or permuted within each
  query's valid keys (:data:`PERMUTATION_DRAWS` draws); only s = P′h and what follows it is computed
  again. The output moves by the total variation distance of the class distributions (|Δ score| for
  relatedness); against Gaussian noise on the word vectors scaled so that the block's output moves by
  the same L2 distance.
* **Randomisation** (Adebayo et al. 2018): the cascade re-initialises the groups of :data:`CASCADE`
  from the top, one more at each stage, with the training's initialiser (word vectors U(−0.05, 0.05)),
  and gives each explanation's Spearman correlation with its value on the trained model; the data
  randomisation gives the same correlation against a model trained on shuffled labels.

* **Agreement** between the explanations: erasure's summary gives Kendall's tau-b between every two of the
  explanations it ranks by, per input, and between each and the input's random rankings, the null
  (:func:`disan.analyses.attribution.explanation_agreement`), from the same scores: no second pass.

One input's **reading** (:func:`reading`) is erasure on that input alone, each explanation against
:data:`READING_DRAWS` random rankings of its tokens, the draws it beats counted: the line the pages write
under a heatmap.

Corpus means come with 95% cluster-bootstrap intervals over sentences
(:func:`disan.analyses.stats.sentence_mean`); a verdict against random is given from
:data:`~disan.analyses.stats.MIN_SENTENCES` sentences up, as the case study does.

Each check is an analysis of :mod:`disan.analyses.protocol` over its inputs (:class:`Erasure`,
:class:`Interventions`, :class:`Cascade`, :class:`DataRandomisation`), which the page computes over
growing samples from :data:`FIRST` inputs and keeps on disk; erasure and the randomisation checks add up
over their inputs (an input's curves and correlations do not depend on the others), the interventions do
not (their noise is drawn per batch).
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from torch import nn

from disan.data.batching import pad
from disan.data.checksums import corpus_digest
from disan.data.text import PAD_ID
from disan.data.vectors import OOV_RANGE
from disan.analyses import explainers, progressive, stats
from disan.analyses.attribution import ExplanationAgreement, explanation_agreement
from disan.analyses.choices import BOTH, CASCADE_SENTENCES, REMOVALS  # noqa: F401  (CASCADE_SENTENCES, for the page)
from disan.analyses.explainers import (RANDOM, SOURCE2TOKEN, Batch, Item, edited, prepare, ranking, seeded,
                                       uniform_like, values)
from disan.analyses.protocol import Analysis
from disan.analyses.stats import MIN_SENTENCES, TOO_FEW
from disan.inspect.batched import traces
from disan.nn.heads import init_weights
from disan.nn.hooks import recorded, this_thread
from disan.nn.model import DiSA

K_FRACTIONS = (0.01, 0.05, 0.10, 0.20, 0.50)
RANDOM_DRAWS = 10
PERMUTATION_DRAWS = 20
CASCADE = ("head", "source2token", "fusion gates", "DiSA blocks", "word vectors")
NOISE_SCALES = (1.0, 2.0)  # the noise calibration's scales, times the word vectors' RMS: they bracket the
                           # 1.2 to 1.6 that the interventions need on SST-5
NOISE_ROUNDS = 1  # rescalings of each intervention's noise after the calibration
# The page's first sample: the curves and their intervals within seconds (20 sick-e inputs took 7.4 s of one
# core, integrated gradients half of it); the verdicts, from MIN_SENTENCES inputs, come with the next stage (32).
FIRST = 8


@dataclass(frozen=True)
class Settings:
    """What the checks depend on besides the model and the sentences."""
    ks: tuple[float, ...] = K_FRACTIONS
    removal: str = "delete"            # one of REMOVALS
    side: str = BOTH                   # for a pair: "both" or the name of a sentence (pipe.sides)
    random_draws: int = RANDOM_DRAWS
    permutation_draws: int = PERMUTATION_DRAWS
    seed: int = 0
    resamples: int = stats.RESAMPLES
    explainers: tuple[str, ...] | None = None  # the registry's explanations compared (None: every one)

    def __post_init__(self):
        if self.removal not in REMOVALS:
            raise ValueError(f"removal must be one of {REMOVALS}, not {self.removal!r}")
        if not self.ks or not all(0 < k <= 1 for k in self.ks):
            raise ValueError(f"every k must be a fraction in (0, 1], not {self.ks}")
        if self.random_draws < 1 or self.permutation_draws < 1:
            raise ValueError("random_draws and permutation_draws must be at least 1")
        if self.explainers is not None:
            explainers.chosen(self.explainers)  # an unknown name is refused here, not after minutes
            object.__setattr__(self, "explainers", tuple(self.explainers))


def top_count(fraction: float, n: int) -> int:
    """The tokens that k = ``fraction`` of ``n`` stands for: ceil(fraction n), at least one."""
    return max(1, math.ceil(fraction * n - 1e-9))


# ---------------------------------------------------------------- explanations

def explanation_names(pipe, settings: Settings = Settings()) -> list[str]:
    """The explanations of this encoder that ``settings`` compares, in the order the tables show them."""
    return [name for e in explainers.chosen(settings.explainers) for name in e.names(pipe)]


def signs(pipe, settings: Settings = Settings()) -> dict[str, bool]:
    """Whether each explanation of :func:`explanation_names` is signed, as its registry entry says."""
    return {name: e.signed for e in explainers.chosen(settings.explainers) for name in e.names(pipe)}


def explain(pipe, items: Sequence[Item], settings: Settings = Settings(), known: dict | None = None,
            places: Sequence[int] | None = None) -> list[dict[str, np.ndarray]]:
    """Per item, every explanation's scores of its ranked tokens (in ``item.places`` order); ``known`` as
    :func:`~disan.analyses.explainers.values` takes it; ``places``, the items' places in the whole sample
    (default 0, 1, ...), seed the explanations that draw."""
    batch = Batch(pipe, items, range(len(items)) if places is None else places, settings.removal,
                  {} if known is None else known)
    got: list[dict[str, list[np.ndarray]]] = [{} for _ in items]
    for explainer in explainers.chosen(settings.explainers):
        for per, scores in zip(got, explainer.scores(batch)):
            per.update({explainer.named(block): s for block, s in scores.items()})
    names = explanation_names(pipe, settings)
    return [{name: np.array([per[name][s][p] for s, p in item.places], dtype=float) for name in names if name in per}
            for item, per in zip(items, got)]


def random_rankings(item_index: int, n: int, settings: Settings) -> list[list[int]]:
    """The random rankings of the ``item_index``-th item of a sample: drawn from (seed, item index), so that
    the sample and any part of it computed apart agree (:func:`erasure_records`' ``places``)."""
    rng = seeded(settings.seed, item_index)
    return [[int(i) for i in rng.permutation(n)] for _ in range(settings.random_draws)]


# ---------------------------------------------------------------- erasure

@dataclass
class SentenceErasure:
    """One input's erasure curves: per explanation (and per random draw) its ranking and, per k, f after
    removing the top-k tokens and f keeping only them."""
    tokens: list[list[str]]
    places: list[tuple[int, int]]
    value: float
    target: int | None                 # the class whose probability f is; None: the relatedness score
    rankings: dict[str, list[int]]     # explanation -> indices into places, most important first
    removed: dict[str, np.ndarray]     # explanation -> (K,) f(x without top-k)
    only: dict[str, np.ndarray]        # explanation -> (K,) f(only top-k)
    random_rankings: list[list[int]]
    random_removed: np.ndarray         # (draws, K)
    random_only: np.ndarray            # (draws, K)
    scores: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # explanation -> (n,) its scores of
                                                                              # the ranked tokens, places' order


def erase(pipe, items: Sequence[Item], orders: Sequence[Sequence[int]], settings: Settings = Settings(),
          known: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """f after removing each ranking's top-k tokens and f keeping only them: (N, K) each, one row per
    (item, ranking) pair of ``items`` and ``orders`` (indices into the item's places, most important first);
    ``known`` as :func:`values` takes it."""
    inputs, targets = [], []
    for item, order in zip(items, orders):
        for k in settings.ks:
            top = list(order[:top_count(k, len(item.places))])
            inputs += [edited(item, top, False, settings.removal), edited(item, top, True, settings.removal)]
            targets += [item.target, item.target]
    got = values(pipe, inputs, targets, known).reshape(len(orders), len(settings.ks), 2)
    return got[..., 0], got[..., 1]


def erasure_records(pipe, items: Sequence, settings: Settings = Settings(),
                    places: Sequence[int] | None = None) -> list[SentenceErasure]:
    """The erasure curves of every input (texts, or (premise, hypothesis) pairs); ``places``: the inputs' places
    in the whole sample (default 0, 1, ...), which seed their random rankings, so that an input's curves are the
    same in any part of the sample it is computed with."""
    return erased(pipe, prepare(pipe, items, settings.side), settings, places)


def erased(pipe, prepared: Sequence[Item], settings: Settings = Settings(),
           places: Sequence[int] | None = None) -> list[SentenceErasure]:
    """:func:`erasure_records` of inputs prepared already (:func:`~disan.analyses.explainers.prepare`, or
    :func:`~disan.analyses.explainers.from_tokens`), their ranked tokens those of ``settings.side``."""
    known: dict = {}  # f of the edited inputs run so far
    places = range(len(prepared)) if places is None else places
    scores = explain(pipe, prepared, settings, known, places)
    ranked = [{name: ranking(v) for name, v in per.items()} for per in scores]
    draws = [random_rankings(int(place), len(item.places), settings) for place, item in zip(places, prepared)]
    pairs = [(item, order) for item, named, drawn in zip(prepared, ranked, draws)
             for order in [*named.values(), *drawn]]
    removed, only = erase(pipe, [p[0] for p in pairs], [p[1] for p in pairs], settings, known)
    out, row = [], 0
    for item, named, drawn, given in zip(prepared, ranked, draws, scores):
        e = len(named)
        out.append(SentenceErasure(item.tokens, item.places, item.value, item.target, named,
                                   {name: removed[row + j] for j, name in enumerate(named)},
                                   {name: only[row + j] for j, name in enumerate(named)},
                                   drawn, removed[row + e:row + e + len(drawn)], only[row + e:row + e + len(drawn)],
                                   given))
        row += e + len(drawn)
    return out


def _interval(e: stats.Estimate) -> str:
    return f"{e.value:+.3f} [{e.low:+.3f}, {e.high:+.3f}]"


def verdict(diff: stats.Estimate, n: int, higher_is_better: bool) -> str:
    """"better than random", "no better" or "worse" from the interval of explanation minus random; too few
    sentences below :data:`MIN_SENTENCES`, as the case study rules."""
    if n < MIN_SENTENCES:
        return TOO_FEW
    if not np.isfinite(diff.low):
        return "n/a"
    low, high = (diff.low, diff.high) if higher_is_better else (-diff.high, -diff.low)
    return "better than random" if low > 0 else "worse" if high < 0 else "no better"


@dataclass
class ErasureSummary:
    """Corpus means over the sentences: per explanation and measure (comprehensiveness, sufficiency), its
    AOPC with interval, its difference from random with interval and verdict, and the per-k curves; and the
    agreement of the explanations ranked by (:func:`~disan.analyses.attribution.explanation_agreement`)."""
    sentences: int
    table: pd.DataFrame      # explanation x (measure AOPC, − random, verdict), intervals as text
    estimates: dict[tuple[str, str], tuple[stats.Estimate, stats.Estimate]]  # (explanation, measure) -> (AOPC, − random)
    curves: pd.DataFrame     # explanation, measure, k, mean
    random_spread: dict[str, stats.NullRange]  # measure -> the spread of random's corpus AOPC over the draws
    ks: tuple[float, ...]    # the fractions of the tokens removed
    random_draws: int        # random rankings per sentence
    agreement: ExplanationAgreement  # the explanations' Kendall's tau-b with each other and with random rankings


def ranked_scores(order: Sequence[int]) -> np.ndarray:
    """(n,) scores that rank the tokens as ``order`` does (positions, most important first) under the ranking
    rule: n for the first, down to 1 for the last."""
    scores = np.empty(len(order))
    scores[np.asarray(order, dtype=np.int64)] = np.arange(len(order), 0, -1)
    return scores


MEASURES = {"comprehensiveness": True, "sufficiency": False}  # measure -> whether higher is better
EDITED = {"comprehensiveness": "removed", "sufficiency": "only"}  # measure -> a record's field of f after the edit


def erasure_summary(records: Sequence[SentenceErasure], settings: Settings = Settings()) -> ErasureSummary:
    """The corpus summary of :func:`erasure_records`."""
    n = len(records)
    if not n:
        raise ValueError("no sentences to summarise")
    names = list(records[0].rankings)
    per = {}  # (explanation, measure) -> (S, K) per sentence
    for m in MEASURES:
        for name in names:
            per[name, m] = np.array([r.value - getattr(r, EDITED[m])[name] for r in records])
        draws = np.array([r.value - getattr(r, "random_" + EDITED[m]) for r in records])  # (S, D, K)
        per[RANDOM, m] = draws.mean(axis=1)
        per["draws", m] = draws
    estimates, curves = {}, []
    for name in names + [RANDOM]:
        for m in MEASURES:
            aopc = per[name, m].mean(axis=1)
            estimates[name, m] = (stats.sentence_mean(aopc, settings.resamples, settings.seed),
                                  stats.sentence_mean(aopc - per[RANDOM, m].mean(axis=1), settings.resamples,
                                                      settings.seed))
            curves += [{"explanation": name, "measure": m, "k": k, "mean": float(per[name, m][:, j].mean())}
                       for j, k in enumerate(settings.ks)]
    # random's corpus AOPC of each draw: how far one draw of random rankings strays from their mean
    spread = {m: stats.null_range(per["draws", m].mean(axis=2).mean(axis=0)) for m in MEASURES}
    table = pd.DataFrame([_row(name, estimates, n) for name in names + [RANDOM]])
    drawn = [np.array([ranked_scores(order) for order in r.random_rankings]) for r in records]
    agreement = explanation_agreement([r.scores for r in records], drawn, settings.resamples, settings.seed)
    return ErasureSummary(n, table, estimates, pd.DataFrame(curves), spread, tuple(settings.ks),
                          settings.random_draws, agreement)


def _row(name: str, estimates, n: int) -> dict:
    row = {"explanation": name}
    for m, higher in MEASURES.items():
        est, diff = estimates[name, m]
        row[f"{m} (AOPC)"] = _interval(est)
        # random against itself is no comparison: a dash, not an interval around 0
        row[f"{m} − random"] = "—" if name == RANDOM else _interval(diff)
        row[f"{m}: verdict"] = "—" if name == RANDOM else verdict(diff, n, higher)
    return row


# ---------------------------------------------------------------- one input's reading, beside its heatmap

# The random rankings a reading draws of its one input: twice the corpus's RANDOM_DRAWS, since one input has no
# others to average over, and a count of 20 reads at once ("19 of 20 draws"). The reading of both DiSA blocks of a
# 40-token SST-5 sentence takes 0.24 s of one core (docs/performance.md).
READING_DRAWS = 20
# The fraction of the tokens a reading's line is said at, the same for every input and explanation: the k at which
# an explanation happens to beat random most would overstate it. Of K_FRACTIONS, 1% and 5% are one token of any
# sentence under 20 tokens (most of SST's), and 50% removes half of the input, far from anything the model was
# trained on; 20% is 2 to 8 tokens of a 10- to 40-token sentence.
READING_K = 0.20
READING = Settings(random_draws=READING_DRAWS)


@dataclass
class Reading:
    """One explanation's erasure test on one input (:func:`reading`): per measure of :data:`MEASURES`, its value
    at the fraction ``k`` and its AOPC over every k, each beside the same of every random ranking of the input's
    tokens."""
    explanation: str
    target: str | None                  # the label of the class whose probability f is; None: the relatedness score
    value: float                        # f(x)
    sides: tuple[str, ...]              # the sentences ranked and removed, by name (pipe.sides)
    tokens: int                         # the tokens ranked
    ks: tuple[float, ...]               # the fractions of the AOPC
    k: float                            # the one a line is said at: of the ks, the nearest READING_K
    count: int                          # the tokens k stands for (top_count)
    at_k: dict[str, float]              # measure -> f(x) − f(edited) at k
    random_at_k: dict[str, np.ndarray]  # measure -> (draws,) the same for each random ranking
    aopc: dict[str, float]              # measure -> the mean of f(x) − f(edited) over the k's
    random_aopc: dict[str, np.ndarray]  # measure -> (draws,)

    @property
    def draws(self) -> int:
        """The random rankings it is compared with."""
        return len(self.random_aopc["comprehensiveness"])

    def beaten(self, measure: str, aopc: bool = True) -> int:
        """How many random rankings the explanation does strictly better than on ``measure`` (a higher
        comprehensiveness, a lower sufficiency): by AOPC, or (``aopc=False``) at ``k``."""
        own, drawn = (self.aopc, self.random_aopc) if aopc else (self.at_k, self.random_at_k)
        better = drawn[measure] < own[measure] if MEASURES[measure] else drawn[measure] > own[measure]
        return int(better.sum())


def reading(pipe, tokens: Sequence[Sequence[str]], names: Sequence[str], settings: Settings = READING
            ) -> list[Reading]:
    """The erasure test, on one input given as the tokens of its sentences (one, or a premise's and a
    hypothesis's, as its trace holds them; :func:`~disan.analyses.explainers.tokens_of` tokenises a text), of
    each explanation of the registry's entries ``names`` (a per-block entry gives one per block) against
    ``settings.random_draws`` random rankings of the input's tokens, with the other settings (the k's, removal,
    side, seed) as :func:`erasure_records` takes them: every edited input runs once, in length-bucketed
    batches."""
    settings = dataclasses.replace(settings, explainers=tuple(names))
    record, = erased(pipe, explainers.from_tokens(pipe, [tokens], settings.side), settings)
    j = int(np.argmin([abs(k - READING_K) for k in settings.ks]))
    n = len(record.places)
    target = None if record.target is None else pipe.labels[record.target]
    sides = tuple(pipe.sides[s] for s in explainers.sides_of(pipe, settings.side))
    out = []
    for name in record.rankings:
        at_k, random_at_k, aopc, random_aopc = {}, {}, {}, {}
        for m, field_ in EDITED.items():
            own = record.value - getattr(record, field_)[name]                # (K,)
            drawn = record.value - getattr(record, "random_" + field_)        # (draws, K)
            at_k[m], random_at_k[m] = float(own[j]), drawn[:, j]
            aopc[m], random_aopc[m] = float(own.mean()), drawn.mean(axis=1)
        out.append(Reading(name, target, record.value, sides, n, tuple(settings.ks), settings.ks[j],
                           top_count(settings.ks[j], n), at_k, random_at_k, aopc, random_aopc))
    return out


# ---------------------------------------------------------------- attention interventions

INTERVENTIONS = ("uniform", "permuted")


def intervened_encoding(model, ids: torch.Tensor, block: str, change) -> tuple[torch.Tensor, torch.Tensor]:
    """The encodings (B, D) of ``ids`` (B, n) with one block's attention P replaced inside the model by
    ``change(P, mask)`` (a hook on the block's ``hook_attention``), and that block's new output: a DiSA block's
    s = P′h (B, n, d), or source2token's encoding. ``change`` takes P (B, m, n, d) [j, i, k] and its mask
    (B, m, n) [j, i]; source2token's attention is one query row over the tokens (m = 1)."""
    encoder = model.encoder
    if block == SOURCE2TOKEN:
        keys = (ids != PAD_ID)[:, None]                                                   # (B, 1, n)
        attention, points = encoder.s2t.hook_attention, {"output": encoder.hook_encoding}

        def replace(module, args, probs):
            return change(probs[:, None], keys)[:, 0]
    else:
        disa = encoder.blocks[[b.name for b in encoder.blocks].index(block)]
        attention, points = disa.hook_attention, {"mask": disa.hook_mask, "output": disa.hook_s}

        def replace(module, args, probs):
            return change(probs, seen["mask"])  # the block's mask passes its hook point before P is made
    with recorded(points) as seen:
        handle = attention.register_forward_hook(this_thread(replace))  # another session's trace runs as it is
        try:
            out = model.encode(ids)
        finally:
            handle.remove()
    return out, seen["output"]


def block_output(trace, block: str) -> torch.Tensor:
    """What a block's attention makes: a DiSA block's s (B, n, d), source2token's encoding (B, D)."""
    if block == SOURCE2TOKEN:
        return trace.encoding
    return trace.blocks[[b.name for b in trace.blocks].index(block)].s


def permuted(probs: torch.Tensor, mask: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """Each query row's attention permuted among its valid keys (one permutation per row, for every feature:
    :func:`disan.analyses.stats.row_shuffle_index`); masked cells stay 0."""
    index = torch.as_tensor(stats.row_shuffle_index(mask.numpy(), rng))                # (B, m, n)
    # whole feature rows gathered by a flat row index: the same values as take_along_dim with the index
    # expanded over the features, at a fraction of its cost (tests/test_faithfulness.py compares them)
    B, m, n = index.shape
    rows = (torch.arange(B * m)[:, None] * n + index.reshape(B * m, n)).flatten()      # (B m n,)
    return probs.reshape(B * m * n, -1).index_select(0, rows).view(probs.shape)


def _change(pipe, before: torch.Tensor, after: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per input: how far the output moved (total variation distance of the class distributions, |Δ score|
    for relatedness) and whether the decision flipped (the class; the rounded score)."""
    kind = pipe.model.kind
    if kind.scored:
        a, b = kind.read(before), kind.read(after)
        return (a - b).abs().double().numpy(), (a.round() != b.round()).numpy()
    p, q = before.softmax(dim=-1), after.softmax(dim=-1)
    return 0.5 * (p - q).abs().sum(dim=-1).double().numpy(), (kind.read(before) != kind.read(after)).numpy()


class Noise:
    """Gaussian noise on the word vectors of a batch (B, n, d_e), one draw for every block and intervention,
    and how far it moves each block's output: the encoder runs once at each of :data:`NOISE_SCALES` times
    the word vectors' RMS per sentence, and per sentence and block the distance is fitted as a power of the
    scale (the output is close to linear in the noise: powers 0.99 to 1.02 on SST-5), so that each
    intervention reads its scale off that curve instead of searching for it from a small noise. Then
    :data:`NOISE_ROUNDS` rescalings by distance wanted / distance reached close the remaining gap (under
    1% on SST-5)."""

    @torch.no_grad()
    def __init__(self, model, ids: torch.Tensor, blocks: Sequence[str], rng: torch.Generator):
        self.model, self.blocks, self.pad_mask = model, list(blocks), ids != PAD_ID
        self.x = model.embed(ids)                                                        # (B, n, d_e)
        self.noise = torch.randn(self.x.shape, generator=rng, dtype=self.x.dtype) * self.pad_mask[..., None]
        _, self.base = model.encoder(self.x, self.pad_mask, "tokens")
        rms = self.x.pow(2).mean(dim=(1, 2)).sqrt()                                      # (B,)
        self.scales = [f * rms for f in NOISE_SCALES]
        self.reached = [self.run(scale)[1] for scale in self.scales]

    @torch.no_grad()
    def run(self, scale: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The encodings (B, D) with the noise at ``scale`` (B,), and how far each block's output moved (B,)."""
        out, tr = self.model.encoder(self.x + scale[:, None, None] * self.noise, self.pad_mask, "tokens")
        return out, {b: (block_output(tr, b) - block_output(self.base, b)).flatten(1).norm(dim=-1)
                     for b in self.blocks}

    @torch.no_grad()
    def matched(self, block: str, distance: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The encodings (B, D) with the noise scaled per sentence so that ``block``'s output moves by
        ``distance`` (B,) in L2, and the distance reached (B,). A sentence whose block the noise does not
        move (a single token's forward block has no key) keeps the first scale."""
        (s0, s1), (d0, d1) = self.scales, (r[block] for r in self.reached)
        power = torch.log(d1 / d0) / torch.log(s1 / s0)
        power = torch.where(torch.isfinite(power) & (power > 0), power, torch.ones_like(power))
        scale = torch.where(d0 > 0, s0 * (distance / d0.clamp_min(1e-12)) ** (1 / power), s0)
        for _ in range(NOISE_ROUNDS):
            reached = self.run(scale)[1][block]
            scale = scale * torch.where(reached > 0, distance / reached.clamp_min(1e-12), torch.ones_like(reached))
        out, reached = self.run(scale)
        return out, reached[block]


@dataclass
class InterventionSummary:
    """Per block and intervention: the output change and flips, against noise of the same size."""
    sentences: int
    table: pd.DataFrame
    changes: dict[tuple[str, str], np.ndarray]   # (block, intervention) -> (N,) change per input
    noise: dict[tuple[str, str], np.ndarray]     # (block, intervention) -> (N,) change under matched noise
    flips: dict[tuple[str, str], np.ndarray]     # (block, intervention) -> (N,) share of flips per input
    noise_flips: dict[tuple[str, str], np.ndarray]
    permutation_draws: int                       # draws of each permutation


def blocks_of(pipe) -> list[str]:
    """The blocks whose attention can be replaced: each DiSA block, then source2token."""
    return [b.name for b in getattr(pipe.model.encoder, "blocks", [])] + [SOURCE2TOKEN]


@torch.no_grad()
def intervention_records(pipe, items: Sequence, settings: Settings = Settings(), start: int = 0) -> dict:
    """Per (block, intervention): the change and flip share per input (mean over the permutation draws),
    and the same under matched noise. ``start`` seeds the draws of a prefix as in the whole sample."""
    model = pipe.model
    was = model.training
    model.eval()
    try:
        prepared = prepare(pipe, items, settings.side)
        flat = [(i, s) for i, it in enumerate(prepared) for s in range(len(it.tokens))]
        sentences = [prepared[i].ids[s] for i, s in flat]
        original = torch.zeros(len(flat), model.encoder.out_dim)
        after: dict = {}
        noisy: dict = {}
        for batch, trace in traces(pipe, [prepared[i].tokens[s] for i, s in flat]):
            original[batch] = trace.encoding
            ids = pad([sentences[k] for k in batch])
            # one draw of noise per batch, calibrated once for every block and intervention
            noise = Noise(model, ids, blocks_of(pipe),
                          torch.Generator().manual_seed(settings.seed * 7919 + start + batch[0]))
            for block in blocks_of(pipe):
                for how in INTERVENTIONS:
                    draws = 1 if how == "uniform" else settings.permutation_draws
                    outs, moved = [], []
                    for d in range(draws):
                        rng = np.random.default_rng([settings.seed, start, batch[0], d])
                        change = uniform_like if how == "uniform" else functools.partial(permuted, rng=rng)
                        out, s = intervened_encoding(model, ids, block, change)
                        outs.append(out)
                        moved.append((s - block_output(trace, block)).flatten(1).norm(dim=-1))
                    after.setdefault((block, how), [None] * len(flat))
                    noisy.setdefault((block, how), [None] * len(flat))
                    noise_out, _ = noise.matched(block, torch.stack(moved).mean(dim=0))
                    for b, k in enumerate(batch):
                        after[block, how][k] = torch.stack([o[b] for o in outs])          # (draws, D)
                        noisy[block, how][k] = noise_out[b][None]                         # (1, D)
        per_item, k = [], 0  # the rows of flat of each input: they follow one another
        for it in prepared:
            per_item.append(list(range(k, k + len(it.tokens))))
            k += len(it.tokens)
        base = model.head(*(original[[ks[s] for ks in per_item]] for s in range(len(prepared[0].tokens))))
        result = {}
        for key in after:
            for name, table in (("intervention", after[key]), ("noise", noisy[key])):
                draws = table[0].shape[0]
                changes, flips = [], []
                for d in range(draws):
                    logits = model.head(*(torch.stack([table[ks[s]][d] for ks in per_item])
                                          for s in range(len(prepared[0].tokens))))
                    c, f = _change(pipe, base, logits)
                    changes.append(c)
                    flips.append(f)
                result[key, name] = np.mean(changes, axis=0), np.mean(flips, axis=0)
        return result
    finally:
        model.train(was)


def intervention_summary(records: dict, n: int, settings: Settings = Settings()) -> InterventionSummary:
    """The corpus table of :func:`intervention_records`: mean change and flip share with intervals, the
    same under matched noise, and their difference with its verdict."""
    rows, changes, noise, flips, noise_flips = [], {}, {}, {}, {}
    for (key, name), (c, f) in records.items():
        (changes if name == "intervention" else noise)[key] = c
        (flips if name == "intervention" else noise_flips)[key] = f
    for key in changes:
        diff = stats.sentence_mean(changes[key] - noise[key], settings.resamples, settings.seed)
        rows.append({"block": key[0], "intervention": key[1],
                     "output change": _interval(stats.sentence_mean(changes[key], settings.resamples, settings.seed)),
                     "flips": f"{float(np.mean(flips[key])):.1%}",
                     "noise of that size": _interval(stats.sentence_mean(noise[key], settings.resamples,
                                                                         settings.seed)),
                     "noise flips": f"{float(np.mean(noise_flips[key])):.1%}",
                     "− noise": _interval(diff),
                     "verdict": (TOO_FEW if n < MIN_SENTENCES else "n/a" if not np.isfinite(diff.low) else
                                 "moves it more than noise" if diff.low > 0 else
                                 "moves it less than noise" if diff.high < 0 else "like noise")})
    return InterventionSummary(n, pd.DataFrame(rows), changes, noise, flips, noise_flips, settings.permutation_draws)


# ---------------------------------------------------------------- randomisation checks

def groups(model) -> dict[str, list[tuple[nn.Module | nn.Parameter, str]]]:
    """The parameter groups of :data:`CASCADE`, top down: each a list of modules (re-initialised by
    :func:`disan.nn.heads.init_weights`) and loose parameters (zeroed, as that initialiser does)."""
    disa = [m for m in model.encoder.modules() if isinstance(m, DiSA)]
    s2t = getattr(model.encoder, "s2t", None)
    rest = [m for m in model.encoder.children() if m is not s2t and not isinstance(m, DiSA)]
    return {"head": [model.fc, model.out],
            "source2token": [s2t] if s2t is not None else [],
            "fusion gates": [x for m in disa for x in (m.fuse_s, m.fuse_h, m.b_f)],
            "DiSA blocks": [x for m in disa for x in (m.fc_h, m.w1, m.w2, m.b1)] + rest,
            "word vectors": [model.embed]}


@torch.no_grad()
def randomise(model, group: str, seed: int) -> None:
    """Re-initialise one group of :func:`groups` in place, seeded, with the training's initialiser
    (:func:`disan.nn.heads.init_weights`: Glorot-uniform matrices, zero biases); word vectors, frozen rows
    included, from U(−0.05, 0.05), the training's rows for words GloVe lacks."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        for part in groups(model)[group]:
            if group == "word vectors":
                for t in [*part.parameters(), *part.buffers()]:
                    t.copy_(torch.empty(t.shape).uniform_(-OOV_RANGE, OOV_RANGE).to(t.dtype))
            elif isinstance(part, nn.Parameter):
                part.zero_()
            else:
                init_weights(part)


def _same_model(pipe, model):
    """The pipeline with another model of the same vocabulary."""
    return type(pipe)(model, pipe.vocab, pipe.config, pipe.metrics, pipe.path)


@dataclass
class Agreement:
    """Per stage (or per compared model), each explanation's Spearman correlation with the trained model's."""
    sentences: int
    table: pd.DataFrame                          # stage x explanation: mean ρ [interval]
    rho: dict[tuple[str, str], np.ndarray]       # (stage, explanation) -> (N,) ρ per input
    estimates: dict[tuple[str, str], stats.Estimate]  # (stage, explanation) -> mean ρ with its interval


def correlations(stages: dict[str, list[dict[str, np.ndarray]]], trained: list[dict[str, np.ndarray]]
                 ) -> dict[tuple[str, str], np.ndarray]:
    """(stage, explanation) -> (N,) Spearman's ρ per input between each stage's scores and the trained model's."""
    return {(stage, name): np.array([stats.spearman(a[name], b[name]) for a, b in zip(trained, scores)])
            for stage, scores in stages.items() for name in trained[0]}


def agreement(rho: dict[tuple[str, str], np.ndarray], settings: Settings = Settings()) -> Agreement:
    """The table of :func:`correlations`: per stage, each explanation's mean ρ with its interval."""
    estimates = {key: stats.sentence_mean(r, settings.resamples, settings.seed) for key, r in rho.items()}
    rows: dict[str, dict] = {}
    for (stage, name), e in estimates.items():
        rows.setdefault(stage, {"stage": stage})[name] = _interval(e)
    return Agreement(len(next(iter(rho.values()))), pd.DataFrame(list(rows.values())), rho, estimates)


def cascade_correlations(pipe, items: Sequence, settings: Settings = Settings(),
                         places: Sequence[int] | None = None) -> dict[tuple[str, str], np.ndarray]:
    """The :func:`correlations` of the cascade: after each stage of :data:`CASCADE` (that group re-initialised
    on top of the ones before), each explanation against its trained value; ``places`` as :func:`explain`
    takes them."""
    trained = explain(pipe, prepare(pipe, items, settings.side), settings, places=places)
    model = copy.deepcopy(pipe.model)
    stages = {}
    for stage, group in enumerate(CASCADE):
        randomise(model, group, settings.seed * len(CASCADE) + stage)
        broken = _same_model(pipe, model)
        # its own prediction explained
        stages[group] = explain(broken, prepare(broken, items, settings.side), settings, places=places)
    return correlations(stages, trained)


def cascade(pipe, items: Sequence, settings: Settings = Settings()) -> Agreement:
    """Cascading model randomisation: after each stage of :data:`CASCADE`, each explanation's Spearman
    correlation with its trained value, per input."""
    return agreement(cascade_correlations(pipe, items, settings), settings)


def shuffled_correlations(pipe, shuffled, items: Sequence, settings: Settings = Settings(),
                          places: Sequence[int] | None = None) -> dict[tuple[str, str], np.ndarray]:
    """The :func:`correlations` of the trained model's explanations against those of ``shuffled`` (each model
    explains its own prediction); ``places`` as :func:`explain` takes them."""
    return correlations(
        {"shuffled labels": explain(shuffled, prepare(shuffled, items, settings.side), settings, places=places)},
        explain(pipe, prepare(pipe, items, settings.side), settings, places=places))


def data_randomisation(pipe, shuffled, items: Sequence, settings: Settings = Settings()) -> Agreement:
    """Each explanation's Spearman correlation, per input, between the trained model and ``shuffled``, a
    pipeline of the same settings trained on shuffled labels (``python -m disan train --shuffle-labels``)."""
    return agreement(shuffled_correlations(pipe, shuffled, items, settings), settings)


# ---------------------------------------------------------------- the checks as analyses over their inputs

@dataclass(frozen=True)
class Check(Analysis):
    """A check over inputs (texts, or (premise, hypothesis) pairs) with its settings, staged from :data:`FIRST`."""
    items: tuple
    options: Settings
    first: ClassVar[int] = FIRST

    def total(self) -> int:
        return len(self.items)

    def settings(self) -> dict:
        return {"corpus": corpus_digest(self.items), "settings": dataclasses.asdict(self.options)}

    def sample(self, places: Sequence[int]) -> list:
        """The inputs at ``places``."""
        return [self.items[i] for i in places]


@dataclass(frozen=True)
class Erasure(Check):
    """The erasure summary (:func:`erasure_summary`), additive over the inputs: each input's curves are
    seeded by its place (:func:`erasure_records`)."""
    name: ClassVar[str] = "faithfulness erasure"
    additive: ClassVar[bool] = True

    def part(self, pipe, places: np.ndarray) -> list[SentenceErasure]:
        return erasure_records(pipe, self.sample(places), self.options, places)

    def join(self, parts: list[tuple[list[SentenceErasure], np.ndarray]]) -> list[SentenceErasure]:
        return progressive.in_order(parts)

    def finish(self, part: list[SentenceErasure], size: int) -> ErasureSummary:
        return erasure_summary(part, self.options)


@dataclass(frozen=True)
class Interventions(Check):
    """The attention interventions' summary (:func:`intervention_summary`): its noise is drawn per batch of
    the inputs, so a sample is computed whole."""
    name: ClassVar[str] = "faithfulness interventions"

    def compute(self, pipe, size: int) -> InterventionSummary:
        return intervention_summary(intervention_records(pipe, self.sample(self.places(size)), self.options), size,
                                    self.options)


class Randomised(Check):
    """A randomisation check, additive over the inputs: each input's ρ depends on it and the models only."""
    additive: ClassVar[bool] = True

    def join(self, parts: list[tuple[dict, np.ndarray]]) -> dict[tuple[str, str], np.ndarray]:
        return {key: np.array(progressive.in_order([(part[key], places) for part, places in parts]))
                for key in parts[0][0]}

    def finish(self, part: dict[tuple[str, str], np.ndarray], size: int) -> Agreement:
        return agreement(part, self.options)


@dataclass(frozen=True)
class Cascade(Randomised):
    """The cascading model randomisation (:func:`cascade`)."""
    name: ClassVar[str] = "faithfulness cascade"

    def part(self, pipe, places: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
        return cascade_correlations(pipe, self.sample(places), self.options, places)


@dataclass(frozen=True)
class DataRandomisation(Randomised):
    """The data randomisation (:func:`data_randomisation`) against ``shuffled``, a pipeline, named in the
    settings by ``shuffled_digest`` (:func:`disan.store.keys.model_digest`, the caller's)."""
    shuffled: Any = dataclasses.field(compare=False)
    shuffled_digest: str
    name: ClassVar[str] = "faithfulness data randomisation"

    def settings(self) -> dict:
        return {**super().settings(), "shuffled": self.shuffled_digest}

    def part(self, pipe, places: np.ndarray) -> dict[tuple[str, str], np.ndarray]:
        return shuffled_correlations(pipe, self.shuffled, self.sample(places), self.options, places)
