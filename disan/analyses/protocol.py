"""The shape of an analysis over many items (sentences, inputs, occurrences), which the app's one runner
(:func:`disan.app.runner.run`) stages, keeps and shows for any of them.

An analysis is a frozen dataclass of its settings (its corpus among them) with:

* ``name``: what its results are kept under, with the model and :meth:`Analysis.settings`;
* :meth:`~Analysis.total`: how many items it runs over, and ``first``: the first stage's sample size
  (:mod:`disan.analyses.progressive`; 0 computes the whole corpus at once);
* :meth:`~Analysis.compute`: its result on the sample of a stage, ``size`` items at :meth:`~Analysis.places`;
  at ``size == total()`` the result a direct call gives.

An analysis that adds up over its items (each item's part does not depend on the others) also defines
:meth:`~Analysis.part` (the part of some items), :meth:`~Analysis.join` (parts of disjoint items as one)
and :meth:`~Analysis.finish` (the result of a part): a stage then computes only the items it adds, and the
stages together cost what the last one alone does. Its :meth:`~Analysis.compute` is
``finish(part(places(size)))``.

Settings must be JSON values (a corpus as its name and :func:`disan.data.checksums.corpus_digest`); a model
that an analysis compares with is given by its digest, computed by the caller.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from disan.analyses import progressive


class Analysis:
    """An analysis over :meth:`total` items; subclasses are frozen dataclasses of their settings."""
    name: ClassVar[str]
    first: ClassVar[int] = progressive.FIRST
    additive: ClassVar[bool] = False  # whether it defines part, join and finish

    def total(self) -> int:
        """How many items the analysis runs over."""
        raise NotImplementedError

    def settings(self) -> dict:
        """JSON values that name its result, besides the model and the sample's size."""
        raise NotImplementedError

    def places(self, size: int) -> np.ndarray:
        """(size,) the items of the sample of ``size``, in corpus order: :func:`disan.analyses.progressive.nested`
        (an analysis whose stages take the first items instead says so here)."""
        return progressive.nested(self.total(), size)

    def sample_name(self, name: str, size: int) -> str:
        """What the result on the sample of ``size`` calls its corpus ``name``: the name itself for all of it."""
        return name if size == self.total() else f"{name} [{size:,} of {self.total():,}]"

    def compute(self, pipe, size: int) -> Any:
        """The result on the sample of ``size`` items (all of them: the analysis itself)."""
        if not self.additive:
            raise NotImplementedError
        return self.finish(self.part(pipe, self.places(size)), size)

    def part(self, pipe, places: np.ndarray) -> Any:
        """What the items at ``places`` add up to (an additive analysis only)."""
        raise NotImplementedError

    def join(self, parts: list[tuple[Any, np.ndarray]]) -> Any:
        """One part of the union of disjoint items: ``parts`` pairs each part with its places."""
        raise NotImplementedError

    def finish(self, part: Any, size: int) -> Any:
        """The result on the sample of ``size`` items from the part of its items."""
        raise NotImplementedError
