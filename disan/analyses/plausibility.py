"""Plausibility: do an explanation's token scores single out the words humans marked?

The Stanford Sentiment Treebank labels every word of its sentences with a sentiment, 2 being neutral
(:mod:`disan.data.treebank` gives the label of each token a model reads). Per sentence, the tokens humans
marked are those not neutral, and an explanation is scored by the average precision of its ranking of them
(DeYoung et al. 2020, ERASER's AUPRC for soft scores): the mean, over the marked tokens, of the precision of
the tokens scored at least as high as each, tied scores counting as one threshold, as scikit-learn's
``average_precision_score`` does. A signed explanation (gradient × input, integrated gradients, leave-one-out)
is ranked by the absolute value of its scores: a word that pushes against the prediction ("dull" in a review
rated positive, "not") is as much a reason a human marks as one that pushes for it, and the treebank marks the
words of either polarity (SST labels "not" negative). A token without a score
(NaN) ranks below every scored one.

A sentence where humans marked no token, or every token, ranks nothing against anything: it is left out of the
means and counted. The null is random scores: :data:`NULL_DRAWS` seeded draws per sentence, each sentence's
from a generator seeded by its labels alone (:func:`null_rng`), so that a sentence's null does not depend
on what it is scored with and tables of disjoint sentences add up (:func:`~disan.analyses.progressive.joined`
on ``sentence``). The corpus figures are means over sentences with 95% cluster-bootstrap intervals
(:func:`disan.analyses.stats.sentence_mean`): the mean AP, the null's, and their difference per sentence,
whose interval gives the verdict against random (:func:`disan.analyses.faithfulness.verdict`, from
:data:`~disan.analyses.casestudy.MIN_SENTENCES` sentences up).

Over a model's test inputs, :class:`Plausible` is the analysis of :mod:`disan.analyses.protocol` that the
Faithfulness page runs: it explains each input as erasure does (:func:`disan.analyses.faithfulness.explain`,
the same settings) and adds up over the inputs. ``disan faithfulness`` scores the explanations its erasure
ranked by instead, without explaining twice.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from disan.analyses import progressive, stats
from disan.analyses.casestudy import sentence_rng
from disan.analyses.explainers import prepare
from disan.analyses.faithfulness import Check, explain, signs, verdict
from disan.data.checksums import corpus_digest
from disan.data.treebank import marked

# Random score vectors per sentence: the null's per-sentence mean then strays from the expected AP of a random
# ranking by a tenth of a single draw's spread, well below the spread of AP across sentences.
NULL_DRAWS = 100
NO_MARK = "no token marked"
ALL_MARKED = "every token marked"


def average_precision(scores, relevant) -> np.ndarray:
    """The average precision of the ranking of each row of ``scores`` (..., n), highest first, against the
    relevant tokens (n,) (at least one): the sum over the distinct score thresholds of the recall gained there
    times the precision there (scikit-learn's definition; tied scores are one threshold). NaN ranks last.
    A float for one row, else an array of the leading shape."""
    scores = np.asarray(scores, dtype=np.float64)
    relevant = np.asarray(relevant, dtype=bool)
    if scores.shape[-1] != len(relevant) or not relevant.any():
        raise ValueError(f"{scores.shape[-1]} scores against {len(relevant)} labels, {relevant.sum()} relevant: "
                         f"need one label per score and at least one relevant")
    scores = np.where(np.isnan(scores), -np.inf, scores)
    order = np.argsort(-scores, axis=-1, kind="stable")
    ranked = np.take_along_axis(scores, order, axis=-1)
    hits = np.cumsum(relevant[order], axis=-1)                                   # true positives down to each rank
    ends = np.concatenate([ranked[..., 1:] != ranked[..., :-1], np.ones_like(ranked[..., :1], dtype=bool)], axis=-1)
    at_ends = np.where(ends, hits, 0)                                            # ... at the end of each threshold
    before = np.concatenate([np.zeros_like(at_ends[..., :1]), np.maximum.accumulate(at_ends, axis=-1)[..., :-1]],
                            axis=-1)                                             # ... at the threshold before
    precision = hits / np.arange(1, len(relevant) + 1)
    ap = np.where(ends, (hits - before) * precision, 0.0).sum(axis=-1) / relevant.sum()
    return float(ap) if ap.ndim == 0 else ap


def null_rng(labels, seed: int = 0) -> np.random.Generator:
    """The generator of one sentence's null draws, seeded by its human labels (written as the tokens of
    :func:`~disan.analyses.casestudy.sentence_rng`): the null AP depends on which tokens are marked and on
    nothing else."""
    return sentence_rng([str(int(label)) for label in labels], seed)


def left_out(labels) -> str:
    """Why a sentence is left out of the means ("" when it is not)."""
    mark = marked(labels)
    return NO_MARK if not mark.any() else ALL_MARKED if mark.all() else ""


def score_sentences(scores: Sequence[Mapping[str, np.ndarray]], signed: Mapping[str, bool], labels: Sequence,
                    draws: int = NULL_DRAWS, seed: int = 0) -> pd.DataFrame:
    """One row per sentence and explanation: sentence (its index in ``scores``), explanation, tokens, marked
    (the tokens humans marked), left out (why, or ""), ap, null ap (the mean over ``draws`` random score
    vectors) and difference (ap − null ap); the three are NaN for a sentence left out.

    ``scores``: per sentence, {explanation: (n,) token scores}, the same explanations for every sentence;
    ``signed``: per explanation, whether its scores are signed (ranked by absolute value); ``labels``: per
    sentence, (n,) the human labels 0..4 of its tokens."""
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} sentences of scores against {len(labels)} of labels")
    if draws < 1:
        raise ValueError("the null needs at least one draw")
    names = list(scores[0]) if len(scores) else []
    missing = [name for name in names if name not in signed]
    if missing:
        raise ValueError(f"whether {missing[0]!r} is signed is not given")
    rows = []
    for s, (given, human) in enumerate(zip(scores, labels)):
        if set(given) != set(names):
            raise ValueError(f"sentence {s} has the explanations {sorted(given)}, not {sorted(names)}")
        human = np.asarray(human)
        mark, why = marked(human), left_out(human)
        null = float("nan")
        if not why:
            null = float(average_precision(null_rng(human, seed).random((draws, len(human))), mark).mean())
        for name in names:
            values = np.asarray(given[name], dtype=np.float64)
            if values.shape != human.shape:
                raise ValueError(f"sentence {s}: {len(values)} scores of {name!r} against {len(human)} labels")
            ap = float("nan") if why else average_precision(np.abs(values) if signed[name] else values, mark)
            rows.append({"sentence": s, "explanation": name, "tokens": len(human), "marked": int(mark.sum()),
                         "left out": why, "ap": ap, "null ap": null, "difference": ap - null})
    return pd.DataFrame(rows, columns=["sentence", "explanation", "tokens", "marked", "left out", "ap", "null ap",
                                       "difference"])


@dataclass
class Plausibility:
    """Per-sentence average precisions against the human marks and their corpus summary."""
    sentences: pd.DataFrame  # score_sentences' rows
    summary: pd.DataFrame    # one row per explanation (see summarise)


SUMMARY_COLUMNS = ["explanation", "ap", "ap low", "ap high", "null ap", "null low", "null high", "difference",
                   "difference low", "difference high", "verdict", "sentences", "left out"]


def summarise(sentences: pd.DataFrame, resamples: int = stats.RESAMPLES, seed: int = 0) -> Plausibility:
    """The corpus summary of :func:`score_sentences`' rows, one row per explanation in their order: the mean AP,
    the null's and their difference, each with its 95% bootstrap interval over the sentences used (low, high);
    the verdict against random; the sentences used and those left out."""
    rows = []
    for name, own in sentences.groupby("explanation", sort=False):
        used = own[own["left out"] == ""]
        row = {"explanation": name}
        for column, prefix in (("ap", "ap"), ("null ap", "null"), ("difference", "difference")):
            estimate = stats.sentence_mean(used[column].to_numpy(), resamples, seed)
            row |= {column: estimate.value, f"{prefix} low": estimate.low, f"{prefix} high": estimate.high}
            if column == "difference":
                row["verdict"] = verdict(estimate, len(used), higher_is_better=True)
        rows.append(row | {"sentences": len(used), "left out": len(own) - len(used)})
    return Plausibility(sentences, pd.DataFrame(rows, columns=SUMMARY_COLUMNS))


def plausibility(scores: Sequence[Mapping[str, np.ndarray]], signed: Mapping[str, bool], labels: Sequence,
                 draws: int = NULL_DRAWS, seed: int = 0, resamples: int = stats.RESAMPLES) -> Plausibility:
    """:func:`summarise` of :func:`score_sentences`."""
    return summarise(score_sentences(scores, signed, labels, draws, seed), resamples, seed)


@dataclass(frozen=True)
class Plausible(Check):
    """Plausibility of the explanations of ``items`` (single sentences), given ``labels``, per item the human
    label 0..4 of each of its tokens (:func:`disan.data.treebank.trained_labels`); additive over the items:
    an item's average precisions and null depend on it alone (its explanations are seeded by its place, its
    null by its labels)."""
    labels: tuple  # per item, a tuple of ints
    name: ClassVar[str] = "faithfulness plausibility"
    additive: ClassVar[bool] = True

    def settings(self) -> dict:
        return {**super().settings(), "labels": corpus_digest([list(map(int, labels)) for labels in self.labels])}

    def part(self, pipe, places: np.ndarray) -> pd.DataFrame:
        scores = explain(pipe, prepare(pipe, self.sample(places), self.options.side), self.options, places=places)
        return score_sentences(scores, signs(pipe, self.options), [np.asarray(self.labels[p]) for p in places],
                               seed=self.options.seed)

    def join(self, parts: list[tuple[pd.DataFrame, np.ndarray]]) -> pd.DataFrame:
        return progressive.joined(parts, "sentence")

    def finish(self, part: pd.DataFrame, size: int) -> Plausibility:
        return summarise(part, self.options.resamples, self.options.seed)
