"""pandas tables and downloads (CSV zip, npz) of DiSAN traces and evaluation results.

Attention arrays follow :mod:`disan.nn.masks`: ``[j, i]`` or ``[j, i, k]``, rows ``j``
the query token, columns ``i`` the attended token, ``k`` the feature. Inputs may be
numpy arrays or torch tensors; nothing here needs torch.
"""
from __future__ import annotations

import io
import re
import zipfile
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
from pyarrow import csv

LENGTH_BINS = (0, 5, 10, 15, 20, 25, 30, 45, 1000)  # bin edges [lo, hi) of sentence lengths
BLOCK_FIELDS = ("h", "probs", "s", "gate", "u", "mask")  # arrays of a DirectionTrace


def interval(value: float, low: float, high: float) -> str:
    """An estimate and its 95% interval as a table's cell: "+0.123 [+0.100, +0.150]"."""
    return f"{value:+.3f} [{low:+.3f}, {high:+.3f}]"


UNDEFINED = "—"  # a table's cell whose value is not defined: a ratio to nothing, random against itself
UNDEFINED_REASONS = "undefined"  # the key of a table's ``attrs`` that says why (:func:`why_undefined`)


def undefined_value(value) -> bool:
    """Whether a table's cell has no value (None, NaN, NA) or is :data:`UNDEFINED` already."""
    if isinstance(value, str):
        return value == UNDEFINED
    return not isinstance(value, (list, tuple, np.ndarray)) and bool(pd.isna(value))


def why_undefined(frame: pd.DataFrame, reasons: dict[str, str]) -> pd.DataFrame:
    """A copy of a table that says, per column, why a cell of it may be :data:`UNDEFINED`; the app shows the
    reason as the column's tooltip."""
    out = frame.copy()
    out.attrs[UNDEFINED_REASONS] = {**frame.attrs.get(UNDEFINED_REASONS, {}), **reasons}
    return out


def undefined(frame: pd.DataFrame) -> dict[str, str]:
    """Why each column's undefined cells are so, by column name (``_index`` for the index): as
    :func:`why_undefined` said, else that the value is not defined for that row."""
    said = frame.attrs.get(UNDEFINED_REASONS, {})
    return {str(c): said.get(c, "no value is defined for this row") for c in ["_index", *frame.columns]}


def _array(x) -> np.ndarray | None:
    """A torch tensor (possibly on a GPU or requiring grad) or an array -> numpy; None stays None."""
    if x is None:
        return None
    return np.asarray(x.detach().cpu() if hasattr(x, "detach") else x)


def file_name(name: str) -> str:
    """A block name as a file, array or widget key part: "diag 1" -> "diag_1"."""
    return re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_")


def _blocks(trace):
    """(file-safe name, block) for the DiSA blocks of the trace, in order."""
    return [(file_name(block.name), block) for block in trace.blocks]


def differing_features(a: np.ndarray, b: np.ndarray, top: int = 10) -> pd.DataFrame:
    """The ``top`` features where two (D,) vectors differ most: columns feature, a, b, abs_diff (descending)."""
    a, b = np.ravel(_array(a)).astype(float), np.ravel(_array(b)).astype(float)
    diff = np.abs(a - b)
    order = np.argsort(-diff, kind="stable")[:top]  # ties keep feature order
    return pd.DataFrame({"feature": order, "a": a[order], "b": b[order], "abs_diff": diff[order]})


def _per_token(tokens: Sequence[str], columns: dict[str, np.ndarray], position: str, **labels) -> pd.DataFrame:
    """Long format of (n, d) arrays: one row per (token, feature).

    Columns: the constant ``labels`` first, then position, token, feature, and one per array.
    """
    n, d = next(iter(columns.values())).shape
    pos = np.repeat(np.arange(n), d)
    frame = {**labels, position: pos, "token": np.asarray(tokens, dtype=object)[pos],
             "feature": np.tile(np.arange(d), n)}
    frame.update({name: np.asarray(values).reshape(-1) for name, values in columns.items()})
    return pd.DataFrame(frame)


def _probs_frame(tokens: Sequence[str], probs: np.ndarray, mask: np.ndarray) -> pd.DataFrame:
    """(n, n, d) attention, one row per cell the (n, n) mask lets the block attend: query_j, query_token,
    key_i, key_token, then the cell's probability in every feature, ``prob_0`` ... ``prob_{d-1}``.

    One row per cell, not per (cell, feature): the long format repeats the four labels d times, which
    makes a 200-token trace 12 million rows (a 90 MB zip, half a minute to write). A probability that
    underflows to exactly 0 in an attended cell is still listed.
    """
    d = probs.shape[-1]
    j, i = np.nonzero(mask)  # (cells,) each, row-major
    tok = np.asarray(tokens, dtype=object)
    labels = pd.DataFrame({"query_j": j, "query_token": tok[j], "key_i": i, "key_token": tok[i]})
    return pd.concat([labels, pd.DataFrame(probs[j, i], columns=[f"prob_{k}" for k in range(d)])], axis=1)


def _mask_frame(tokens: Sequence[str], mask: np.ndarray, **labels) -> pd.DataFrame:
    """Long format of an (n, n) mask: the ``labels``, query_j, query_token, key_i, key_token, attended."""
    n = mask.shape[0]
    j, i = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    tok = np.asarray(tokens, dtype=object)
    return pd.DataFrame({**labels, "query_j": j, "query_token": tok[j], "key_i": i, "key_token": tok[i],
                         "attended": mask.reshape(-1)})


def trace_frames(tokens: Sequence[str], trace) -> dict[str, pd.DataFrame]:
    """Long-format tables of one sentence's trace, for display and CSV download.

    ``{block}_probs`` (block: the file-safe block name, e.g. ``diag_1``): query_j, query_token, key_i,
    key_token and prob_0 ... prob_{d-1}, one row per cell the block's mask allows; ``masks``: block, direction,
    query_j, query_token, key_i, key_token, attended (every cell); ``gates``: block, direction, j, token,
    feature, gate; ``states``: the same with h, s, u; ``source2token``: i, token, feature, prob;
    ``encoding``: feature, value. Parts the trace lacks (DiSA blocks, source2token) have no table.
    """
    frames, masks, gates, states = {}, [], [], []
    for key, block in _blocks(trace):
        mask = np.asarray(_array(block.mask), dtype=bool)  # (n, n)
        frames[f"{key}_probs"] = _probs_frame(tokens, _array(block.probs), mask)
        label = {"block": str(block.name), "direction": str(block.direction)}
        masks.append(_mask_frame(tokens, mask, **label))
        gates.append(_per_token(tokens, {"gate": _array(block.gate)}, "j", **label))
        states.append(_per_token(tokens, {f: _array(getattr(block, f)) for f in ("h", "s", "u")}, "j", **label))
    for key, parts in (("masks", masks), ("gates", gates), ("states", states)):
        if parts:
            frames[key] = pd.concat(parts, ignore_index=True)
    if getattr(trace, "source2token", None) is not None:
        frames["source2token"] = _per_token(tokens, {"prob": _array(trace.source2token.probs)}, "i")
    encoding = np.ravel(_array(trace.encoding))  # (D,)
    frames["encoding"] = pd.DataFrame({"feature": np.arange(encoding.size), "value": encoding})
    return frames


def trace_csv(tokens: Sequence[str], trace) -> bytes:
    """A zip of one CSV per table of :func:`trace_frames` (``forward_probs.csv``, ``gates.csv``, ...).

    Written by Arrow's CSV writer (floats in their shortest exact form) and deflated at level 1: a
    200-token trace of a d_h = 300 model takes seconds, where pandas took half a minute.
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, frame in trace_frames(tokens, trace).items():
            out = pa.BufferOutputStream()
            csv.write_csv(pa.Table.from_pandas(frame, preserve_index=False), out)
            zf.writestr(f"{name}.csv", out.getvalue().to_pybytes())
    return buf.getvalue()


def trace_npz(tokens: Sequence[str], trace) -> bytes:
    """Every array of the trace in one compressed npz, readable with ``np.load(..., allow_pickle=False)``.

    Names: ``tokens`` (unicode array), ``blocks`` (the block names in order, unicode), and per block,
    under its file-safe name (``diag 1`` -> ``diag_1``): ``{block}_{h,probs,s,gate,u}``, ``{block}_mask``
    (bool, [j, i]) and ``{block}_direction`` (a unicode scalar); then ``source2token_probs``,
    ``encoding``. No object arrays, so no pickle.
    """
    arrays = {"tokens": np.array(list(tokens), dtype=str),
              "blocks": np.array([str(block.name) for block in trace.blocks], dtype=str)}
    for key, block in _blocks(trace):
        arrays[f"{key}_direction"] = np.array(str(block.direction))
        arrays.update({f"{key}_{f}": _array(getattr(block, f)) for f in BLOCK_FIELDS})
    if getattr(trace, "source2token", None) is not None:
        arrays["source2token_probs"] = _array(trace.source2token.probs)
    arrays["encoding"] = _array(trace.encoding)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def accuracy_by_length_table(lengths: np.ndarray, correct: np.ndarray,
                             bins: Sequence[int] = LENGTH_BINS) -> pd.DataFrame:
    """Accuracy per length bin [lo, hi): columns bin ("lo-hi" inclusive), n, accuracy (NaN when n = 0).

    Lengths outside [bins[0], bins[-1]) are not counted.
    """
    lengths = np.ravel(_array(lengths))
    correct = np.ravel(_array(correct)).astype(float)
    edges = np.asarray(bins)
    idx = np.searchsorted(edges, lengths, side="right") - 1        # bin of each example
    inside = (idx >= 0) & (idx < len(edges) - 1)
    n = np.bincount(idx[inside], minlength=len(edges) - 1)
    hits = np.bincount(idx[inside], weights=correct[inside], minlength=len(edges) - 1)
    labels = [f"{lo}" if hi - lo == 1 else f"{lo}-{hi - 1}" for lo, hi in zip(edges[:-1], edges[1:])]
    accuracy = np.where(n > 0, hits / np.maximum(n, 1), np.nan)
    return pd.DataFrame({"bin": labels, "n": n, "accuracy": accuracy})
