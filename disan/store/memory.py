"""A cache bounded in bytes, for traces: a 200-token trace holds about 96 MB of attention probabilities,
so a cache bounded by its number of entries can grow without bound.

The server keeps one :class:`ByteCache` for every session (the app holds it in ``st.cache_resource``).
Values are shared, not copied, so they must not be modified: pipelines return fresh traces and the
views only read them.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping

from disan.data import environment

CACHE_ENV = "DISAN_TRACE_CACHE_MB"
DEFAULT_MB = 1024
# Of the bound, what drawing traces takes besides the traces themselves (figures and their JSON,
# Streamlit's messages, the allocator): about 85 MB with 200-token sentences, measured with
# ``python -m disan latency --browser --sentences 50``. The traces get the rest.
WORKING_MB = 128


def budget(default_mb: int = DEFAULT_MB) -> int:
    """The server's memory bound for traces in bytes, beyond the model: ``DISAN_TRACE_CACHE_MB``
    (megabytes), else ``default_mb``. The cache itself gets :func:`cache_bytes` of it."""
    return int(environment.number(CACHE_ENV, default_mb, "megabytes") * 2**20)


def cache_bytes(bound: int) -> int:
    """What the trace cache may hold of a memory bound: the bound less the working memory of drawing."""
    return max(0, bound - WORKING_MB * 2**20)


def nbytes(value, _seen: set | None = None) -> int:
    """The bytes a value holds: its tensors' and arrays' buffers, plus strings and bytes, walking
    dataclasses, mappings and sequences. Shared objects count once; small Python objects are ignored,
    since a trace's arrays dwarf them."""
    seen = set() if _seen is None else _seen
    if id(value) in seen or value is None:
        return 0
    seen.add(id(value))
    if hasattr(value, "untyped_storage"):  # a torch tensor: its whole storage, once even when viewed twice
        storage = value.untyped_storage()
        key = ("storage", storage.data_ptr())
        if key in seen:
            return 0
        seen.add(key)
        return storage.nbytes()
    # an array exists only once numpy is imported; not importing it here keeps this module light, so that
    # ``disan latency --help`` reads CACHE_ENV from it without numpy
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        return value.nbytes if value.base is None else nbytes(value.base, seen)
    if isinstance(value, (str, bytes, bytearray)):
        return sys.getsizeof(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(nbytes(getattr(value, f.name), seen) for f in dataclasses.fields(value))
    if isinstance(value, Mapping):
        return sum(nbytes(k, seen) + nbytes(v, seen) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sum(nbytes(v, seen) for v in value)
    return 0


def _trimmer():
    """glibc's ``malloc_trim``, or None elsewhere."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _trimmer()


def release_freed_memory() -> None:
    """Hand memory that Python and torch have freed back to the system (glibc only).

    Streamlit runs every script run in a new thread, and glibc keeps the memory each thread freed in
    that thread's arena; without this the server's resident memory stays well above what its
    caches hold.
    """
    if _TRIM is not None:
        _TRIM(0)


class ByteCache:
    """A least-recently-used cache whose values hold at most ``max_bytes`` together (:func:`nbytes`),
    counting the value being computed: before computing a missing value, it drops values until one as
    large as the largest it has seen would fit. So the bound covers what a trace takes while it is
    made, not only what is kept afterwards.

    A value larger than the bound is returned but not kept. Safe to use from several threads (Streamlit
    runs each session's script in its own thread); two threads asking for the same missing key may both
    compute it.
    """

    def __init__(self, max_bytes: int, size: Callable[[object], int] = nbytes):
        self.max_bytes, self._size = int(max_bytes), size
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._largest = 0  # the largest value seen: the room kept for the next one
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def _shrink(self, room: int) -> None:
        """Drop the least recently used values until ``room`` more bytes fit under the bound (lock held)."""
        while self._items and self.bytes + room > self.max_bytes:
            _, (_, dropped) = self._items.popitem(last=False)
            self.bytes -= dropped

    def get(self, key: Hashable, compute: Callable[[], object]):
        """The value cached under ``key``, else ``compute()``, kept while the bound allows.

        An exception from ``compute`` propagates and nothing is kept.
        """
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]
            self._shrink(min(self._largest, self.max_bytes))
        release_freed_memory()  # what was dropped, before the new value's memory is taken
        value = compute()
        size = self._size(value)
        with self._lock:
            self._largest = max(self._largest, size)
            if key in self._items or size > self.max_bytes:
                return value
            self._shrink(size)
            self._items[key] = (value, size)
            self.bytes += size
        # computing the value freed its temporaries: give them back too
        release_freed_memory()
        return value

    def clear(self) -> None:
        """Drop every value."""
        with self._lock:
            self._items.clear()
            self.bytes = 0
