"""Corpus senses drawn (:mod:`disan.analyses.corpus` collects them): a word's occurrences on the map of their
vectors, coloured by cluster or gold label, their context on hover, and the nearest occurrences of one."""
from __future__ import annotations

import pandas as pd

from disan.render import charts
from disan.render.views import Drawing, Note, Row
from disan.inspect import senses

SMALLEST_CLUSTER = 5     # clusters with fewer occurrences than this get a warning


def drawing(result, colour: str = "cluster", selected: int | None = None,
            neighbours: pd.DataFrame | None = None) -> Drawing:
    """The page's panels: the projected occurrences coloured by cluster or gold label, the silhouette of
    each k (when k was picked by it) and ``neighbours``, the occurrences nearest to the ``selected`` one
    (:func:`disan.analyses.corpus.neighbours`)."""
    if colour not in ("cluster", "label"):
        raise ValueError(f"colour by 'cluster' or 'label', not {colour!r}")
    ordinal = False
    if colour == "cluster":
        groups = [f"cluster {c}" for c in result.table["cluster"]]
        order = [f"cluster {c}" for c in range(result.k)]
    else:
        groups, order = list(result.table["label"]), None
        if result.scale and set(groups) <= set(result.scale):
            order, ordinal = [label for label in result.scale if label in set(groups)], True
    title = (f"“{result.word}” in {result.corpus}: {len(result.table)} occurrences, {senses.VECTORS[result.kind]} "
             f"at unit length (projected and clustered alike)")
    hover = [charts.marked_context(*parts) for parts in result.contexts]
    rows = [Row({"corpus-scatter": charts.occurrence_scatter(
        result.table[["pc1", "pc2"]].to_numpy(), groups, hover, result.explained, title, selected, order,
        colours=charts.ordered_colours(order, result.scale) if ordinal else None)})]
    sizes = result.table["cluster"].value_counts()
    if result.k > 1 and sizes.min() < SMALLEST_CLUSTER:
        rows.insert(0, Row({"corpus-small-clusters": Note(
            f"{len(result.table)} occurrences in {result.k} clusters, the smallest of {sizes.min()}: clusters of "
            f"fewer than {SMALLEST_CLUSTER} occurrences are too small to say anything about the word's senses. "
            f"Collect more occurrences (a larger corpus or split) or choose fewer clusters.")}))
    if selected is not None and neighbours is not None:
        rows.append(Row({"corpus-neighbours": neighbours}, f"The occurrences nearest to #{selected} (cosine)"))
    if result.silhouettes:
        rows.append(Row({"corpus-silhouette": pd.DataFrame({"k": list(result.silhouettes),
                                                            "silhouette": list(result.silhouettes.values())})},
                        "Silhouette of each k (the highest picks k)"))
    return Drawing(rows)
