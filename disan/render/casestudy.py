"""The case study drawn (:mod:`disan.analyses.casestudy` measures and judges it): the claims table, a plot
per claim, and the paper's two sentences with the same measures.

Reads a study's :class:`~disan.analyses.casestudy.Findings` and, for the paper's sentences, the study itself
by their fields.
"""
from __future__ import annotations

import pandas as pd

from disan.render import charts
from disan.render.figures import STOP_CAPTION, token_bars
from disan.render.tables import interval
from disan.render.views import Drawing, Row

COLUMNS = ["holds?", "paper claim", "measured", "null", "n"]  # the verdict first: the texts after it wrap
# the stop-word claims, each on its per-token measure: (what the paper says, what is measured)
RECEIVED = ("stop words get little attention", "received ÷ uniform")
GATES = ("the fusion gate F is smaller for stop words", "gate")


def _interval(e) -> str:
    """An estimate and its interval: "+0.123 [+0.100, +0.150]"."""
    return interval(e.value, e.low, e.high)


def _undefined(e, resamples: int) -> str:
    """A note on the resamples left out of an interval, or nothing."""
    return f" ({e.undefined} of {resamples} resamples lacked a word class)" if e.undefined else ""


def _class_row(c, said: tuple[str, str], resamples: int) -> dict:
    """The claims row of a stop-word claim (:class:`~disan.analyses.casestudy.ClassClaim`)."""
    claim, what = said
    return {"paper claim": f"{c.block}: {claim}",  # the block first: a cut column still tells the rows apart
            "measured": f"{what}: content {c.content:.3f}, stop {c.stop:.3f}; Δ {_interval(c.difference)}"
                        + _undefined(c.difference, resamples),
            "null": f"word classes shuffled within sentences: Δ {c.null}",
            "holds?": c.verdict, "n": c.n}


def _concentration_row(c) -> dict:
    """The claims row of a concentration claim (:class:`~disan.analyses.casestudy.ConcentrationClaim`)."""
    how = "each feature" if c.per_feature else "mean over features"
    return {"paper claim": f"{c.block}, {how}: a few words receive large attention from all others",
            "measured": f"Gini {c.model:.3f}, uniform {c.uniform:.3f}; Δ {_interval(c.beyond_uniform)}",
            "null": f"each query's attention shuffled among its keys: Gini {c.null:.3f}; "
                    f"Δ {_interval(c.null_beyond_uniform)}",
            "holds?": c.verdict, "n": c.n}


def _directions_row(c) -> dict:
    """The claims row of the directions' claim (:class:`~disan.analyses.casestudy.DirectionsClaim`)."""
    return {"paper claim": f"{c.blocks[0]} and {c.blocks[1]} attend to different words",
            "measured": f"mean τ {_interval(c.tau)}",
            "null": f"unrelated directions (queries' attention shuffled among their keys): τ {_interval(c.null)}",
            "holds?": c.verdict, "n": c.n}


def claims_table(found) -> pd.DataFrame:
    """The table: holds? | paper claim | measured | null | n, one row per claim and DiSA block. Δ is
    content minus stop words (model minus uniform for the Gini), with its 95% interval in brackets; the
    null column gives what the claim's null model gives (the 5-95% range of the shuffles for word
    classes; a 95% interval for the other nulls); "holds?" judges the measure against the null; n counts
    the sentences measured (the unit the bootstrap resamples)."""
    rows = [_class_row(c, RECEIVED, found.resamples) for c in found.received]
    rows += [_concentration_row(c) for c in found.concentration]
    rows += [_class_row(c, GATES, found.resamples) for c in found.gates]
    if found.directions is not None:
        rows.append(_directions_row(found.directions))
    return pd.DataFrame(rows, columns=COLUMNS)


def drawing(found, paper=None, paper_found=None) -> Drawing:
    """The claims table, then a plot per claim, then (if given) the paper's sentences with the same measures:
    ``paper`` their study, ``paper_found`` its findings."""
    gini = {f"{name}{label}": found.per_sentence[f"{name} gini{suffix}"].to_numpy(dtype=float)
            for name in found.blocks for suffix, label in (("", ""), (" features", ", per feature"))}
    verdicts = f" ({found.caveat})" if found.caveat else ""
    rows = [
        Row({"case-claims": claims_table(found)},
            f"Claims over {found.sentences} sentences of {found.corpus}{verdicts}",
            caption="“holds?” compares each measure with its null, a model without the claimed property under the "
                    "same masks and sentence lengths."),
        Row({"case-received": charts.estimate_bars(found.received_by, "attention received ÷ uniform, by word class",
                                                   "mean (95% interval)", reference=1.0),
             "case-gates": charts.estimate_bars(found.gate_by, "fusion gate F, by word class",
                                                "mean gate (95% interval)")},
            "Stop words: attention received and gates"),
        Row({"case-gini": charts.histograms(gini, "concentration beyond the null, per sentence",
                                            "Gini(model) − Gini(queries' attention shuffled among their keys)",
                                            reference=0.0)},
            "Globally important words"),
    ]
    if found.directions is not None:
        rows[-1].panels["case-tau"] = charts.histograms(
            {f"{found.blocks[0]} vs {found.blocks[1]}": found.per_sentence["tau"].to_numpy(dtype=float),
             "null: unrelated directions": found.per_sentence["tau null"].to_numpy(dtype=float)},
            "do the directions rank words alike?", "Kendall's τ per sentence")
    if paper is not None:
        rows += paper_rows(paper, paper_found)
    return Drawing(rows)


def paper_rows(paper, found) -> list[Row]:
    """The paper's sentences (``paper``, their study; ``found``, its findings): the claims' measures (too few
    sentences for verdicts), then per sentence each token's attention received ÷ uniform and mean gate per
    block (stop words marked)."""
    rows = [Row({"case-paper-claims": claims_table(found)},
                f"The paper's {found.sentences} sentences: measures, not verdicts",
                caption=f"A verdict needs at least {found.min_sentences} sentences; the paper reads its claims "
                        "from these.")]
    for s, group in paper.tokens.groupby("sentence"):
        tokens, stop = list(group["token"]), list(group["class"] == "stop")
        received_bars = {name: group[f"{name} relative"].to_numpy() for name in paper.blocks}
        gate_bars = {name: group[f"{name} gate"].to_numpy() for name in paper.blocks}
        rows.append(Row({
            f"case-paper-{s}-received": token_bars(received_bars, tokens, "attention received ÷ uniform", "ratio",
                                                   stop=stop),
            f"case-paper-{s}-gates": token_bars(gate_bars, tokens, "mean fusion gate", "mean gate F", (0.0, 1.0),
                                                stop=stop),
        }, f"The paper's sentence {s + 1}: {' '.join(tokens)}",
            caption=STOP_CAPTION))
    return rows
