"""The paper's case study (its Fig. 4 and 5), measured over a corpus instead of two sentences.

Claims, as the paper reads its two example sentences, how each is measured here (per DiSA block; word
classes from spaCy's English stop-word list, see :mod:`disan.inspect.measures`), and the null
model each is judged against: what a model without the claimed property gives under the same masks and
sentence lengths. A measure can differ from its naive reference by construction (a directional mask
alone makes attention unequal; each feature's Gini is convex at a fixed total, so the mean of per-feature
Ginis exceeds the Gini of their mean in every sentence); the null shares that construction, so only the
part beyond it counts.

* stop words get little attention: the attention a token receives relative to uniform attention, mean
  over content words minus mean over stop words (Δ). Null: the same with the word classes shuffled
  within each sentence (:data:`NULL_DRAWS` shuffles);
* a few words are globally important, receiving large attention from all others: per sentence, the Gini
  coefficient of the attention received, on the mean over features (what the Attention page shows) and
  per feature (each of the d_h features has its own distribution; the mean of their Ginis). Δ is the
  model minus uniform attention under the same mask. Null: every query's attention (each feature's
  distribution over its keys) kept and shuffled among its keys, one permutation per query shared by the
  features, so that no word is preferred by the queries together, while each feature keeps its noise;
* the fusion gate F is smaller for stop words (they take more of the attention output s): mean gate over
  content words minus over stop words. Null: word classes shuffled within each sentence;
* forward and backward attend to different words: per sentence, Kendall's τ between the two blocks'
  relative attention received. Null: unrelated directions, the same shuffles as for the Gini in both
  blocks, so that only the masks and the spread of each query's attention relate them; the claim fails
  when the directions rank words alike beyond that.

A verdict comes from the 95% cluster-bootstrap interval (:data:`~disan.analyses.choices.RESAMPLES`
resamples of whole sentences) of the measure minus its null, per sentence (the mean of the shuffles for
word classes): the claim holds when that interval lies above 0 (for the directions: fails when it does).
A claim that holds with an effect under 5% of the level it is compared with (the stop words' mean, the
uniform Gini) is marked small: with thousands of tokens, tiny differences are significant. Below
:data:`MIN_SENTENCES` sentences no verdict is given: two sentences allow three distinct resamples, one
allows none, and any Δ would read as a finding.
"""
from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterable, Sequence
import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
import torch

from disan.analyses import progressive, stats
from disan.analyses.corpus import OverSentences
from disan.analyses.stats import MIN_SENTENCES, TOO_FEW
from disan.inspect.batched import traces
from disan.inspect.measures import WORD_CLASSES, lift_of, mean_gate, received, word_class

PAPER_SENTENCES = ("Families have some dogs in front of a carousel",
                   "volleyball match is in progress between ladies")
NULL_DRAWS = 200     # shuffles of the word classes in the stop-word nulls
SMALL = 0.05         # an effect below this share of the level it is compared with is reported as small


@dataclass
class CaseStudy:
    """Per-token and per-sentence measures of a corpus."""
    corpus: str
    blocks: list[str]          # the DiSA blocks' names, in order
    tokens: pd.DataFrame       # sentence, position, token, class, then per block: "{b} received",
                               # "{b} uniform", "{b} relative" (NaN where no query may attend), "{b} gate"
    sentences: pd.DataFrame    # sentence, length, per block "{b} gini", "{b} gini features" (the mean over features
                               # of each feature's Gini), "{b} gini uniform" and the nulls "{b} gini null",
                               # "{b} gini features null"; "tau" (blocks 1 and 2) and its null "tau null"
                               # (the same shuffles in both blocks)
    seconds: float             # how long the measurement took


def measure(pipe, token_lists: Sequence[Sequence[str]], corpus: str = "", seed: int = 0) -> CaseStudy:
    """Trace every sentence (dense, in length-bucketed batches) and keep the measures of the module's
    claims and of their nulls (``seed`` and each sentence's tokens draw its null's shuffles: :func:`sentence_rng`,
    so a sentence's measures do not depend on the others measured with it). Raises ValueError for an encoder
    without DiSA blocks."""
    return measure_traces(traces(pipe, token_lists), token_lists, corpus, seed)


def measure_traces(batches: Iterable, token_lists: Sequence[Sequence[str]], corpus: str = "",
                   seed: int = 0) -> CaseStudy:
    """The measures of batched traces: ``batches`` yields (sentence indices, an encoder trace with a batch
    axis, padding and ``lengths``), as :func:`disan.inspect.batched.traces` does."""
    start = time.perf_counter()
    token_rows, sentence_rows, names = [], [], None
    for idx, tr in batches:
        if not tr.blocks:
            raise ValueError("this encoder has no DiSA blocks: the case study is about their attention and gates")
        names = [block.name for block in tr.blocks]
        rngs = [sentence_rng(token_lists[s], seed) for s in idx]
        per_block = []
        for block in tr.blocks:
            probs, mask = torch.as_tensor(block.probs), torch.as_tensor(block.mask)
            (size, n, _), d = mask.shape, probs.shape[-1]
            # the null: each query's attention shuffled among its keys, one permutation per query for all
            # features; adding every cell into the key it moves to gives what the tokens receive under the
            # null without building the shuffled (B, n, n, d) attention (3x faster than gathering it)
            moves_to = torch.from_numpy(_null_moves(mask.numpy(), tr.lengths, rngs))
            null_by_feature = torch.zeros(size, n, d, dtype=probs.dtype).scatter_add_(
                1, moves_to.reshape(size, n * n, 1).expand(-1, -1, d), probs.reshape(size, n * n, d))
            # (B, n) received, uniform and mean gate; (B, n, d) what each feature gives each token, and its null
            per_block.append((*(t.numpy() for t in received(probs, mask)), mean_gate(block.gate),
                              received(probs, mask, by_feature=True)[0].numpy(), null_by_feature.numpy()))
        for b, s in enumerate(idx):
            n = int(tr.lengths[b])
            frame = {"sentence": s, "position": np.arange(n), "token": list(token_lists[s]),
                     "class": [word_class(t) for t in token_lists[s]]}
            row = {"sentence": s, "length": n}
            relative, null_relative = [], []
            for name, (got, uniform, gate, by_feature, null_by_feature) in zip(names, per_block):
                got, uniform = got[b, :n], uniform[b, :n]
                reached = uniform > 0
                rel, null_rel = (lift_of(r, uniform) for r in (got, null_by_feature[b, :n].mean(axis=-1)))
                frame.update({f"{name} received": got, f"{name} uniform": uniform, f"{name} relative": rel,
                              f"{name} gate": gate[b, :n]})
                enough = reached.sum() >= 2
                for suffix, features in (("", by_feature), (" null", null_by_feature)):
                    features = features[b, :n][reached]
                    row[f"{name} gini{suffix}"] = stats.gini(features.mean(axis=-1)) if enough else np.nan
                    row[f"{name} gini features{suffix}"] = float(np.mean(stats.gini(features))) if enough else np.nan
                row[f"{name} gini uniform"] = stats.gini(uniform[reached]) if enough else np.nan
                relative.append(rel)
                null_relative.append(null_rel)
            row["tau"] = _tau(*relative[:2]) if len(relative) >= 2 else np.nan
            row["tau null"] = _tau(*null_relative[:2]) if len(relative) >= 2 else np.nan
            token_rows.append(pd.DataFrame(frame))
            sentence_rows.append(row)
    if names is None:
        raise ValueError("the corpus has no sentence to measure")
    tokens = pd.concat(token_rows, ignore_index=True).sort_values(["sentence", "position"], ignore_index=True)
    sentences = pd.DataFrame(sentence_rows).sort_values("sentence", ignore_index=True)
    return CaseStudy(corpus, names, tokens, sentences, time.perf_counter() - start)


# Tokens that receive the same attention in exact arithmetic (the same word vector, attended alike) differ in
# float32 by rounding that depends on the batch a sentence is traced in, and Kendall's tau jumps when their
# order flips: it is taken of the values rounded to this many decimals, where such ties stay ties.
TAU_DECIMALS = 5


def _tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau of two blocks' relative attention received, ties within :data:`TAU_DECIMALS` kept."""
    return stats.kendall_tau(np.round(a, TAU_DECIMALS), np.round(b, TAU_DECIMALS))


def sentence_rng(tokens: Sequence[str], seed: int = 0) -> np.random.Generator:
    """The generator of one sentence's null shuffles, seeded by its tokens: a sentence's null is the same
    whatever it is measured with, so studies of disjoint sentences add up (:func:`combine`)."""
    return np.random.default_rng([seed, zlib.crc32("\x1f".join(tokens).encode("utf-8"))])


def _null_moves(mask: np.ndarray, lengths, rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """(B, n, n) the key each cell of a batch's attention moves to under the null (the inverse of
    :func:`~disan.analyses.stats.row_shuffle_index`), drawn per sentence from its own generator over
    its real tokens only, so that the padding of the batch it is in changes nothing; padding stays in place."""
    moves = np.broadcast_to(np.arange(mask.shape[-1]), mask.shape).copy()
    for b, rng in enumerate(rngs):
        n = int(lengths[b])
        moves[b, :n, :n] = np.argsort(stats.row_shuffle_index(mask[b, :n, :n], rng), axis=-1)
    return moves


def combine(parts: Sequence[tuple[CaseStudy, Sequence[int]]], corpus: str = "") -> CaseStudy:
    """One study of sentences measured apart: ``parts`` pairs each study with its sentences' places in one
    corpus (no place twice), and the sentences are numbered by their order there, as :func:`measure` numbers
    the sentences it is given. A sentence's measures, its null included (:func:`sentence_rng`), do not depend
    on what it was measured with, so this is :func:`measure` of them all (to float32 rounding): a stage of a
    progressive computation measures only the sentences that the stage before did not."""
    if len({tuple(study.blocks) for study, _ in parts}) != 1:
        raise ValueError("the parts come from different encoders")
    return CaseStudy(corpus, parts[0][0].blocks,
                     progressive.joined([(study.tokens, places) for study, places in parts], "sentence"),
                     progressive.joined([(study.sentences, places) for study, places in parts], "sentence"),
                     sum(study.seconds for study, _ in parts))


@dataclass(frozen=True)
class Study(OverSentences):
    """The case study of a corpus (:func:`measure`), additive over its sentences: a sentence's measures do not
    depend on the others (:func:`combine`)."""
    name: ClassVar[str] = "case study"
    measure: ClassVar[Callable] = staticmethod(measure)
    combine: ClassVar[Callable] = staticmethod(combine)

    def finish(self, part: CaseStudy, size: int) -> CaseStudy:
        return dataclasses.replace(part, corpus=self.sample_name(self.corpus.name, size))


def _class_sums(study: CaseStudy, column: str, classes: Sequence[str]) -> np.ndarray:
    """(S, 2 x classes) per sentence: the sum of ``column`` over each word class and the class's count
    (tokens where the column is NaN left out)."""
    frame = study.tokens[["sentence", "class", column]].dropna()
    sentences = study.sentences["sentence"].to_numpy()
    out = np.zeros((len(sentences), 2 * len(classes)))
    row_of = {s: k for k, s in enumerate(sentences)}
    rows = frame["sentence"].map(row_of).to_numpy()
    for c, cls in enumerate(classes):
        chosen = frame["class"].to_numpy() == cls
        np.add.at(out[:, 2 * c], rows[chosen], frame[column].to_numpy()[chosen])
        np.add.at(out[:, 2 * c + 1], rows[chosen], 1)
    return out


def class_means(study: CaseStudy, column: str, resamples: int = stats.RESAMPLES,
                seed: int = 0) -> dict[str, stats.Estimate]:
    """The mean of a per-token column over each word class, with its bootstrap interval."""
    sums = _class_sums(study, column, WORD_CLASSES)
    return {cls: stats.cluster_bootstrap(sums[:, 2 * c:2 * c + 2], lambda t: t[..., 0] / t[..., 1], resamples,
                                         seed=seed) for c, cls in enumerate(WORD_CLASSES)}


def _content_minus_stop(study: CaseStudy, column: str, resamples: int,
                        seed: int) -> tuple[stats.Estimate, float, float, int]:
    """Content minus stop-word mean of a column, with its interval; both means; the sentences resampled
    (those with a token of either class)."""
    sums = _class_sums(study, column, ("content", "stop"))
    sums = sums[(sums[:, 1] + sums[:, 3]) > 0]
    if not len(sums):
        return stats.Estimate(np.nan, np.nan, np.nan), np.nan, np.nan, 0
    diff = stats.cluster_bootstrap(sums, lambda t: t[..., 0] / t[..., 1] - t[..., 2] / t[..., 3], resamples, seed=seed)
    totals = sums.sum(axis=0)
    return diff, totals[0] / max(totals[1], 1), totals[2] / max(totals[3], 1), len(sums)


def shuffled_classes(study: CaseStudy, columns: Sequence[str], draws: int = NULL_DRAWS,
                     seed: int = 0) -> dict[str, np.ndarray]:
    """(draws,) per per-token column: content minus stop-word mean with the word classes shuffled among
    the tokens of each sentence (one shuffle per draw for every column; tokens where a column is NaN
    keep their place and are left out of its means). Each sentence keeps its length, its positions and
    how many stop words it has; which tokens they are is random."""
    tokens = study.tokens  # sorted by sentence, then position
    sentence = tokens["sentence"].to_numpy(dtype=float)
    classes = tokens["class"].to_numpy()
    values = {column: tokens[column].to_numpy(dtype=float) for column in columns}
    finite = {column: np.isfinite(v) for column, v in values.items()}
    rng = np.random.default_rng(seed)
    out = {column: np.full(draws, np.nan) for column in columns}
    for r in range(draws):
        # sorted by sentence, then by a random key: a random permutation within each sentence
        shuffled = classes[np.argsort(sentence + 0.5 * rng.random(len(sentence)), kind="stable")]
        content, stop = shuffled == "content", shuffled == "stop"
        for column, v in values.items():
            c, s = v[content & finite[column]], v[stop & finite[column]]
            if len(c) and len(s):
                out[column][r] = c.mean() - s.mean()
    return out


def _verdict(effect: stats.Estimate, n: int, level: float | None = None, claim_is_beyond: bool = True) -> str:
    """The verdict on a claim from the interval of measure minus null. A claim of an effect holds when
    the interval lies above 0 ("yes, small" when the effect is under :data:`SMALL` of ``level``); a
    claim of no effect (``claim_is_beyond`` False) fails when it does. None below :data:`MIN_SENTENCES`
    sentences."""
    if n < MIN_SENTENCES:
        return TOO_FEW
    if not np.isfinite(effect.low):
        return "n/a"
    beyond = effect.low > 0
    if not claim_is_beyond:
        return "no: alike beyond the null" if beyond else "yes: within the null"
    if not beyond:
        return "no: not beyond the null"
    if level and abs(effect.value) < SMALL * abs(level):
        return "yes, small"
    return "yes"


def _shifted(e: stats.Estimate, by: float) -> stats.Estimate:
    return stats.Estimate(e.value - by, e.low - by, e.high - by, e.undefined)


@dataclass
class ClassClaim:
    """A stop-word claim on one block: the content minus stop-word mean of a per-token measure (relative
    attention received, or the gate), against the word classes shuffled within sentences."""
    block: str
    difference: stats.Estimate  # content − stop, with its interval
    content: float              # the content words' mean
    stop: float                 # the stop words'
    null: stats.NullRange       # the difference over the shuffles (:func:`shuffled_classes`)
    verdict: str                # :func:`_verdict` of the difference beyond the null's mean
    n: int                      # sentences resampled (those with a word of either class)


@dataclass
class ConcentrationClaim:
    """"A few words receive large attention from all others" on one block: the Gini of the attention
    received, against each query's attention shuffled among its keys."""
    block: str
    per_feature: bool           # each feature's Gini (their mean), or the Gini of the mean over features
    model: float                # the mean Gini per sentence
    uniform: float              # of uniform attention under the same mask
    null: float                 # of the null
    beyond_uniform: stats.Estimate       # model − uniform, per sentence, with its interval
    null_beyond_uniform: stats.Estimate  # null − uniform
    verdict: str                # :func:`_verdict` of model − null
    n: int                      # sentences where all three are defined


@dataclass
class DirectionsClaim:
    """"The directions attend to different words": Kendall's τ between the first two blocks' relative
    attention received, against unrelated directions."""
    blocks: list[str]           # the two blocks
    tau: stats.Estimate         # the mean τ per sentence, with its interval
    null: stats.Estimate        # of the null
    verdict: str                # fails when τ − null lies above 0
    n: int


@dataclass
class Findings:
    """What a case study finds (:func:`findings`): each claim measured, against its null and judged, and what
    the word classes receive and gate, with 95% cluster-bootstrap intervals."""
    corpus: str
    blocks: list[str]
    sentences: int                       # sentences measured
    resamples: int                       # the bootstrap's
    min_sentences: int                   # :data:`MIN_SENTENCES`
    caveat: str                          # :data:`TOO_FEW` below it, else ""
    received: list[ClassClaim]           # per block: stop words get little attention
    concentration: list[ConcentrationClaim]  # per block, on the mean over features then per feature
    gates: list[ClassClaim]              # per block: the fusion gate is smaller for stop words
    directions: DirectionsClaim | None   # with two blocks or more
    received_by: dict[str, dict[str, stats.Estimate]]  # per block and word class: mean relative attention received
    gate_by: dict[str, dict[str, stats.Estimate]]      # and mean gate
    per_sentence: pd.DataFrame           # per sentence: "{b} gini" and "{b} gini features" beyond their nulls
                                         # (model − null); "tau" and "tau null" with two blocks or more


def _class_claim(study: CaseStudy, name: str, column: str, null_draws: np.ndarray, resamples: int,
                 seed: int) -> ClassClaim:
    """A stop-word claim on the block's relative attention received or its gate, against the draws of its
    null (:func:`shuffled_classes`)."""
    diff, content, stop, n = _content_minus_stop(study, f"{name} {column}", resamples, seed)
    null = stats.null_range(null_draws)
    return ClassClaim(name, diff, float(content), float(stop), null, _verdict(_shifted(diff, null.mean), n, level=stop),
                      n)


def _concentration_claim(study: CaseStudy, name: str, per_feature: bool, resamples: int,
                         seed: int) -> ConcentrationClaim:
    suffix = " features" if per_feature else ""
    uniform = study.sentences[f"{name} gini uniform"].to_numpy(dtype=float)
    model = study.sentences[f"{name} gini{suffix}"].to_numpy(dtype=float)
    null = study.sentences[f"{name} gini{suffix} null"].to_numpy(dtype=float)
    kept = np.isfinite(model) & np.isfinite(null) & np.isfinite(uniform)
    model, null, uniform = model[kept], null[kept], uniform[kept]
    return ConcentrationClaim(name, per_feature, float(np.mean(model)), float(np.mean(uniform)), float(np.mean(null)),
                              stats.sentence_mean(model - uniform, resamples, seed),
                              stats.sentence_mean(null - uniform, resamples, seed),
                              _verdict(stats.sentence_mean(model - null, resamples, seed), int(kept.sum()),
                                       level=np.mean(uniform)),
                              int(kept.sum()))


def _directions_claim(study: CaseStudy, resamples: int, seed: int) -> DirectionsClaim:
    tau = study.sentences["tau"].to_numpy(dtype=float)
    null = study.sentences["tau null"].to_numpy(dtype=float)
    kept = np.isfinite(tau) & np.isfinite(null)
    tau, null = tau[kept], null[kept]
    # the claim is that the directions differ: it fails when they agree beyond unrelated ones
    return DirectionsClaim(study.blocks[:2], stats.sentence_mean(tau, resamples, seed),
                           stats.sentence_mean(null, resamples, seed),
                           _verdict(stats.sentence_mean(tau - null, resamples, seed), len(tau), claim_is_beyond=False),
                           len(tau))


def findings(study: CaseStudy, resamples: int = stats.RESAMPLES, seed: int = 0) -> Findings:
    """The claims of the module measured on a study, each against its null and judged (per DiSA block; the
    directions on the first two), and the word classes' mean attention received and gate: intervals from
    ``resamples`` resamples of whole sentences. Below :data:`MIN_SENTENCES` sentences the verdicts say that
    there are too few."""
    nulls = shuffled_classes(study, [f"{name} {column}" for name in study.blocks for column in ("relative", "gate")],
                             seed=seed)
    received = [_class_claim(study, name, "relative", nulls[f"{name} relative"], resamples, seed)
                for name in study.blocks]
    concentration = [_concentration_claim(study, name, per_feature, resamples, seed)
                     for name in study.blocks for per_feature in (False, True)]
    gates = [_class_claim(study, name, "gate", nulls[f"{name} gate"], resamples, seed) for name in study.blocks]
    two = len(study.blocks) >= 2
    sentences = study.sentences
    per_sentence = pd.DataFrame({f"{name} gini{suffix}": (sentences[f"{name} gini{suffix}"]
                                                          - sentences[f"{name} gini{suffix} null"]).to_numpy(dtype=float)
                                 for name in study.blocks for suffix in ("", " features")})
    if two:
        per_sentence["tau"] = sentences["tau"].to_numpy(dtype=float)
        per_sentence["tau null"] = sentences["tau null"].to_numpy(dtype=float)
    return Findings(study.corpus, list(study.blocks), len(sentences), resamples, MIN_SENTENCES,
                    "" if len(sentences) >= MIN_SENTENCES else TOO_FEW, received, concentration, gates,
                    _directions_claim(study, resamples, seed) if two else None,
                    {name: class_means(study, f"{name} relative", resamples, seed) for name in study.blocks},
                    {name: class_means(study, f"{name} gate", resamples, seed) for name in study.blocks},
                    per_sentence)
