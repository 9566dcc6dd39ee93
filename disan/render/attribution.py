"""What the Attribution page, the report and ``viz.attribution`` draw of :mod:`disan.analyses.attribution`:
one input's attributions beside its attention with their Kendall's τ, and the τ over a corpus, read from the
results' fields."""
from __future__ import annotations

import math

from disan.render import charts
from disan.render.kinds import look_of
from disan.render.views import Drawing, Row


def followed(attr, kind: str) -> str:
    """What an attribution follows, in words: its class, or the score a model of ``kind`` gives."""
    return attr.target if attr.target is not None else look_of(kind).followed


def drawing(explained, kind: str) -> Drawing:
    """Per sentence of an explained input: the attributions beside the attention measures (tokens x
    measures), and their agreement (Kendall's tau); ``kind``, the model's, names the sentences and the
    output followed."""
    rows = []
    sentences = look_of(kind).sentences
    for k, (tokens, scores, taus) in enumerate(zip(explained.tokens, explained.scores, explained.agreement)):
        part = "" if len(explained.tokens) == 1 else f"{sentences[k]}: "
        title = f"{part}attribution to “{followed(explained.attribution, kind)}” beside attention"
        rows.append(Row({f"attr-measures-{k}": charts.measures_heatmap(scores.to_numpy(), tokens, list(scores.columns),
                                                                       title)}))
        rows.append(Row({f"attr-tau-{k}": taus}, f"{part.capitalize()}Kendall's τ between attribution and attention"
                        .strip()))
    return Drawing(rows)


def corpus_drawing(result) -> Drawing:
    """Histograms of tau over the sampled sentences, one panel per attribution method, and the summary table
    (mean tau, the share of sentences with tau > 0) of a corpus agreement."""
    panels = {f"attr-corpus-{m}": charts.histograms(series, f"{method} against attention, per sentence",
                                                    "Kendall's τ", reference=0.0)
              for m, (method, series) in enumerate(result.taus.items())}
    caption = (f"The integrated gradients of each input sum to within {result.gap_median:.2%} (median; largest "
               f"{result.gap_max:.2%}) of f(x) − f(x′)." if not math.isnan(result.gap_median) else None)
    sentences = len(result.frame)
    title = f"Over {result.inputs} test inputs" + (f": {sentences} sentences" if sentences != result.inputs else "")
    return Drawing([Row(panels, title, caption), Row({"attr-corpus-summary": result.summary})])
