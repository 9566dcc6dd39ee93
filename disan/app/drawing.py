"""Drawing a view's rows: figures (downloadable as PNG or SVG), notes, HTML and tables whose deciding columns
fit the page; a trace's downloads."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from disan.inspect.pipeline import SentenceTrace
from disan.render import markup, views
from disan.render.tables import UNDEFINED, trace_csv, trace_npz, undefined, undefined_value


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
                table(place, panel, share(len(row.panels)))
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


PAGE_PX = 810     # what a table may count on: the main column at a 1280-px window (818 px), less a margin
EXPANDED_PX = PAGE_PX - 34  # in an expander, less its padding
GAP_PX = 16       # between the panels of a row
PAD_PX = 16       # a cell's padding, 8 px each side
WRAP_MIN_PX = 120  # the narrowest a column of wrapped text gets
LINE_PX = 20      # a wrapped line: 14-px text at the grid's line height of 1.4
WRAPS_ABOVE = 64  # Streamlit wraps a table's text only in rows taller than 4 rem
# The grid's font, Source Sans at 14 px: a character's width, measured in Chromium (each group at its widest, at
# most 0.4 px over); any other character (another script's) at OTHER_PX
GLYPH_PX = {c: px for chars, px in (
    (" ", 2.8), ("ilI|',.:;j·", 3.7), ("!f()[]{}", 4.2), ("-", 4.4), ("t/\\r", 4.9), ("*?sz\"“”", 6.0),
    ("xcτvy", 6.5), ("JYLFeké0123456789#$+<=>^_~−×÷≥≤±", 7.0), ("agVX", 7.2), ("ESTZA`hou", 7.6),
    ("bnρdpqP", 7.9), ("CRKBΔ", 8.2), ("&DG", 8.6), ("UHNOQ", 9.3), ("wM", 10.2), ("W—", 11.2), ("%m@", 11.9),
    ("…", 13.3)) for c in chars}
OTHER_PX = 14


def text_px(text: str) -> float:
    """The width of ``text`` in a table's cell, by :data:`GLYPH_PX`."""
    return sum(GLYPH_PX.get(c, OTHER_PX) for c in text)


def share(panels: int) -> int:
    """The pixels a table gets as one of ``panels`` side by side."""
    return (PAGE_PX - GAP_PX * (panels - 1)) // panels


def table(where, frame: pd.DataFrame, width: int = PAGE_PX, columns: list | None = None, **options) -> None:
    """Draw a table by the one rule for tables: its deciding columns fit ``width`` without sideways scrolling
    (:func:`layout`), numbers to 3 decimals, and an undefined value shown as :data:`~disan.render.tables.UNDEFINED`
    with the column's tooltip saying why (:func:`disan.render.tables.undefined`). ``columns``: the ones
    shown, in order (the others stay in the toolbar's column menu and the CSV); ``options`` go to
    ``st.dataframe``."""
    config, row_height = layout(frame if columns is None else frame[columns], width)
    # the grid draws a missing value as its placeholder, whatever the Styler says
    where.dataframe(frame.style.format(precision=3, na_rep=UNDEFINED), hide_index=positional(frame.index),
                    column_config=config, column_order=columns, row_height=row_height, placeholder=UNDEFINED,
                    **options)


def positional(index: pd.Index) -> bool:
    """Whether a table's rows are keyed by position (0, 1, ..., or the positions a filter kept), which needs
    no index column, rather than labelled (by sentence, by rule), which keeps it."""
    return isinstance(index, pd.RangeIndex) or index.name is None and pd.api.types.is_integer_dtype(index)


def shown(frame: pd.DataFrame) -> dict[str, tuple[str, list[str], bool]]:
    """Each column of a table as :func:`table` shows it, by its ``column_config`` key: its header, its cells
    and whether it holds numbers; the index first, under ``_index``, where it is shown."""
    def cells(values) -> list[str]:
        floats = pd.api.types.is_float_dtype(values)
        return [UNDEFINED if undefined_value(v) else f"{v:.3f}" if floats else str(v) for v in values]
    out = {} if positional(frame.index) else {
        "_index": (str(frame.index.name or ""), cells(frame.index), pd.api.types.is_numeric_dtype(frame.index))}
    return out | {str(c): (str(c), cells(frame[c]), pd.api.types.is_numeric_dtype(frame[c])) for c in frame.columns}


def lines(text: str, px: int) -> int:
    """The lines ``text`` takes wrapped at word ends in a column ``px`` wide."""
    room, count, line = px - PAD_PX, 1, ""
    for word in text.split():
        longer = f"{line} {word}" if line else word
        if line and text_px(longer) > room:
            count, line = count + 1, word
        else:
            line = longer
    return count


def shares(room: int, wanted: dict[str, int], least: dict[str, int]) -> dict[str, int]:
    """``room`` pixels shared among columns in proportion to what they ``wanted``, each given at ``least``
    its own least."""
    out: dict[str, int] = {}
    while wanted:
        total = sum(wanted.values())
        short = {c: least[c] for c, w in wanted.items() if room * w / total < least[c]}
        if not short:
            return out | {c: int(room * w / total) for c, w in wanted.items()}
        out |= short
        room -= sum(short.values())
        wanted = {c: w for c, w in wanted.items() if c not in short}
    return out


def layout(frame: pd.DataFrame, width: int = PAGE_PX) -> tuple[dict, int | None]:
    """The ``column_config`` and row height of :func:`table`: each column's width, and its tooltip where it
    shows “—”.

    Every column is as wide as its header and its longest cell (Streamlit's own sizing reads a sample of
    the rows, and cut a verdict further down). Where that is wider than ``width``, the columns of text
    wider than an even share of the room beside the others wrap instead: each gets a share of that room
    in proportion to its text, at least its header and :data:`WRAP_MIN_PX`, and the rows are as tall as
    the longest wrapped text needs. A table of numbers wider than ``width`` stays as wide: its drawing
    must split it.
    """
    columns = shown(frame)
    natural = {c: int(max(text_px(t) for t in [head, *cells])) + 1 + PAD_PX
               for c, (head, cells, _) in columns.items()}
    widths, wrapped = dict(natural), set()
    if sum(natural.values()) > width:
        # the columns of text wider than an even share of the room left beside the others wrap
        wrapped = {c for c, (_, _, numbers) in columns.items() if not numbers}
        while True:
            room = width - sum(w for c, w in natural.items() if c not in wrapped)
            narrow = {c for c in wrapped if natural[c] <= room / len(wrapped)}
            if not narrow:
                break
            wrapped -= narrow
        widths |= shares(room, {c: natural[c] for c in wrapped},
                         {c: max(WRAP_MIN_PX, int(text_px(columns[c][0])) + 1 + PAD_PX) for c in wrapped})
    reasons = undefined(frame)
    config = {c: st.column_config.Column(width=int(widths[c]),
                                         help=f"{UNDEFINED}: {reasons[c]}" if UNDEFINED in cells else None)
              for c, (_, cells, _) in columns.items()}
    needed = max([lines(t, widths[c]) for c in wrapped for t in columns[c][1]], default=1)
    return config, max(WRAPS_ABOVE + 1, needed * LINE_PX + 12) if needed > 1 else None


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
