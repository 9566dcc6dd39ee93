"""A result as an ``.npz`` file, without pickling: the result's arrays and table columns, plus a JSON
``manifest`` of its structure. What is stored is data: this package's dataclasses of results, pandas tables,
numpy arrays and scalars, dicts, lists, tuples, numbers, strings and None (:func:`encode`). A figure, a
drawing (any of :mod:`disan.render`'s dataclasses), a tensor or a function is refused: the cache keeps what
was computed, and what is drawn of it is drawn again.

Reading runs no stored code: arrays are read with ``allow_pickle=False`` and the only classes built are
dataclasses of ``disan`` named in the manifest. A file that cannot be read (truncated, corrupt, of another
layout, such as an entry written before figures were refused) raises one of :data:`UNREADABLE`.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import zipfile
from collections.abc import Mapping

import numpy as np
import pandas as pd

MANIFEST = "manifest"  # the name of the manifest's array in the file; the value's arrays are a0, a1, ...
OWN, DRAWN = "disan.", "disan.render."  # the modules whose dataclasses are stored, less those that draw
# What reading a file of another layout, a damaged one or one naming a class that is gone raises.
UNREADABLE = (OSError, ValueError, KeyError, TypeError, AttributeError, ImportError, zipfile.BadZipFile, EOFError)


def stored_module(module: str) -> bool:
    """Whether the dataclasses of ``module`` are results this codec stores: disan's, not its drawings'."""
    return module.startswith(OWN) and not module.startswith(DRAWN)


def encode(value, arrays: list[np.ndarray]):
    """A JSON-able description of ``value`` whose arrays are appended to ``arrays`` (referred to by
    position). Raises TypeError for a value of another type (a tensor, a figure, a drawing, a function)."""
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.kind == "O":
            return {"objects": [encode(v, arrays) for v in array.ravel().tolist()], "shape": list(array.shape)}
        arrays.append(array)
        return {"array": len(arrays) - 1, "scalar": isinstance(value, np.generic)}
    if isinstance(value, pd.DataFrame):
        return {"frame": {"columns": [encode(c, arrays) for c in value.columns],
                          "data": [_encode_values(value.iloc[:, i], arrays) for i in range(value.shape[1])],
                          "index": _encode_index(value.index, arrays)}}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if not stored_module(cls.__module__):
            raise TypeError(f"a {cls.__module__}.{cls.__qualname__} cannot be stored in the result cache: only "
                            "disan's results are, never what is drawn of them")
        return {"dataclass": f"{cls.__module__}:{cls.__qualname__}",
                "fields": {f.name: encode(getattr(value, f.name), arrays) for f in dataclasses.fields(value)}}
    if isinstance(value, Mapping):
        return {"dict": [[encode(k, arrays), encode(v, arrays)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple": [encode(v, arrays) for v in value]}
    raise TypeError(f"a {type(value).__name__} cannot be stored in the result cache")


def _encode_values(values: pd.Series | pd.Index, arrays: list):
    """A column or an index's values: numbers, booleans and times as one array; anything else (strings,
    objects) value by value, with the dtype to rebuild it with."""
    if isinstance(values.dtype, np.dtype) and values.dtype.kind in "biufcmM":
        arrays.append(values.to_numpy())
        return {"array": len(arrays) - 1, "scalar": False}
    return {"values": [encode(v, arrays) for v in values.tolist()], "dtype": str(values.dtype)}


def _encode_index(index: pd.Index, arrays: list):
    if isinstance(index, pd.RangeIndex):
        return {"range": [index.start, index.stop, index.step], "name": encode(index.name, arrays)}
    return {"values": _encode_values(index, arrays), "name": encode(index.name, arrays)}


def decode(tree, arrays: Mapping[str, np.ndarray]):
    """The value that :func:`encode` described; ``arrays`` by name ``a0``, ``a1``, ..."""
    if not isinstance(tree, dict):
        return tree
    if "array" in tree:
        array = arrays[f"a{tree['array']}"]
        return array[()] if tree["scalar"] else array
    if "objects" in tree:
        out = np.empty(len(tree["objects"]), dtype=object)
        out[:] = [decode(v, arrays) for v in tree["objects"]]
        return out.reshape(tree["shape"])
    if "frame" in tree:
        spec = tree["frame"]
        index = _decode_index(spec["index"], arrays)
        columns = {i: _decode_values(v, arrays, index) for i, v in enumerate(spec["data"])}
        frame = pd.DataFrame(columns, index=index)
        frame.columns = pd.Index([decode(c, arrays) for c in spec["columns"]])
        return frame
    if "dataclass" in tree:
        module, name = tree["dataclass"].split(":")
        if not stored_module(module):
            raise ValueError(f"the manifest names a class that is not a result of disan: {module}")
        cls = importlib.import_module(module)
        for part in name.split("."):
            cls = getattr(cls, part)
        if not dataclasses.is_dataclass(cls):
            raise ValueError(f"{tree['dataclass']} is not a dataclass")
        return cls(**{k: decode(v, arrays) for k, v in tree["fields"].items()})
    if "dict" in tree:
        return {decode(k, arrays): decode(v, arrays) for k, v in tree["dict"]}
    if "list" in tree:
        return [decode(v, arrays) for v in tree["list"]]
    if "tuple" in tree:
        return tuple(decode(v, arrays) for v in tree["tuple"])
    raise ValueError(f"an unknown entry in the manifest: {sorted(tree)}")


def _decode_values(tree, arrays, index=None) -> pd.Series:
    if "array" in tree:
        return pd.Series(arrays[f"a{tree['array']}"], index=index, copy=False)
    values = [decode(v, arrays) for v in tree["values"]]
    if tree["dtype"] == "object":
        held = np.empty(len(values), dtype=object)
        held[:] = values
        return pd.Series(held, index=index, dtype=object)
    return pd.Series(values, index=index, dtype=tree["dtype"])


def _decode_index(tree, arrays) -> pd.Index:
    name = decode(tree["name"], arrays)
    if "range" in tree:
        return pd.RangeIndex(*tree["range"], name=name)
    return pd.Index(_decode_values(tree["values"], arrays), name=name)


def write(value, file) -> None:
    """``value`` as an ``.npz`` file (a path ending in ``.npz``, or a binary file object): its arrays and its
    manifest. Raises TypeError, before writing anything, for a value :func:`encode` refuses."""
    arrays: list[np.ndarray] = []
    manifest = json.dumps(encode(value, arrays), allow_nan=True).encode("utf-8")
    named = {f"a{i}": a for i, a in enumerate(arrays)}
    named[MANIFEST] = np.frombuffer(manifest, dtype=np.uint8)
    np.savez(file, **named)


def read(file):
    """The value :func:`write` wrote to ``file``; raises one of :data:`UNREADABLE` where it cannot be read."""
    with np.load(file, allow_pickle=False) as held:
        arrays = {name: held[name] for name in held.files}
    return decode(json.loads(arrays.pop(MANIFEST).tobytes().decode("utf-8")), arrays)
