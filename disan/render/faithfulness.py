"""What the Faithfulness page and ``viz.faithfulness`` draw of the checks of :mod:`disan.analyses.faithfulness`:
erasure's bars and its table per measure with the explanations' agreement matrix, the interventions' tables, the
randomisation checks' bars and table, and plausibility's bars and table (:mod:`disan.analyses.plausibility`, also
``viz.plausibility``), read from the results' fields, each table's verdict before the columns it is read from; and
the line of one input's reading that the Attention, Source2token and Attribution pages and ``viz.reading`` write
under an explanation."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd

from disan.render import charts, markup
from disan.render.kinds import look_of
from disan.render.tables import UNDEFINED, interval, why_undefined
from disan.render.views import Drawing, Row


# an erasure measure's columns in the summary's table -> their headers on screen, the verdict first
ERASURE_COLUMNS = {"{m}: verdict": "verdict", "{m} − random": "− random", "{m} (AOPC)": "AOPC"}
# the interventions' table on screen: what the verdict reads first, the prediction flips in a table of their own
CHANGE_COLUMNS = ["block", "intervention", "verdict", "− noise", "output change", "noise of that size"]
FLIP_COLUMNS = ["block", "intervention", "flips", "noise flips"]
ITSELF = "random against itself is no comparison"


def erasure_tables(summary) -> dict[str, pd.DataFrame]:
    """The erasure summary's table as one table per measure (comprehensiveness, sufficiency), each
    explanation's verdict first: one table of both is wider than the page."""
    return {m: why_undefined(summary.table[["explanation", *(c.format(m=m) for c in ERASURE_COLUMNS)]]
                             .set_axis(["explanation", *ERASURE_COLUMNS.values()], axis=1),
                             {"verdict": ITSELF, "− random": ITSELF})
            for m in summary.random_spread}


def erasure_drawing(summary, kind: str | None = None) -> Drawing:
    """Comprehensiveness and sufficiency (AOPC) of every explanation with intervals, random's among them,
    and per measure the table of differences from random with their verdicts (an erasure summary);
    ``kind``, the model's, names the output followed."""
    measures = list(summary.random_spread)  # comprehensiveness, sufficiency
    bars = {m: {name: summary.estimates[name, m][0] for name in summary.table["explanation"]} for m in measures}
    spread = "; ".join(f"{m} {summary.random_spread[m]}" for m in measures)
    followed = f"f = {look_of(kind).followed}" if kind is not None else "f = the followed output"
    return Drawing([
        Row({"faith-erasure-bars": charts.estimate_bars(bars, f"Erasure over {summary.sentences} inputs (AOPC)",
                                                        "f(x) − f(edited)")},
            "Erasure: remove the top-k tokens (comprehensiveness, higher is better) or keep only them "
            "(sufficiency, lower is better)",
            f"{followed}; k = {', '.join(f'{k:.0%}' for k in summary.ks)} of the tokens, at least one. Random's "
            f"corpus AOPC over its {summary.random_draws} draws (mean [5th, 95th percentile]): {spread}."),
        *(Row({f"faith-erasure-{m}": table}, caption=f"{m.capitalize()}: the verdict on the explanation minus "
                                                      "random, then that difference and the AOPC, with intervals")
          for m, table in erasure_tables(summary).items()),
        *agreement_rows(summary.agreement)])


def agreement_matrix(agreement) -> pd.DataFrame:
    """An explanation agreement's matrix as a table: a row per explanation, numbered, and a column per explanation
    by its number (under their names nine columns are wider than the page), the mean tau of every two (2 decimals,
    "—" where undefined), then the null's, mean tau with random rankings, with its 95% interval."""
    number = {name: str(k + 1) for k, name in enumerate(agreement.names)}
    table = (agreement.matrix[agreement.names].map(lambda v: UNDEFINED if np.isnan(v) else f"{v:+.2f}")
             .rename(columns=number, index=lambda name: f"{number[name]} · {name}"))
    null = null_of(agreement)
    table[f"{null} (null)"] = [interval(e.value, e.low, e.high) for e in
                               (agreement.estimates[name, null] for name in agreement.names)]
    # the explanations a column, which a table drawn without its index (the notebook's) keeps
    return why_undefined(table.reset_index(), {n: "τ is undefined on every input: one of the two gives all its "
                                                  "tokens one score" for n in number.values()})


def null_of(agreement) -> str:
    """The column of an explanation agreement's matrix that holds its null: the one that is no explanation."""
    return next(c for c in agreement.matrix.columns if c not in agreement.names)


def agreement_rows(agreement) -> list[Row]:
    """Which explanations agree (an explanation agreement): the heatmap of mean Kendall's tau-b over the
    inputs, each explanation against every other and against random rankings, and its table."""
    columns = list(agreement.matrix.columns)
    hover = np.array([[_bracket(agreement.estimates[name, other]) for other in columns] for name in agreement.names],
                     dtype=object)
    title = f"Which explanations agree: mean Kendall's τ-b over {agreement.inputs} inputs"
    return [Row({"faith-explanations-tau": charts.correlation_heatmap(agreement.matrix.to_numpy(), agreement.names,
                                                                      columns, title, "mean τ-b", hover)},
                "Which explanations agree",
                "Kendall's τ-b between two explanations' scores of the same tokens, per input, then the mean over "
                "the inputs (95% bootstrap interval on hover). The scores rank as they stand, the one ranking rule "
                "erasure removes tokens by: highest first, a signed explanation's evidence against the prediction "
                "last, not folded into its size, so two explanations agree when they order the tokens alike, sign "
                f"included; a token without a score is left out of its pairs. The columns are numbered as the rows; "
                f"the column {null_of(agreement)}: the τ with the random rankings erasure draws of the same tokens, "
                "the null (near 0)."),
            Row({"faith-explanations-tau-table": agreement_matrix(agreement)})]


def _bracket(e) -> str:
    """An estimate's interval for a hover: "[−0.10, +0.20]"; nothing where it is undefined."""
    return "" if np.isnan(e.low) else f"[{e.low:+.3f}, {e.high:+.3f}]"


def intervention_drawing(summary) -> Drawing:
    """The interventions' tables (an intervention summary): per block and intervention, the verdict on
    the output change against matched noise, then the prediction flips."""
    return Drawing([Row({"faith-interventions": summary.table[CHANGE_COLUMNS]},
                        f"Attention interventions over {summary.sentences} inputs",
                        "P replaced by uniform attention over the same keys, or permuted among them "
                        f"({summary.permutation_draws} draws); the output change is the total variation distance "
                        "of the class distributions (|Δ score| for relatedness). Noise: Gaussian noise on the word "
                        "vectors that moves the block's output by the same L2 distance."),
                    Row({"faith-interventions-flips": summary.table[FLIP_COLUMNS]},
                        caption="The share of inputs whose prediction changes, under the intervention and under "
                                "the noise")])


def agreement_table(result) -> pd.DataFrame:
    """A randomisation check's mean ρ per explanation (rows) and stage (columns), to 2 decimals with its
    interval: five stages of 3-decimal intervals are wider than the page."""
    table: dict = {}
    for (stage, name), e in result.estimates.items():
        table.setdefault(stage, {})[name] = (f"{e.value:.2f} [{e.low:.2f}, {e.high:.2f}]" if math.isfinite(e.value)
                                             else UNDEFINED)
    return why_undefined(pd.DataFrame(table).rename_axis("explanation").reset_index(),
                         {stage: "ρ is undefined on every input: the explanation gives all its tokens one score"
                          for stage in table})


def agreement_drawing(result, title: str) -> Drawing:
    """Mean Spearman ρ of each explanation with its value on the trained model, per stage, with intervals (a
    randomisation check's agreement)."""
    bars: dict = {}
    for (stage, name), estimate in result.estimates.items():
        bars.setdefault(stage, {})[name] = estimate
    return Drawing([Row({"faith-agreement-bars": charts.estimate_bars(bars, title, "Spearman ρ with the trained "
                                                                                   "model", reference=0.0)},
                        title, "An explanation that keeps its ranking when the model it explains is destroyed "
                               "does not explain that model: ρ near 1 is the failure."),
                    Row({"faith-agreement-table": agreement_table(result)},
                        caption="Mean ρ [95% interval] per explanation, after each stage")])



PLAUSIBILITY_COLUMNS = {"ap": "average precision", "null": "random scores (null)", "difference": "AP − random"}
# the plausibility table on the page: the verdict first; the sentences used and left out, the same for every
# explanation, in the caption
PLAUSIBILITY_SHOWN = ["explanation", "verdict", "AP − random", "average precision", "random scores (null)"]


def plausibility_table(summary: pd.DataFrame) -> pd.DataFrame:
    """A plausibility summary as a table: per explanation, its mean average precision, random scores' and the
    difference, each with its 95% interval, the verdict, and the sentences used and left out."""
    rows = []
    for row in summary.to_dict("records"):
        cells = {"explanation": row["explanation"]}
        for column, label in PLAUSIBILITY_COLUMNS.items():
            value = row["null ap" if column == "null" else column]
            cells[label] = interval(value, row[f"{column} low"], row[f"{column} high"])
        rows.append(cells | {"verdict": row["verdict"], "sentences": row["sentences"], "left out": row["left out"]})
    return pd.DataFrame(rows, columns=["explanation", *PLAUSIBILITY_COLUMNS.values(), "verdict", "sentences",
                                       "left out"])


def plausibility_drawing(result) -> Drawing:
    """Plausibility (its summary): each explanation's mean average precision against the tokens humans marked
    beside random scores', with intervals, and the table of differences with their verdicts."""
    summary = result.summary
    bars = {}
    for row in summary.to_dict("records"):
        bars[row["explanation"]] = {
            label: SimpleNamespace(value=row["null ap" if column == "null" else column], low=row[f"{column} low"],
                                   high=row[f"{column} high"])
            for column, label in list(PLAUSIBILITY_COLUMNS.items())[:2]}
    used = int(summary["sentences"].max()) if len(summary) else 0
    left = int(summary["left out"].max()) if len(summary) else 0
    return Drawing([
        Row({"faith-plausibility-bars": charts.estimate_bars(
                bars, f"Plausibility over {used} sentences: average precision of the tokens humans marked",
                "average precision")},
            "Plausibility: do an explanation's top tokens include the words humans marked?",
            "The Stanford Sentiment Treebank labels every word with a sentiment; the tokens humans marked are those "
            "not labelled neutral. Per sentence, an explanation's ranking of the tokens is scored by its average "
            "precision against them (ERASER's AUPRC; a signed explanation is ranked by the size of its scores, "
            "since a word against the prediction is as much a reason a human marks), beside the same for random "
            "scores, the null. Means over the sentences with 95% bootstrap intervals"
            + (f"; {left} sentences where humans marked no token or every token are left out." if left else ".")),
        Row({"faith-plausibility-table": plausibility_table(summary)[PLAUSIBILITY_SHOWN]})])


def reading_line(reading, kind: str, summary=None) -> str:
    """One explanation's reading of one input (a :class:`~disan.analyses.faithfulness.Reading`) in one line of
    plain text: f without the tokens it ranks highest at the reading's k and with only them, each against as many
    random tokens in every draw; how many draws it beats by AOPC over every k; and, given the Faithfulness
    page's erasure summary (``summary``) of the model, that explanation's verdicts over the test inputs.
    ``kind``, the model's, names f and the sentences."""
    look = look_of(kind)
    if reading.target is None:
        f, number = f"the {look.followed}", "{:.2f}".format
    else:
        f, number = f"p({markup.isolated(reading.target)})", "{:.3f}".format
    if len(look.sentences) == 1:
        among = f"{reading.k:.0%} of {reading.tokens}"
    else:
        sentences = "both sentences" if len(reading.sides) > 1 else f"the {reading.sides[0]}"
        among = f"{reading.k:.0%} of the {reading.tokens} in {sentences}"
    count, draws = reading.count, reading.draws
    tokens = f"{count} token{'s' if count != 1 else ''}"
    without = reading.value - reading.at_k["comprehensiveness"]
    only = reading.value - reading.at_k["sufficiency"]
    line = (f"{reading.explanation}: removing the {tokens} ({among}) it ranks highest takes {f} from "
            f"{number(reading.value)} to {number(without)}, lower than removing {count} random "
            f"{'ones' if count != 1 else 'one'} leaves it in {reading.beaten('comprehensiveness', aopc=False)} of "
            f"{draws} draws; keeping only them leaves {number(only)}, higher than keeping {count} random "
            f"{'ones' if count != 1 else 'one'} in {reading.beaten('sufficiency', aopc=False)} of {draws}. By AOPC "
            f"over k = {reading.ks[0]:.0%} to {reading.ks[-1]:.0%} it beats {reading.beaten('comprehensiveness')} "
            f"(comprehensiveness) and {reading.beaten('sufficiency')} (sufficiency) of the {draws} random rankings.")
    if summary is not None:
        table = summary.table.set_index("explanation")
        if reading.explanation in table.index:
            verdicts = ", ".join(f"{m} {table.loc[reading.explanation, f'{m}: verdict']}"
                                 for m in summary.random_spread)
            line += f" Over {summary.sentences} test inputs: {verdicts}."
    return line
