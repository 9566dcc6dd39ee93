"""The feature atlas drawn (:mod:`disan.analyses.atlas` measures it): every feature on a map of its profile,
the rules its features follow, the types per block, one feature explained on its sharpest sentences, and
the notebook's view of an atlas.

Reads the atlas, its :class:`~disan.analyses.atlas.Overview` and an
:class:`~disan.analyses.atlas.Explanation` by their fields.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from disan.render import charts, figures, notebook
from disan.render.tables import why_undefined
from disan.render.views import Drawing, Row

COLOURS = ("type", "block", "kind")  # what the map can be coloured by


def kind_words(kind: str) -> str:
    """A rule of the atlas as said of one feature: "negation detector", "local", "follows no rule"."""
    return "follows no rule" if kind == "other" else kind


def feature_map(atlas, overview, colour: str = "type", selected: int | None = None) -> go.Figure:
    """Every feature as a dot on the first two principal components of the standardised profiles,
    coloured by type, block or kind, the summary in words on hover; ``selected`` (a table row) ringed."""
    if colour not in COLOURS:
        raise ValueError(f"colour by one of {COLOURS}, not {colour!r}")
    table = atlas.table
    hover = [figures.esc(f"{b} k={f} · type {t} · {s}") for b, f, t, s in
             zip(table["block"], table["feature"], table["type"], table["summary"])]
    order = {"type": overview.types, "block": atlas.blocks, "kind": overview.kinds}
    title = (f"{len(table)} attention features of {len(atlas.blocks)} blocks over {atlas.corpus}: "
             f"{atlas.k} types")
    fig = charts.occurrence_scatter(table[["pc1", "pc2"]].to_numpy(), table[colour], hover, atlas.explained,
                                    title, selected, order[colour])
    fig.update_traces(hovertemplate="%{hovertext}<extra></extra>")
    if selected is not None:  # the ring's legend names the feature, not its table row
        fig.data[-1].name = figures.esc(f"selected: {table['block'].iloc[selected]} k = {table['feature'].iloc[selected]}")
    return fig


def drawing(atlas, overview, colour: str = "type", selected: int | None = None) -> Drawing:
    """The page's panels: the map; per block, how many features follow each rule; the types per block
    (are the directions mirrored?); the silhouette of each k when k was picked by it."""
    rules = overview.rules
    caption = (f"Rules: local = at least {rules['local']:.0%} of the attention at distance 1; global = mean distance "
               f"at least ×{rules['global']:g} uniform attention's; a detector of a class gives it at least "
               f"×{rules['detector']:g} what uniform attention gives, or halfway to the most it can (1 ÷ the uniform "
               f"share) where that is less.")
    rows = [Row({"atlas-map": feature_map(atlas, overview, colour, selected)}),
            Row({"atlas-kinds": rule_counts(overview.counts)}, "Features per block that follow each rule", caption)]
    if np.isfinite(overview.alike):
        a, b = atlas.blocks[:2]
        rows.append(Row({"atlas-mirroring": overview.mirror}, "Types per block",
                        f"{a} and {b} share {overview.alike:.0%} of their type mix (1 − total variation distance)."))
    else:
        rows.append(Row({"atlas-mirroring": overview.mirror}, "Types per block"))
    if atlas.silhouettes:
        rows[-1].panels["atlas-silhouette"] = pd.DataFrame({"k": list(atlas.silhouettes),
                                                            "silhouette": list(atlas.silhouettes.values())})
    return Drawing(rows)


def rule_counts(counts: pd.DataFrame) -> pd.DataFrame:
    """The tally of rules (per block: its features, then how many follow each rule) turned to a rule per
    row and a block per column: a column per rule, under headers like “sentence-end detector”, is wider
    than the page and cut the counts."""
    return counts.T.rename(index={"features": "features in all"}).rename_axis("rule")


# one feature's profile on screen: shorter headers than the atlas's, and why a cell is undefined
PROFILE_HEADERS = {"uniform attention": "uniform"}
PROFILE_UNDEFINED = {"uniform": "uniform attention has no fusion gate",
                     "÷ uniform": "uniform attention gives this measure nothing to divide by: no query of this "
                                  "block can attend that token (the forward block never attends the last token, "
                                  "the backward block the first), or it has no gate"}


def profile_table(profile: pd.DataFrame) -> pd.DataFrame:
    """One feature's profile as drawn: beside uniform attention, with why a ratio is undefined."""
    return why_undefined(profile.rename(columns=PROFILE_HEADERS), PROFILE_UNDEFINED)


def explained(explanation) -> Drawing:
    """One feature explained: its profile, its top words, and its heatmap (lift over uniform) in the
    sentences where it is sharpest."""
    block, k = explanation.block, explanation.feature
    # titled by its own profile; its type, named after what most of its members do, is context
    rows = [Row({"atlas-profile": profile_table(explanation.profile)},
                f"{block} feature {k}: {kind_words(explanation.kind)}", f"{explanation.summary}. {explanation.context}")]
    if explanation.top_words:
        rows[0].panels["atlas-top-words"] = pd.DataFrame(explanation.top_words, columns=["word", "lift"])
    for rank, (s, gain, tokens, probs, mask) in enumerate(zip(explanation.sentences, explanation.gains,
                                                              explanation.tokens, explanation.probs,
                                                              explanation.masks)):
        title = f"{block}, feature {k}: {gain:.2f} nats below uniform per query"
        fig = figures.attention_heatmap(probs, tokens, mask, title, scale="lift")
        rows.append(Row({f"atlas-sentence-{rank}": fig}, f"Sharpest sentence {rank + 1}: sentence {s} of the corpus"))
    return Drawing(rows)


@dataclass
class FeatureAtlas:
    """What ``viz.feature_atlas`` returns: the table, the figures, and the atlas behind them."""
    table: pd.DataFrame
    figures: dict[str, go.Figure]
    atlas: object  # the :class:`~disan.analyses.atlas.Atlas`

    def __repr__(self) -> str:  # the dataclass's own would print every profile
        return f"FeatureAtlas({len(self.table)} features of {self.atlas.corpus}; .table, .figures, .atlas)"

    def _repr_html_(self) -> str:
        """In Jupyter: the table (pandas' own HTML, cut to its display.max_rows), then the map."""
        maps = "".join(notebook.figure_html(fig) for fig in self.figures.values())
        return f"<div>{self.table._repr_html_()}{maps}</div>"
