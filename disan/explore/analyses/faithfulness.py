"""Faithfulness: does DiSAN's attention explain its predictions? Each check against its null.

* **Explanations** (a score per token; the ranking is the scores, highest first, NaN last):
  source2token importance; per DiSA block the attention received as lift over uniform and the
  gate-weighted attention received (:mod:`disan.inspect.measures`); gradient × input and integrated
  gradients (:func:`disan.explore.analyses.attribution.attribute`, with the fewest of :data:`IG_STEPS`
  whose completeness gap stays under :data:`COMPLETENESS`), signed: evidence for the followed output
  first; leave-one-out, f(x) − f(x without token i); and :data:`RANDOM_DRAWS` random rankings per
  sentence, the null.
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

Corpus means come with 95% cluster-bootstrap intervals over sentences
(:func:`disan.explore.analyses.stats.sentence_mean`); a verdict against random is given from
:data:`~disan.explore.analyses.casestudy.MIN_SENTENCES` sentences up, as the case study does.

Every computation is a pure function ``(pipe, items, settings) -> result``; the ``refine_*`` generators
give the same result over a growing prefix of the items, so that a page shows its first numbers at once.
"""
from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import nn

from disan.data.batching import length_batches, pad
from disan.data.text import PAD_ID, UNK_ID, check_text
from disan.explore.analyses import stats
from disan.explore.analyses.attribution import attribute
from disan.explore.analyses.casestudy import MIN_SENTENCES, TOO_FEW
from disan.explore.kinds import look_of
from disan.inspect import measures
from disan.inspect.batched import traces
from disan.inspect.pipeline import SentenceTrace
from disan.nn.heads import init_weights
from disan.nn.model import DiSA

K_FRACTIONS = (0.01, 0.05, 0.10, 0.20, 0.50)
RANDOM_DRAWS = 10
PERMUTATION_DRAWS = 20
IG_STEPS = (8, 16, 32, 64, 128, 256)  # integrated gradients takes the first whose completeness gap is small
COMPLETENESS = 0.01
REMOVALS = ("delete", "unk")
BOTH = "both"
RANDOM = "random"
SOURCE2TOKEN = "source2token"
CASCADE = ("head", "source2token", "fusion gates", "DiSA blocks", "word vectors")
WORD_VECTOR_RANGE = 0.05  # the training's rows for words GloVe lacks: U(-0.05, 0.05)
NOISE_ROUNDS = 3  # rescalings of the noise towards the intervention's distance
FIRST = 20        # the refine_* generators' first sample: as many sentences as a verdict needs


@dataclass(frozen=True)
class Settings:
    """What the checks depend on besides the model and the sentences."""
    ks: tuple[float, ...] = K_FRACTIONS
    removal: str = "delete"            # one of REMOVALS
    side: str = BOTH                   # for a pair: "both" or a sentence name of the kind's look
    random_draws: int = RANDOM_DRAWS
    permutation_draws: int = PERMUTATION_DRAWS
    seed: int = 0
    resamples: int = stats.RESAMPLES

    def __post_init__(self):
        if self.removal not in REMOVALS:
            raise ValueError(f"removal must be one of {REMOVALS}, not {self.removal!r}")
        if not self.ks or not all(0 < k <= 1 for k in self.ks):
            raise ValueError(f"every k must be a fraction in (0, 1], not {self.ks}")
        if self.random_draws < 1 or self.permutation_draws < 1:
            raise ValueError("random_draws and permutation_draws must be at least 1")


def top_count(fraction: float, n: int) -> int:
    """The tokens that k = ``fraction`` of ``n`` stands for: ceil(fraction n), at least one."""
    return max(1, math.ceil(fraction * n - 1e-9))


def ranking(scores: np.ndarray) -> list[int]:
    """Positions by score, highest first; ties keep position order; NaN (no score) last."""
    scores = np.asarray(scores, dtype=float)
    return [int(i) for i in np.argsort(-np.where(np.isnan(scores), -np.inf, scores), kind="stable")]


# ---------------------------------------------------------------- inputs and the followed output

@dataclass
class Item:
    """One input: its sentences' tokens and ids, the followed target and f(x)."""
    tokens: list[list[str]]    # per sentence of the input
    ids: list[list[int]]
    target: int | None         # the class whose probability is followed; None: the relatedness score
    value: float               # f(x)
    places: list[tuple[int, int]]  # (sentence, position) of the tokens ranked and removed, in order


def sides_of(pipe, side: str) -> list[int]:
    """The sentences of an input that are ranked and removed: all for "both", else the one named."""
    names = look_of(pipe.kind).sentences
    if side == BOTH:
        return list(range(len(names)))
    if side not in names:
        raise ValueError(f"side must be {BOTH!r} or one of {names}, not {side!r}")
    return [names.index(side)]


def prepare(pipe, items: Sequence, settings: Settings = Settings()) -> list[Item]:
    """The inputs (texts, or (premise, hypothesis) pairs for a pair model) tokenised, with their predicted
    target and f(x). Bad input raises ValueError with the reason."""
    chosen = sides_of(pipe, settings.side)
    out = []
    for item in items:
        texts = pipe.texts(item)
        tokens = [check_text(t) for t in texts]
        out.append(Item(tokens, [pipe.vocab.encode(t) for t in tokens], None, float("nan"),
                        [(s, p) for s in chosen for p in range(len(tokens[s]))]))
    logits = _logits(pipe, [tuple(it.ids) for it in out])
    for it, row in zip(out, logits):
        it.target = None if pipe.model.kind.scored else int(pipe.model.kind.read(row))
        it.value = float(_followed(pipe, row[None], it.target)[0])
    return out


def _followed(pipe, logits: torch.Tensor, target: int | None) -> np.ndarray:
    """(B,) f of logits (B, K): class ``target``'s probability, or the relatedness score."""
    if target is None:
        return pipe.model.kind.read(logits).double().numpy()
    return logits.softmax(dim=-1)[:, target].double().numpy()


@torch.inference_mode()
def _logits(pipe, inputs: Sequence[tuple[Sequence[int], ...]]) -> torch.Tensor:
    """(N, K) logits on the CPU of inputs given as ids per sentence, in length-bucketed batches on the fast
    path. An empty sentence is a row of padding (it encodes to zeros)."""
    out = torch.empty(len(inputs), pipe.model.cfg.n_classes)
    lengths = [max(max(len(s) for s in x), 1) for x in inputs]
    for idx in length_batches(lengths):
        columns = []
        for k in range(len(inputs[idx[0]])):
            ids = pad([list(inputs[i][k]) or [PAD_ID] for i in idx]).to(pipe.device)
            columns.append(ids)
        out[idx] = pipe.model(*columns).float().cpu()
    return out


def values(pipe, inputs: Sequence[tuple[tuple[int, ...], ...]], targets: Sequence[int | None]) -> np.ndarray:
    """(N,) f of each edited input for its target; each distinct (input, target) runs once."""
    keys = list(dict.fromkeys(zip(inputs, targets)))
    index = {key: r for r, key in enumerate(keys)}
    logits = _logits(pipe, [key[0] for key in keys])
    got = np.array([_followed(pipe, logits[r:r + 1], key[1])[0] for r, key in enumerate(keys)])
    return got[[index[key] for key in zip(inputs, targets)]] if keys else np.zeros(0)


def edited(item: Item, chosen: Sequence[int], keep: bool, removal: str) -> tuple[tuple[int, ...], ...]:
    """The input with the ranked tokens at ``chosen`` (indices into ``item.places``) removed, or (``keep``)
    with every other ranked token removed; removal is deletion or ``<unk>``."""
    hit = {item.places[c] for c in chosen}
    ranked = set(item.places)
    out = []
    for s, ids in enumerate(item.ids):
        row = []
        for p, token in enumerate(ids):
            gone = (((s, p) not in hit) if keep else ((s, p) in hit)) and (s, p) in ranked
            if not gone:
                row.append(token)
            elif removal == "unk":
                row.append(UNK_ID)
        out.append(tuple(row))
    return tuple(out)


# ---------------------------------------------------------------- explanations

def _sentence_traces(pipe, items: Sequence[Item]) -> list[list[SentenceTrace]]:
    """Every sentence of every item traced (every intermediate), in batches of similar length."""
    flat = [(i, s) for i, it in enumerate(items) for s in range(len(it.tokens))]
    out = [[None] * len(it.tokens) for it in items]
    for batch, trace in traces(pipe, [items[i].tokens[s] for i, s in flat]):
        for b, k in enumerate(batch):
            i, s = flat[k]
            out[i][s] = SentenceTrace(" ".join(items[i].tokens[s]), items[i].tokens[s], items[i].ids[s], trace[b])
    return out


def integrated_gradients(pipe, sentences: Sequence[SentenceTrace]):
    """:func:`attribute` with the fewest of :data:`IG_STEPS` whose completeness gap is under
    :data:`COMPLETENESS` (the last one tried when none is)."""
    for steps in IG_STEPS:
        attr = attribute(pipe, sentences, steps)
        if abs(attr.completeness_gap) < COMPLETENESS or not math.isfinite(attr.completeness_gap):
            break
    return attr


def explanation_names(pipe) -> list[str]:
    """The explanations this encoder has, in the order the tables show them."""
    blocks = [b.name for b in getattr(pipe.model.encoder, "blocks", [])]
    return ([SOURCE2TOKEN] + [f"attention lift · {b}" for b in blocks] + [f"gate-weighted · {b}" for b in blocks]
            + ["gradient × input", "integrated gradients", "leave-one-out"])


def explain(pipe, items: Sequence[Item], settings: Settings = Settings()) -> list[dict[str, np.ndarray]]:
    """Per item, every explanation's scores of its ranked tokens (in ``item.places`` order)."""
    out = []
    loo_inputs, loo_targets = [], []
    for item, sentences in zip(items, _sentence_traces(pipe, items)):
        per: dict[str, list[np.ndarray]] = {}
        for tr in (s.trace for s in sentences):
            per.setdefault(SOURCE2TOKEN, []).append(measures.token_importance(tr.source2token.probs))
            for block in tr.blocks:
                per.setdefault(f"attention lift · {block.name}", []).append(
                    measures.received_lift(block.probs, block.mask))
                per.setdefault(f"gate-weighted · {block.name}", []).append(
                    measures.gate_weighted_received(block.probs, block.gate).double().numpy())
        attr = integrated_gradients(pipe, sentences)
        per["gradient × input"] = attr.gradient_input
        per["integrated gradients"] = attr.integrated
        out.append({name: np.array([v[s][p] for s, p in item.places], dtype=float) for name, v in per.items()})
        for c in range(len(item.places)):
            loo_inputs.append(edited(item, [c], False, settings.removal))
            loo_targets.append(item.target)
    without = values(pipe, loo_inputs, loo_targets)
    start = 0
    for item, scores in zip(items, out):
        scores["leave-one-out"] = item.value - without[start:start + len(item.places)]
        start += len(item.places)
    return out


def random_rankings(item_index: int, n: int, settings: Settings) -> list[list[int]]:
    """The random rankings of the ``item_index``-th item: drawn from (seed, item index), so that a sample and
    any prefix of it agree."""
    rng = np.random.default_rng([settings.seed, item_index])
    return [[int(i) for i in rng.permutation(n)] for _ in range(settings.random_draws)]


# ---------------------------------------------------------------- erasure

@dataclass
class SentenceErasure:
    """One input's erasure curves: per explanation (and per random draw) its ranking and, per k, f after
    removing the top-k tokens and f keeping only them."""
    tokens: list[list[str]]
    places: list[tuple[int, int]]
    value: float
    rankings: dict[str, list[int]]     # explanation -> indices into places, most important first
    removed: dict[str, np.ndarray]     # explanation -> (K,) f(x without top-k)
    only: dict[str, np.ndarray]        # explanation -> (K,) f(only top-k)
    random_rankings: list[list[int]]
    random_removed: np.ndarray         # (draws, K)
    random_only: np.ndarray            # (draws, K)


def erasure_records(pipe, items: Sequence, settings: Settings = Settings(), start: int = 0) -> list[SentenceErasure]:
    """The erasure curves of every input; ``start`` is the index of the first in the whole sample (it
    seeds the random rankings)."""
    prepared = prepare(pipe, items, settings)
    scores = explain(pipe, prepared, settings)
    jobs, inputs, targets = [], [], []
    for r, (item, per) in enumerate(zip(prepared, scores)):
        ranked = {name: ranking(v) for name, v in per.items()}
        draws = random_rankings(start + r, len(item.places), settings)
        for name, order in [*ranked.items(), *((d, o) for d, o in enumerate(draws))]:
            for k in settings.ks:
                top = order[:top_count(k, len(item.places))]
                for keep in (False, True):
                    jobs.append((r, name, keep))
                    inputs.append(edited(item, top, keep, settings.removal))
                    targets.append(item.target)
        scores[r] = ranked, draws
    got = values(pipe, inputs, targets).reshape(-1, len(settings.ks), 2)
    out, row = [], 0
    for item, (ranked, draws) in zip(prepared, scores):
        curves = got[row:row + len(ranked) + len(draws)]
        row += len(ranked) + len(draws)
        out.append(SentenceErasure(item.tokens, item.places, item.value, ranked,
                                   {name: curves[e, :, 0] for e, name in enumerate(ranked)},
                                   {name: curves[e, :, 1] for e, name in enumerate(ranked)},
                                   draws, curves[len(ranked):, :, 0], curves[len(ranked):, :, 1]))
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
    AOPC with interval, its difference from random with interval and verdict, and the per-k curves."""
    sentences: int
    table: pd.DataFrame      # explanation x (measure AOPC, − random, verdict), intervals as text
    estimates: dict[tuple[str, str], tuple[stats.Estimate, stats.Estimate]]  # (explanation, measure) -> (AOPC, − random)
    curves: pd.DataFrame     # explanation, measure, k, mean
    random_spread: dict[str, stats.NullRange]  # measure -> the spread of random's corpus AOPC over the draws


MEASURES = {"comprehensiveness": True, "sufficiency": False}  # measure -> whether higher is better


def erasure_summary(records: Sequence[SentenceErasure], settings: Settings = Settings()) -> ErasureSummary:
    """The corpus summary of :func:`erasure_records`."""
    n = len(records)
    if not n:
        raise ValueError("no sentences to summarise")
    names = list(records[0].rankings)
    per = {}  # (explanation, measure) -> (S, K) per sentence
    for m in MEASURES:
        field_ = "removed" if m == "comprehensiveness" else "only"
        for name in names:
            per[name, m] = np.array([r.value - getattr(r, field_)[name] for r in records])
        draws = np.array([r.value - getattr(r, "random_" + field_) for r in records])  # (S, D, K)
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
    return ErasureSummary(n, table, estimates, pd.DataFrame(curves), spread)


def _row(name: str, estimates, n: int) -> dict:
    row = {"explanation": name}
    for m, higher in MEASURES.items():
        est, diff = estimates[name, m]
        row[f"{m} (AOPC)"] = _interval(est)
        if name != RANDOM:
            row[f"{m} − random"] = _interval(diff)
            row[f"{m}: verdict"] = verdict(diff, n, higher)
    return row
