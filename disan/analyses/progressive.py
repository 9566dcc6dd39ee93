"""Computing over a corpus in growing samples: a first result within seconds, then better ones, then the
whole corpus.

An analysis over ``total`` items (sentences, inputs, occurrences) runs on samples of :func:`sizes`:
:data:`FIRST` items, then :data:`GROWTH` times as many at each stage, then all of them. Each sample is
:func:`nested` in the next one: the first ``size`` items of one seeded shuffle of the corpus, put back in
corpus order, so a stage's result is a deterministic function of the corpus and the size, and the items
of a stage stay in every later one (intervals narrow as items are added, rather than jumping between
unrelated samples).

The last stage is the analysis of the whole corpus, equal to what a direct call computes: the schedule
never changes the final result, only what is shown before it. Computed afresh, the stages cost at most
1 / (GROWTH - 1) more than the final one alone (a third with the default; half when the last step is
short); an analysis that adds up over its items computes only those a stage adds (:func:`added`) and joins
its rows or results to the stage before's (:func:`joined`, :func:`in_order`), so its stages together cost
what the final one alone does. The final result is kept on disk (:mod:`disan.store.diskcache`), so it is
paid once per machine.

:func:`plan` lists the stages, for a page to compute and draw one after the other
(:func:`disan.app.runner.run` draws them with a progress bar); nothing here imports Streamlit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from disan.data import environment

FIRST_ENV = "DISAN_FIRST_SAMPLE"
FIRST = 50    # items in the first sample: a first figure within seconds on the shipped models
GROWTH = 4    # each sample this many times the size of the one before


def first_size(default: int = FIRST) -> int:
    """The first sample's size: ``$DISAN_FIRST_SAMPLE`` (0: no partial stages), else ``default`` (an
    analysis whose items cost more starts from fewer of them)."""
    return environment.number(FIRST_ENV, default, "items", whole=True)


def sizes(total: int, first: int | None = None, growth: int = GROWTH) -> list[int]:
    """The sample sizes of the stages, ending with ``total``: ``first``, ``first * growth``, ... while below
    ``total`` (``first`` None: :func:`first_size`; 0: the whole corpus at once)."""
    first = first_size() if first is None else first
    if growth < 2:
        raise ValueError(f"samples must grow: growth {growth} < 2")
    out, size = [], first
    while 0 < size < total:
        out.append(size)
        size *= growth
    return out + [total]


def nested(total: int, size: int, seed: int = 0) -> np.ndarray:
    """(size,) the items of a stage's sample, in corpus order: the first ``size`` of one seeded shuffle of
    ``range(total)``, so that a smaller sample is part of every larger one."""
    if not 0 <= size <= total:
        raise ValueError(f"a sample of {size} of {total} items")
    return np.sort(np.random.default_rng(seed).permutation(total)[:size])


def added(total: int, size: int, before: int) -> np.ndarray:
    """The items that the sample of ``size`` adds to the sample of ``before`` (:func:`nested`), in corpus
    order: all a stage computes when its analysis adds up over items."""
    return np.setdiff1d(nested(total, size), nested(total, before))


def joined(parts, column: str) -> pd.DataFrame:
    """One frame of per-item rows computed over disjoint samples: ``parts`` pairs each frame with its sample's
    places in the corpus (``places[i]`` where the frame's ``column`` says item ``i``). ``column`` is renumbered
    to the items' order in the union of the samples, as a computation over that union numbers them, and the
    rows are put in that order, each item's own rows in theirs."""
    places = np.concatenate([np.asarray(p, dtype=np.int64) for _, p in parts])
    order = np.sort(places)
    if len(np.unique(order)) != len(order):
        raise ValueError("the parts share items")
    frames = [frame.assign(**{column: np.searchsorted(order, np.asarray(p, dtype=np.int64)[frame[column].to_numpy()])})
              for frame, p in parts]
    return pd.concat(frames, ignore_index=True).sort_values(column, kind="stable", ignore_index=True)


def in_order(parts) -> list:
    """One list of per-item results computed over disjoint samples: ``parts`` pairs each list with its
    sample's places in the corpus; the items in the order of their places, as a computation over the union of
    the samples gives them."""
    places = np.concatenate([np.asarray(p, dtype=np.int64) for _, p in parts])
    if len(np.unique(places)) != len(places):
        raise ValueError("the parts share items")
    items = [item for part, _ in parts for item in part]
    return [items[i] for i in np.argsort(places, kind="stable")]


@dataclass(frozen=True)
class Stage:
    """One stage of a progressive computation: a sample of ``size`` of the ``total`` items."""
    number: int   # from 1
    count: int    # stages in all
    size: int
    total: int

    @property
    def final(self) -> bool:
        """Whether this stage is the whole corpus."""
        return self.size == self.total


def plan(total: int, first: int | None = None, growth: int = GROWTH) -> list[Stage]:
    """The stages of a computation over ``total`` items, one per :func:`sizes`; the last is the whole corpus,
    which a page computes directly, so that the last result is the one a direct call gives."""
    planned = sizes(total, first, growth)
    return [Stage(number, len(planned), size, total) for number, size in enumerate(planned, 1)]
