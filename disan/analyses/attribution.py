"""Attribution against attention: does what DiSAN attends to agree with what its prediction depends on?
(Jain & Wallace 2019, "Attention is not explanation"; Wiegreffe & Pinter 2019.)

The gradient attributions of :mod:`disan.analyses.gradients` (:data:`METHODS`: integrated gradients and
gradient × input of the followed output) beside the attention explanations of the registry
(:mod:`disan.analyses.explainers`; :data:`ATTENTION`: each token's source2token importance and, per DiSA
block, the attention it receives as lift over uniform attention, the columns "received · {block}").
Agreement is Kendall's tau-b between an attribution and an attention measure, each ranked by the
registry's rule: the scores as they stand, so that a token of strong evidence against the prediction
ranks last, not first (a signed attribution is not folded into its magnitude).

One input's attributions, measures and taus are :func:`explained` (:func:`attributed` attributes it first); a corpus's taus, one row per sentence,
:func:`corpus_agreement`, an analysis of :mod:`disan.analyses.protocol` that adds up over its inputs
(:class:`AttentionAgreement`).

Which explanations agree, beyond attention against gradients: :func:`explanation_agreement` gives the same
tau between every two explanations of the registry computed on the same inputs (the Faithfulness analysis
gives it the explanations its erasure ranks by), as a matrix of means over the inputs, with its null: the tau
between an explanation and random rankings of the same tokens, near 0.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from disan.data.checksums import corpus_digest
from disan.analyses import explainers, progressive, stats
from disan.analyses.choices import STEPS
from disan.analyses.gradients import GRADIENT_INPUT, INTEGRATED, Attribution, attribute
from disan.analyses.protocol import Analysis
from disan.inspect.pipeline import SentenceTrace

# STEPS integrated-gradients steps for one input (disan.analyses.choices) ... and for each input of a corpus, where they are most of the cost: on 60 sst5 test sentences, 16 steps
# took 2.4 s of CPU against 5.9 s for 50, their completeness gap 0.14% (median; 90th percentile 0.23%,
# largest 1.5%) against 0.014%; Kendall's tau ranks the attributions, which so small an error rarely reorders.
# Every input's gap is kept with its taus, and the corpus summary shows it.
CORPUS_STEPS = 16
# Inputs in the first sample of the agreement over a corpus: integrated gradients over every input cost about
# 60 ms of one core on sst5 and sick-e (CORPUS_STEPS steps in one batch), so the usual 50 take 3 s before
# the first figure; 20 take just over 1 s.
FIRST = 20
GAP = "completeness gap"  # the column of each input's |completeness gap| in the corpus table
METHODS = (INTEGRATED, GRADIENT_INPUT)
# the registry's entry -> its columns here
ATTENTION = {explainers.SOURCE2TOKEN: "source2token", explainers.ATTENTION_LIFT: "received"}


def attention_measures(sentence: SentenceTrace) -> pd.DataFrame:
    """Per token: ``source2token`` (its importance, when the encoder has source2token attention) and
    ``received · {block}`` (attention received relative to uniform, NaN where no query may attend it): the
    :data:`ATTENTION` explanations of the registry, read off the sentence's trace."""
    columns = {}
    for name, label in ATTENTION.items():
        for block, scores in explainers.EXPLAINERS[name].read(sentence.trace).items():
            columns[label if block is None else f"{label} · {block}"] = scores
    return pd.DataFrame(columns, index=pd.RangeIndex(len(sentence.tokens), name="position"))


def agreement(attributions: dict[str, np.ndarray], measures: pd.DataFrame) -> pd.DataFrame:
    """Kendall's tau-b between each attribution (rows: methods) and each attention measure (columns), the
    scores ranked as they stand (the registry's rule)."""
    return pd.DataFrame({measure: [stats.kendall_tau(a, measures[measure].to_numpy()) for a in attributions.values()]
                         for measure in measures.columns},
                        index=pd.Index(list(attributions), name="attribution"))


@dataclass
class Explained:
    """One input's attributions beside its attention, sentence by sentence."""
    attribution: Attribution
    tokens: list[list[str]]        # per sentence
    scores: list[pd.DataFrame]     # per sentence: position x (each of METHODS, then each attention measure)
    agreement: list[pd.DataFrame]  # per sentence: Kendall's tau, METHODS x attention measures


def explained(attr: Attribution, sentences: Sequence[SentenceTrace]) -> Explained:
    """The attributions ``attr`` of an input beside the attention measures of its traced sentences, and their
    agreement."""
    scores, taus = [], []
    for k, sentence in enumerate(sentences):
        measures = attention_measures(sentence)
        methods = {m: attr.method(m)[k] for m in METHODS}
        scores.append(pd.concat([pd.DataFrame(methods, index=measures.index), measures], axis=1))
        taus.append(agreement(methods, measures))
    return Explained(attr, [list(s.tokens) for s in sentences], scores, taus)


def attributed(pipe, sentences: Sequence[SentenceTrace], steps: int = STEPS) -> Explained:
    """:func:`explained` of an input's traced sentences, attributed with ``steps`` integrated-gradients steps."""
    return explained(attribute(pipe, sentences, steps), sentences)


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
        attr = attribute(pipe, result.sentences, steps)
        for sentence, table in zip(result.sentences, explained(attr, result.sentences).agreement):
            row = {"input": index, "sentence": sentence.text, "tokens": len(sentence.tokens),
                   GAP: abs(attr.completeness_gap)}
            row.update({f"{m} | {measure}": table.loc[m, measure] for m in METHODS for measure in table.columns})
            rows.append(row)
    return pd.DataFrame(rows)


@dataclass
class CorpusAgreement:
    """Kendall's tau between attribution and attention over the sentences of a sample of inputs."""
    frame: pd.DataFrame                      # one row per sentence (corpus_agreement)
    taus: dict[str, dict[str, np.ndarray]]   # method -> attention measure -> (sentences,) tau
    summary: pd.DataFrame                    # per "method | measure": mean tau, share of sentences with tau > 0
    inputs: int
    gap_median: float                        # of the inputs' |completeness gap| (NaN: none known)
    gap_max: float


def summarised(frame: pd.DataFrame) -> CorpusAgreement:
    """The corpus summary of :func:`corpus_agreement`'s rows."""
    pairs = [c for c in frame.columns if " | " in c]
    taus = {m: {c.split(" | ")[1]: frame[c].to_numpy(dtype=float) for c in pairs if c.startswith(m)} for m in METHODS}
    values = frame[pairs].astype(float)
    counted = values.notna().sum().to_numpy()
    summary = pd.DataFrame({"attribution | attention": pairs, "mean τ": values.mean().to_numpy(),
                            "share with τ > 0": (values > 0).sum().to_numpy() / counted.clip(min=1),
                            "sentences": counted})
    gaps = frame[GAP].to_numpy(dtype=float) if GAP in frame else np.array([])
    known = np.isfinite(gaps).any()
    return CorpusAgreement(frame, taus, summary, frame["input"].nunique() if "input" in frame else 0,
                           float(np.nanmedian(gaps)) if known else float("nan"),
                           float(np.nanmax(gaps)) if known else float("nan"))


@dataclass(frozen=True)
class AttentionAgreement(Analysis):
    """The agreement over inputs (:func:`corpus_agreement`), additive over them: each input is traced and
    attributed alone, and the rows of several samples joined (:func:`disan.analyses.progressive.joined`) are
    those of the direct call."""
    items: tuple
    steps: int = CORPUS_STEPS
    name: ClassVar[str] = "attribution agreement"
    first: ClassVar[int] = FIRST
    additive: ClassVar[bool] = True

    def total(self) -> int:
        return len(self.items)

    def settings(self) -> dict:
        return {"corpus": corpus_digest(self.items), "steps": self.steps}

    def part(self, pipe, places: np.ndarray) -> pd.DataFrame:
        return corpus_agreement(pipe, [self.items[i] for i in places], self.steps)

    def join(self, parts: list[tuple[pd.DataFrame, np.ndarray]]) -> pd.DataFrame:
        return progressive.joined(parts, "input")

    def finish(self, part: pd.DataFrame, size: int) -> CorpusAgreement:
        return summarised(part)


# ---------------------------------------------------------------- every explanation against every other

@dataclass
class ExplanationAgreement:
    """Kendall's tau-b between every two explanations of the same inputs, and between each and random rankings
    of the same tokens (the null), per input and as means over the inputs."""
    names: list[str]                  # the explanations, in the registry's order
    taus: np.ndarray                  # (N, E, E) tau per input (NaN where undefined: a constant explanation)
    null_taus: np.ndarray             # (N, D, E) tau of each explanation with each of the input's D random rankings
    matrix: pd.DataFrame              # explanation x (each explanation, then RANDOM): mean tau over the inputs
    estimates: dict[tuple[str, str], stats.Estimate]  # (explanation, explanation or RANDOM) -> mean tau, interval

    @property
    def inputs(self) -> int:
        """How many inputs the means are over."""
        return len(self.taus)


def explanation_agreement(scores: Sequence[dict[str, np.ndarray]], random: Sequence[np.ndarray],
                          resamples: int = stats.RESAMPLES, seed: int = 0) -> ExplanationAgreement:
    """The agreement of the explanations of some inputs: ``scores``, per input, {explanation: (n,) scores of its
    ranked tokens}, the same explanations for every input; ``random``, per input, (D, n) scores of its random
    rankings (the first token of a ranking scored highest). Tau ranks the scores as they stand, the
    registry's rule (:func:`disan.analyses.explainers.ranking`): a signed explanation's evidence against the
    prediction ranks last, not first, so two explanations agree when they order the tokens alike, sign
    included; a token an explanation gives no score (NaN) is left out of that explanation's pairs. The means
    are over the inputs where tau is defined, with 95% cluster-bootstrap intervals; the null of an input is the
    mean over its random rankings."""
    if len(scores) != len(random) or not len(scores):
        raise ValueError(f"{len(scores)} inputs of explanations against {len(random)} of random rankings")
    names = list(scores[0])
    e = len(names)
    taus, nulls = [], []
    for given, drawn in zip(scores, random):
        drawn = np.asarray(drawn, dtype=np.float64)
        explained = np.array([given[name] for name in names], dtype=np.float64).reshape(e, drawn.shape[-1])
        taus.append(stats.kendall_matrix(explained))
        nulls.append(stats.kendall_matrix(drawn, explained))
    taus, nulls = np.array(taus), np.array(nulls)
    estimates = {}
    for a, first in enumerate(names):
        for b in range(a, e):
            estimates[first, names[b]] = estimates[names[b], first] = stats.sentence_mean(taus[:, a, b], resamples,
                                                                                         seed)
        estimates[first, explainers.RANDOM] = stats.sentence_mean(nulls[:, :, a].mean(axis=1), resamples, seed)
    matrix = pd.DataFrame([[estimates[a, b].value for b in [*names, explainers.RANDOM]] for a in names],
                          index=pd.Index(names, name="explanation"), columns=[*names, explainers.RANDOM])
    return ExplanationAgreement(names, taus, nulls, matrix, estimates)
