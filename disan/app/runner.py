"""The one runner of the analysis pages: any :class:`disan.analyses.protocol.Analysis` is staged, kept and shown
with its progress here.

:func:`run` computes an analysis over growing samples (:mod:`disan.analyses.progressive`), drawing each stage's
result under a progress bar that counts the items, until the whole corpus is done; the final result is kept on
disk (:mod:`disan.store.diskcache`, keyed by the checkpoint's content, the analysis's settings and the code) and
in memory, so that a page shows something within seconds and a restarted server reads it at once, without
loading the model. An additive analysis computes at each stage only the items it adds
(:meth:`~disan.analyses.protocol.Analysis.part`), its parts kept in memory for the next stage.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import streamlit as st

from disan.analyses import progressive
from disan.analyses.protocol import Analysis
from disan.app.drawing import draw
from disan.app.models import load_pipeline
from disan.render.views import Drawing
from disan.store import diskcache, keys


def key(analysis: Analysis, path: str, size: int | None = None) -> str:
    """The on-disk key of an analysis's result on the sample of ``size`` items (None: all of them) of the
    checkpoint at ``path``."""
    size = analysis.total() if size is None else size
    return keys.result_key(analysis.name, path, size=size, **analysis.settings())


def derived_key(result_key: str, what: str, **settings) -> str:
    """The on-disk key of ``what`` is computed from the result under ``result_key`` with ``settings`` (JSON
    values): named by that result's key, it changes whenever the result's does."""
    return keys.key_of(what, result=result_key, **settings)


def known(analysis: Analysis, args: tuple[str, float]) -> bool:
    """Whether the analysis's final result is kept on disk already (a page may then draw it without a button)."""
    return diskcache.known(key(analysis, args[0]))


@st.cache_data(max_entries=16, show_spinner=False)
def kept(result_key: str, _compute):
    """A result under its key: computed once per machine (kept on disk across restarts), read once per server
    (kept here, copied to each caller)."""
    return diskcache.cached(result_key, _compute)


@st.cache_data(max_entries=8, show_spinner=False)
def partial(result_key: str, _compute):
    """A stage's result, or an additive analysis's part, kept in memory only: a rerun during the refinement
    skips the stages done, and the next stage adds to the part."""
    return _compute()


def part_of(analysis: Analysis, args: tuple[str, float], size: int, before: int | None) -> Any:
    """An additive analysis's part of the sample of ``size``: from the part of the sample of ``before`` (the
    stage before's) and the items it lacks, or all of them when there is no stage before."""
    def compute():
        pipe = load_pipeline(*args)
        places = analysis.places(size)
        if before is None:
            return analysis.part(pipe, places)
        done = analysis.places(before)
        new = np.setdiff1d(places, done)
        return analysis.join([(part_of(analysis, args, before, None), done), (analysis.part(pipe, new), new)])
    return partial(key(analysis, args[0], size) + ":part", compute)


def run(analysis: Analysis, args: tuple[str, float], what: str, drawing: Callable[[Any], Drawing]) -> Any:
    """The analysis's result on the checkpoint ``args`` (:func:`disan.app.models.checkpoint_args`), computed in
    stages unless it is kept already: each stage's result is drawn by ``drawing`` under a progress bar naming
    ``what`` is computed and how many items are done, then the partial drawing and the bar go, and the final
    result is returned for the page to draw with its widgets."""
    total = analysis.total()
    stages = progressive.plan(total, progressive.first_size(analysis.first))
    final_key = key(analysis, args[0])
    if len(stages) == 1 or diskcache.known(final_key):
        with st.spinner(f"{what}…"):
            return kept(final_key, lambda: analysis.compute(load_pipeline(*args), total))
    bar, holder = st.progress(0.0), st.empty()
    before = None
    for stage in stages:
        bar.progress((stage.number - 1) / stage.count,
                     f"{what}: stage {stage.number} of {stage.count}, {stage.size:,} of {total:,}…")
        if analysis.additive:
            compute = lambda size=stage.size, prior=before: analysis.finish(part_of(analysis, args, size, prior), size)
        else:
            compute = lambda size=stage.size: analysis.compute(load_pipeline(*args), size)
        if stage.final:
            result = kept(final_key, compute)
            break
        result = partial(key(analysis, args[0], stage.size), compute)
        before = stage.size
        with holder.container(border=True):
            st.caption(f"A first look at {stage.size:,} of {total:,} (a seeded sample: intervals are wider than "
                       "over all of them); refining…")
            draw(drawing(result), prefix=f"stage-{stage.number}-")
    bar.empty()
    holder.empty()
    return result
