"""The byte-bounded trace cache (disan.store.memory)."""
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from disan.store import memory

pytestmark = pytest.mark.quick


def test_nbytes_counts_buffers_once_through_containers_and_views():
    t = torch.zeros(10, 25)                      # 1,000 bytes of float32
    a = np.zeros(300, dtype=np.float64)           # 2,400 bytes

    @dataclass
    class Holder:
        tensor: torch.Tensor
        view: torch.Tensor
        arrays: dict

    held = Holder(t, t[2:5], {"a": a, "slice": a[10:20]})
    assert memory.nbytes(held) == 1_000 + 2_400 + memory.nbytes("a") + memory.nbytes("slice")
    assert memory.nbytes([t, t, (t[0],)]) == 1_000
    assert memory.nbytes(None) == 0


def sized(n):
    return np.zeros(n, dtype=np.uint8)


def test_the_cache_keeps_the_most_recent_values_within_its_bound():
    c = memory.ByteCache(1_000)
    calls = []

    def make(key, n):
        def compute():
            calls.append(key)
            return sized(n)
        return compute

    for key in "abc":
        c.get(key, make(key, 400))               # c pushes a out: 1,200 > 1,000
    assert "a" not in c and "b" in c and "c" in c and c.bytes == 800
    c.get("b", make("b", 400))                   # a hit: b becomes the most recent
    c.get("d", make("d", 400))                   # so c is dropped, not b
    assert ("b" in c, "c" in c, "d" in c) == (True, False, True)
    assert calls == ["a", "b", "c", "d"]
    big = c.get("huge", make("huge", 5_000))     # returned, never kept (b made room for it first)
    assert big.nbytes == 5_000 and "huge" not in c and list(c._items) == ["d"] and c.bytes == 400


def test_a_failing_computation_keeps_nothing():
    c = memory.ByteCache(1_000)

    def fail():
        raise ValueError("too long")

    with pytest.raises(ValueError, match="too long"):
        c.get("x", fail)
    assert "x" not in c and c.bytes == 0


def test_the_bound_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(memory.CACHE_ENV, raising=False)
    assert memory.budget() == memory.DEFAULT_MB * 2**20
    monkeypatch.setenv(memory.CACHE_ENV, "1.5")
    assert memory.budget() == 3 * 2**19
    # the traces get the bound less the working memory of drawing them, never less than nothing
    assert memory.cache_bytes(1024 * 2**20) == (1024 - memory.WORKING_MB) * 2**20 and memory.cache_bytes(2**20) == 0
    for bad in ("lots", "-1"):
        monkeypatch.setenv(memory.CACHE_ENV, bad)
        with pytest.raises(ValueError, match=memory.CACHE_ENV):
            memory.budget()


def test_the_cache_makes_room_for_the_value_it_is_about_to_compute():
    c = memory.ByteCache(1_000)
    held = []

    def compute(n):
        def make():
            held.append(c.bytes)  # what the cache holds while the value is being made
            return sized(n)
        return make

    for key in "abcd":
        c.get(key, compute(300))
    # three 300-byte values fit; before a fourth is made, one is dropped, so the kept ones and the one
    # being made never exceed 1,000
    assert held == [0, 300, 600, 600] and len(c) == 3 and c.bytes == 900
    assert all(before + 300 <= 1_000 for before in held)
