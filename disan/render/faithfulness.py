"""What the Faithfulness page and ``viz.faithfulness`` draw of the checks of :mod:`disan.analyses.faithfulness`:
erasure's bars and table, the interventions' table and the randomisation checks' bars and table, read from
the results' fields; and the line of one input's reading that the Attention, Source2token and Attribution pages
and ``viz.reading`` write under an explanation."""
from __future__ import annotations

from disan.render import charts, markup
from disan.render.kinds import look_of
from disan.render.views import Drawing, Row


def erasure_drawing(summary, kind: str | None = None) -> Drawing:
    """Comprehensiveness and sufficiency (AOPC) of every explanation with intervals, random's among them,
    and the table of differences from random with their verdicts (an erasure summary); ``kind``, the
    model's, names the output followed."""
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
        Row({"faith-erasure-table": summary.table})])


def intervention_drawing(summary) -> Drawing:
    """The interventions' table (an intervention summary): output change and flips per block and
    intervention, against matched noise."""
    return Drawing([Row({"faith-interventions": summary.table},
                        f"Attention interventions over {summary.sentences} inputs",
                        "P replaced by uniform attention over the same keys, or permuted among them "
                        f"({summary.permutation_draws} draws); the output change is the total variation distance "
                        "of the class distributions (|Δ score| for relatedness). Noise: Gaussian noise on the word "
                        "vectors that moves the block's output by the same L2 distance.")])


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
                    Row({"faith-agreement-table": result.table})])


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
