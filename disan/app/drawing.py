"""Drawing a view's rows: figures (downloadable as PNG or SVG), notes, HTML and tables whose deciding columns
fit the page; a trace's downloads."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from disan.inspect.pipeline import SentenceTrace
from disan.render import markup, views
from disan.render.tables import trace_csv, trace_npz


def chart(where, fig, key: str) -> None:
    """Draw a figure; plotly's camera button downloads it as PNG or SVG, as chosen in the sidebar."""
    fmt = st.session_state.get("figure_format", "png")
    where.plotly_chart(fig, key=key, config={"displaylogo": False,
                                             "toImageButtonOptions": {"format": fmt, "filename": key, "scale": 2}})


def draw(drawing: views.Drawing, where=st, prefix: str = "") -> None:
    """Draw a view's rows in ``where``: the row's subheader and caption, then its panels side by side.

    ``prefix`` keeps the keys of two drawings on one page apart (a premise and a hypothesis).
    """
    for row in drawing.rows:
        if row.title:
            where.subheader(row.title)
        if row.caption:
            where.caption(row.caption)
        places = where.columns(len(row.panels)) if len(row.panels) > 1 else [where]
        for place, (key, panel) in zip(places, row.panels.items()):
            if isinstance(panel, views.Note):
                place.info(markup.markdown_label(panel.text))
            elif isinstance(panel, views.Html):
                place.html(panel.body)
            elif isinstance(panel, pd.DataFrame):
                # a table keyed by position needs no index column; one labelled by sentence keeps it
                place.dataframe(panel.style.format(precision=3), hide_index=isinstance(panel.index, pd.RangeIndex),
                                column_config=column_widths(panel))
            else:
                chart(place, panel, prefix + key)


def draw_with_room(drawing: views.Drawing, beside: set[str], where=st, prefix: str = ""):
    """Draw a view's rows as :func:`draw` does, leaving an empty container under the first row that has a panel
    keyed in ``beside`` (a heatmap), for what the page writes there once its figures are sent; returns it, or
    None (and no room) where the drawing has no such panel."""
    at = next((i + 1 for i, row in enumerate(drawing.rows) if beside & row.panels.keys()), None)
    if at is None:
        draw(drawing, where, prefix)
        return None
    draw(views.Drawing(drawing.rows[:at]), where, prefix)
    room = where.container()
    draw(views.Drawing(drawing.rows[at:]), where, prefix)
    return room


HEADER_CHAR_PX = 8  # a character of a table's bold 14 px header, with room to spare


TABLE_PX = 900  # the width a table may count on: the main column at a 1400-px window, with room to spare


def column_widths(table: pd.DataFrame, wide: int = 40) -> dict:
    """Columns of long text (over ``wide`` characters) at widths that share :data:`TABLE_PX` with the others
    (about 100 px each), instead of as wide as their text: otherwise a long column pushes the ones after it
    (a verdict, a count) off the screen. The whole text shows on hover."""
    long = [c for c in table.columns
            if not pd.api.types.is_numeric_dtype(table[c]) and table[c].astype(str).str.len().max() > wide]
    # a column of short values under a longer header ("other pairs below “glass”") as wide as the header,
    # which the table would otherwise cut
    headed = {c: st.column_config.Column(width=int(len(str(c)) * HEADER_CHAR_PX) + 32) for c in table.columns
              if c not in long and len(table) and len(str(c)) > table[c].astype(str).str.len().max()}
    if not long:
        return headed
    share = max(200, (TABLE_PX - 100 * (len(table.columns) + 1 - len(long))) // len(long))
    return {**headed, **{c: st.column_config.Column(width=share) for c in long}}


def downloads(sentence: SentenceTrace, key: str, where=st, role: str = "sentence") -> None:
    """Buttons that download the sentence's whole trace as a zip of CSVs or as an npz, named by the
    sentence's role in a pair ("disan-trace-premise.zip").

    The files are built only when a button is clicked; the button spins until the file is ready (a
    200-token trace makes a 50 MB CSV zip in a few seconds).
    """
    c1, c2 = where.columns(2)
    tokens, trace = sentence.tokens, sentence.trace
    name = "disan-trace" if role == "sentence" else f"disan-trace-{role}"
    c1.download_button("Trace as CSV (zip)", lambda: trace_csv(tokens, trace), f"{name}.zip",
                       "application/zip", key=f"{key}-csv", on_click="ignore",
                       help="One CSV per table: attention one row per attended cell (query j, key i) with a "
                            "column per feature, gates and states one row per token and feature.")
    c2.download_button("Trace as NPZ", lambda: trace_npz(tokens, trace), f"{name}.npz",
                       "application/octet-stream", key=f"{key}-npz", on_click="ignore")
