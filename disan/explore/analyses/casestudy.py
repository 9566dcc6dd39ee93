"""The paper's case study (its Fig. 4 and 5), measured over a corpus instead of two sentences.

Claims, as the paper reads its two example sentences, and how each is measured here (per DiSA block;
word classes from spaCy's English stop-word list, see :mod:`disan.inspect.measures`):

* stop words get little attention: the attention a token receives relative to uniform attention, mean
  over content words minus mean over stop words; holds when the interval lies above 0;
* a few words are globally important, receiving large attention from all others: per sentence, the Gini
  coefficient of the attention received minus the Gini of what uniform attention under the same mask
  gives (the directional masks alone make it unequal), mean over sentences; holds above 0. Measured on
  the mean over features (what the Attention page shows) and per feature (each of the d_h features has
  its own distribution; the mean of their Gini coefficients);
* the fusion gate F is smaller for stop words (they take more of the attention output s): mean gate over
  content words minus over stop words; holds above 0;
* forward and backward attend to different words: per sentence, Kendall's tau between the two blocks'
  relative attention received; holds when the interval lies below 0.5 (at most a moderate agreement).

Intervals are 95% cluster-bootstrap intervals (1,000 resamples of whole sentences). A claim that holds
with an effect under 5% of the level it is compared with (the stop words' mean, the uniform Gini) is
marked small: with thousands of tokens, tiny differences are significant.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from disan.explore.analyses import charts, stats
from disan.explore.figures import token_bars
from disan.explore.views import Drawing, Row
from disan.inspect.batched import traces
from disan.inspect.measures import WORD_CLASSES, received, word_class

PAPER_SENTENCES = ("Families have some dogs in front of a carousel",
                   "volleyball match is in progress between ladies")
MAX_SENTENCES = 2000
AGREEMENT = 0.5  # the tau below which two directions count as attending to different words


@dataclass
class CaseStudy:
    """Per-token and per-sentence measures of a corpus."""
    corpus: str
    blocks: list[str]          # the DiSA blocks' names, in order
    tokens: pd.DataFrame       # sentence, position, token, class, then per block: "{b} received",
                               # "{b} uniform", "{b} relative" (NaN where no query may attend), "{b} gate"
    sentences: pd.DataFrame    # sentence, length, per block "{b} gini", "{b} gini features" (the mean over features
                               # of each feature's Gini) and "{b} gini uniform"; "tau" (blocks 1 and 2)
    seconds: float             # how long the measurement took


def measure(pipe, token_lists: Sequence[Sequence[str]], corpus: str = "") -> CaseStudy:
    """Trace every sentence (dense, in length-bucketed batches) and keep the measures of the module's
    claims. Raises ValueError for an encoder without DiSA blocks."""
    start = time.perf_counter()
    token_rows, sentence_rows, names = [], [], None
    for idx, tr in traces(pipe, token_lists):
        if not tr.blocks:
            raise ValueError("this encoder has no DiSA blocks: the case study is about their attention and gates")
        names = [block.name for block in tr.blocks]
        # (B, n) received, uniform and mean gate, and (B, n, d) the attention each feature gives each token
        per_block = [(*(t.numpy() for t in received(block.probs, block.mask)), block.gate.mean(dim=-1).numpy(),
                      block.probs.sum(dim=1).numpy()) for block in tr.blocks]
        for b, s in enumerate(idx):
            n = int(tr.lengths[b])
            frame = {"sentence": s, "position": np.arange(n), "token": list(token_lists[s]),
                     "class": [word_class(t) for t in token_lists[s]]}
            row = {"sentence": s, "length": n}
            relative = []
            for name, (got, uniform, gate, by_feature) in zip(names, per_block):
                got, uniform = got[b, :n], uniform[b, :n]
                rel = np.where(uniform > 0, got / np.where(uniform > 0, uniform, 1.0), np.nan)
                frame.update({f"{name} received": got, f"{name} uniform": uniform, f"{name} relative": rel,
                              f"{name} gate": gate[b, :n]})
                reached = uniform > 0
                enough = reached.sum() >= 2
                row[f"{name} gini"] = stats.gini(got[reached]) if enough else np.nan
                row[f"{name} gini features"] = (float(np.mean(stats.gini(by_feature[b, :n][reached])))
                                                if enough else np.nan)
                row[f"{name} gini uniform"] = stats.gini(uniform[reached]) if enough else np.nan
                relative.append(rel)
            row["tau"] = stats.kendall_tau(relative[0], relative[1]) if len(relative) >= 2 else np.nan
            token_rows.append(pd.DataFrame(frame))
            sentence_rows.append(row)
    if names is None:
        raise ValueError("the corpus has no sentence to measure")
    tokens = pd.concat(token_rows, ignore_index=True).sort_values(["sentence", "position"], ignore_index=True)
    sentences = pd.DataFrame(sentence_rows).sort_values("sentence", ignore_index=True)
    return CaseStudy(corpus, names, tokens, sentences, time.perf_counter() - start)


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


def class_means(study: CaseStudy, column: str, resamples: int = 1000, seed: int = 0) -> dict[str, stats.Estimate]:
    """The mean of a per-token column over each word class, with its bootstrap interval."""
    sums = _class_sums(study, column, WORD_CLASSES)
    return {cls: stats.cluster_bootstrap(sums[:, 2 * c:2 * c + 2], lambda t: t[..., 0] / t[..., 1], resamples,
                                         seed=seed) for c, cls in enumerate(WORD_CLASSES)}


def _content_minus_stop(study: CaseStudy, column: str, resamples: int,
                        seed: int) -> tuple[stats.Estimate, float, float, int]:
    """Content minus stop-word mean of a column, with its interval; both means; the sentences that have either."""
    sums = _class_sums(study, column, ("content", "stop"))
    diff = stats.cluster_bootstrap(sums, lambda t: t[..., 0] / t[..., 1] - t[..., 2] / t[..., 3], resamples, seed=seed)
    totals = sums.sum(axis=0)
    sentences = int(((sums[:, 1] + sums[:, 3]) > 0).sum())
    return diff, totals[0] / max(totals[1], 1), totals[2] / max(totals[3], 1), sentences


def _sentence_mean(values: np.ndarray, resamples: int, seed: int) -> stats.Estimate:
    values = values[np.isfinite(values)]
    if not len(values):
        return stats.Estimate(np.nan, np.nan, np.nan)
    sums = np.column_stack([values, np.ones_like(values)])
    return stats.cluster_bootstrap(sums, lambda t: t[..., 0] / t[..., 1], resamples, seed=seed)


SMALL = 0.05  # an effect below this share of the level it is compared with is reported as small


def _verdict(estimate: stats.Estimate, above: float | None = None, below: float | None = None,
             level: float | None = None) -> str:
    """yes / no by the interval; "yes, small" when the effect is under :data:`SMALL` of ``level``."""
    if not np.isfinite(estimate.low):
        return "n/a"
    holds = estimate.low > above if above is not None else estimate.high < below
    if holds and level and abs(estimate.value) < SMALL * abs(level):
        return "yes, small"
    return "yes" if holds else "no"


def _interval(e: stats.Estimate) -> str:
    return f"{e.value:+.3f} [{e.low:+.3f}, {e.high:+.3f}]"


def claims(study: CaseStudy, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The table: paper claim | measured | holds? | n, one row per claim and DiSA block. Δ is content
    minus stop words (model minus uniform for the Gini), with its 95% interval in brackets; n counts the
    sentences measured (the unit the bootstrap resamples)."""
    rows = []
    for name in study.blocks:
        diff, content, stop, n = _content_minus_stop(study, f"{name} relative", resamples, seed)
        rows.append({"paper claim": f"stop words get little attention ({name})",
                     "measured": f"received ÷ uniform: content {content:.3f}, stop {stop:.3f}; Δ {_interval(diff)}",
                     "holds?": _verdict(diff, above=0.0, level=stop), "n": n})
    for name in study.blocks:
        uniform = study.sentences[f"{name} gini uniform"].to_numpy(dtype=float)
        for suffix, how in (("", "mean over features"), (" features", "each feature")):
            model = study.sentences[f"{name} gini{suffix}"].to_numpy(dtype=float)
            diff = _sentence_mean(model - uniform, resamples, seed)
            rows.append({"paper claim": f"a few words receive large attention from all others ({name}, {how})",
                         "measured": f"Gini {np.nanmean(model):.3f}, uniform {np.nanmean(uniform):.3f}; "
                                     f"Δ {_interval(diff)}",
                         "holds?": _verdict(diff, above=0.0, level=np.nanmean(uniform)),
                         "n": int(np.isfinite(model - uniform).sum())})
    for name in study.blocks:
        diff, content, stop, n = _content_minus_stop(study, f"{name} gate", resamples, seed)
        rows.append({"paper claim": f"the fusion gate F is smaller for stop words ({name})",
                     "measured": f"gate: content {content:.3f}, stop {stop:.3f}; Δ {_interval(diff)}",
                     "holds?": _verdict(diff, above=0.0, level=stop), "n": n})
    if len(study.blocks) >= 2:
        tau = study.sentences["tau"].to_numpy(dtype=float)
        est = _sentence_mean(tau, resamples, seed)
        rows.append({"paper claim": f"{study.blocks[0]} and {study.blocks[1]} attend to different words",
                     "measured": f"mean τ {_interval(est)}; different below {AGREEMENT}",
                     "holds?": _verdict(est, below=AGREEMENT), "n": int(np.isfinite(tau).sum())})
    return pd.DataFrame(rows)


def drawing(study: CaseStudy, paper: CaseStudy | None = None, resamples: int = 1000, seed: int = 0) -> Drawing:
    """The claims table, then a plot per claim, then (if given) the paper's sentences with the same measures."""
    received_by = {name: class_means(study, f"{name} relative", resamples, seed) for name in study.blocks}
    gate_by = {name: class_means(study, f"{name} gate", resamples, seed) for name in study.blocks}
    gini = {f"{name}{label}: model − uniform": (study.sentences[f"{name} gini{suffix}"]
                                                 - study.sentences[f"{name} gini uniform"]).to_numpy(dtype=float)
            for name in study.blocks for suffix, label in (("", ""), (" features", ", per feature"))}
    rows = [
        Row({"case-claims": claims(study, resamples, seed)},
            f"Claims over {len(study.sentences)} sentences of {study.corpus}"),
        Row({"case-received": charts.estimate_bars(received_by, "attention received ÷ uniform, by word class",
                                                   "mean (95% interval)", reference=1.0),
             "case-gates": charts.estimate_bars(gate_by, "fusion gate F, by word class", "mean gate (95% interval)")},
            "Stop words: attention received and gates"),
        Row({"case-gini": charts.histograms(gini, "concentration of the attention received, per sentence",
                                            "Gini(model) − Gini(uniform attention)", reference=0.0)},
            "Globally important words"),
    ]
    if len(study.blocks) >= 2:
        rows[-1].panels["case-tau"] = charts.histograms(
            {f"{study.blocks[0]} vs {study.blocks[1]}": study.sentences["tau"].to_numpy(dtype=float)},
            "do the directions rank words alike?", "Kendall's τ per sentence", reference=AGREEMENT)
    if paper is not None:
        rows += paper_rows(paper)
    return Drawing(rows)


def paper_rows(paper: CaseStudy) -> list[Row]:
    """Per paper sentence: each token's attention received ÷ uniform and mean gate per block (stop words marked)."""
    rows = []
    for s, group in paper.tokens.groupby("sentence"):
        labels = [f"{t} · stop" if c == "stop" else t for t, c in zip(group["token"], group["class"])]
        received_bars = {name: group[f"{name} relative"].to_numpy() for name in paper.blocks}
        gate_bars = {name: group[f"{name} gate"].to_numpy() for name in paper.blocks}
        rows.append(Row({
            f"case-paper-{s}-received": token_bars(received_bars, labels, "attention received ÷ uniform", "ratio"),
            f"case-paper-{s}-gates": token_bars(gate_bars, labels, "mean fusion gate", "mean gate F", (0.0, 1.0)),
        }, f"The paper's sentence {s + 1}: {' '.join(group['token'])}"))
    return rows
