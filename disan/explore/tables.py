"""pandas tables and downloads (CSV zip, npz) of DiSAN traces and evaluation results.

Attention arrays follow :mod:`disan.nn.masks`: ``[j, i]`` or ``[j, i, k]``, rows ``j``
the query token, columns ``i`` the attended token, ``k`` the feature. Inputs may be
numpy arrays or torch tensors; nothing here needs torch.
"""
from __future__ import annotations

import io
import zipfile
from typing import Sequence

import numpy as np
import pandas as pd

LENGTH_BINS = (0, 5, 10, 15, 20, 25, 30, 45, 1000)  # bin edges [lo, hi) of sentence lengths
BLOCKS = ("forward", "backward")                    # the trace attributes holding a DiSA block
BLOCK_FIELDS = ("h", "probs", "s", "gate", "u")      # arrays of a DirectionTrace


def _array(x) -> np.ndarray | None:
    """A torch tensor (possibly on a GPU or requiring grad) or an array -> numpy; None stays None."""
    if x is None:
        return None
    return np.asarray(x.detach().cpu() if hasattr(x, "detach") else x)


def _blocks(trace):
    """(name, block) for the DiSA blocks the trace has."""
    return [(name, getattr(trace, name)) for name in BLOCKS if getattr(trace, name, None) is not None]


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


def _probs_frame(tokens: Sequence[str], probs: np.ndarray) -> pd.DataFrame:
    """Long format of (n, n, d) attention, only the cells the block attended.

    A cell is attended when any feature gives it a nonzero probability: the masked
    softmax gives exactly 0 to masked cells, and bounded logits (c tanh) keep every
    attended cell above 0, so this recovers the mask from the trace alone.
    """
    d = probs.shape[-1]
    j, i = np.nonzero((probs != 0).any(axis=-1))  # (cells,) each, row-major
    tok = np.asarray(tokens, dtype=object)
    return pd.DataFrame({
        "query_j": np.repeat(j, d), "query_token": tok[np.repeat(j, d)],
        "key_i": np.repeat(i, d), "key_token": tok[np.repeat(i, d)],
        "feature": np.tile(np.arange(d), len(j)), "prob": probs[j, i].reshape(-1),
    })


def trace_frames(tokens: Sequence[str], trace) -> dict[str, pd.DataFrame]:
    """Long-format tables of one sentence's trace, for display and CSV download.

    ``{block}_probs``: query_j, query_token, key_i, key_token, feature, prob (attended cells only);
    ``gates``: block, direction, j, token, feature, gate; ``states``: the same with h, s, u;
    ``source2token``: i, token, feature, prob; ``encoding``: feature, value.
    Parts the trace lacks (a None block or source2token) have no table.
    """
    frames, gates, states = {}, [], []
    for name, block in _blocks(trace):
        frames[f"{name}_probs"] = _probs_frame(tokens, _array(block.probs))
        label = {"block": name, "direction": str(block.direction)}
        gates.append(_per_token(tokens, {"gate": _array(block.gate)}, "j", **label))
        states.append(_per_token(tokens, {f: _array(getattr(block, f)) for f in ("h", "s", "u")}, "j", **label))
    for key, parts in (("gates", gates), ("states", states)):
        if parts:
            frames[key] = pd.concat(parts, ignore_index=True)
    if getattr(trace, "source2token", None) is not None:
        frames["source2token"] = _per_token(tokens, {"prob": _array(trace.source2token.probs)}, "i")
    encoding = np.ravel(_array(trace.encoding))  # (D,)
    frames["encoding"] = pd.DataFrame({"feature": np.arange(encoding.size), "value": encoding})
    return frames


def trace_csv(tokens: Sequence[str], trace) -> bytes:
    """A zip of one CSV per table of :func:`trace_frames` (``forward_probs.csv``, ``gates.csv``, ...)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, frame in trace_frames(tokens, trace).items():
            zf.writestr(f"{name}.csv", frame.to_csv(index=False))
    return buf.getvalue()


def trace_npz(tokens: Sequence[str], trace) -> bytes:
    """Every array of the trace in one compressed npz, readable with ``np.load(..., allow_pickle=False)``.

    Names: ``tokens`` (unicode array), ``{block}_{h,probs,s,gate,u}``, ``{block}_direction``
    (a unicode scalar), ``source2token_probs``, ``encoding``. No object arrays, so no pickle.
    """
    arrays = {"tokens": np.array(list(tokens), dtype=str)}
    for name, block in _blocks(trace):
        arrays[f"{name}_direction"] = np.array(str(block.direction))
        arrays.update({f"{name}_{f}": _array(getattr(block, f)) for f in BLOCK_FIELDS})
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


def attention_table(matrix: np.ndarray, tokens: Sequence[str], mask: np.ndarray) -> pd.DataFrame:
    """(n, n) attention as a square table: index "j·token" (query), columns "i·token" (attended), masked NaN.

    The position prefix keeps labels unique when tokens repeat.
    """
    labels = [f"{k}·{tok}" for k, tok in enumerate(tokens)]
    values = np.where(np.asarray(_array(mask), dtype=bool), np.asarray(_array(matrix), dtype=float), np.nan)
    return pd.DataFrame(values, index=pd.Index(labels, name="query j"), columns=pd.Index(labels, name="attended i"))
