"""The app's models: its torch threads, the checkpoints listed, the one pipeline per checkpoint and version on this
server, and the sidebar's choice of them (the page stops, saying why, where there is none)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st
import torch

from disan.app.links import version
from disan.data.kinds import kind_of
from disan.data.registry import BENCHMARKS
from disan.inspect import catalog
from disan.inspect.pipeline import Pipeline, load
from disan.nn.checkpoint import CONFIG


# Tracing one sentence is a chain of small ops: one intra-op thread avoids spinning threads and is
# 5-10x faster than two here, and concurrent sessions each get a core. A run that the Training page
# starts trains with it too, unless its config sets threads: multiprocessing's spawn runs app.py's
# module level (which calls use_app_threads) in the training process as well.
THREADS = 1


def use_app_threads() -> None:
    """Run torch with the app's :data:`THREADS` intra-op threads."""
    torch.set_num_threads(THREADS)


def stamp(directory) -> float:
    """Cache key part that changes when a checkpoint is rewritten (a training run saved a better model)."""
    return (Path(directory) / CONFIG).stat().st_mtime


def checkpoint_args(entry: catalog.Entry) -> tuple[str, float]:
    """The (directory, stamp) pair that keys a listed checkpoint's pipeline, traces and analyses; the
    directory is the one the listing resolved, so a load resolves nothing again."""
    return str(entry.directory), stamp(entry.directory)


# The stamp arguments are part of the cache keys (Streamlit leaves out only arguments named with a
# leading underscore), so a rewritten checkpoint is loaded afresh.
@st.cache_resource(max_entries=8, show_spinner="Loading the model…")
def load_pipeline(path: str, mtime: float) -> Pipeline:
    """The checkpoint's pipeline, loaded once per server and checkpoint version."""
    # Shared by every session: pipelines run in eval mode under no_grad and never change the model.
    return load(path)


@st.cache_data(max_entries=32, show_spinner=False)
def model_version(path: str, mtime: float) -> str:
    """The digest a link carries of a listed checkpoint (:func:`disan.app.links.version`), once per checkpoint
    version as its pipeline is loaded (:func:`checkpoint_args`), not on every run: hashing reads the word
    vectors again where the cache folder cannot remember their digest."""
    return version(path)


@st.cache_data(max_entries=4, show_spinner=False)
def _listing(fingerprint: tuple) -> list[catalog.Entry]:
    # the fingerprint is the cache key: it names the folders that list_checkpoints reads
    return catalog.list_checkpoints()


def entries() -> list[catalog.Entry]:
    """Every checkpoint, checked (:func:`catalog.list_checkpoints`); checked again only when a file changes."""
    return _listing(catalog.fingerprint())


def reads_pairs(entry: catalog.Entry) -> bool:
    """Whether a listed checkpoint takes (premise, hypothesis) pairs rather than one sentence."""
    return kind_of(entry.kind).pairs


def default_checkpoint(good: list[catalog.Entry]) -> str:
    """The checkpoint a session starts on, among the working ones: :func:`disan.inspect.catalog.default_entry`,
    else the first."""
    return (catalog.default_entry(good) or good[0]).name


def benchmark_label(task: str) -> str:
    """A benchmark as the pickers show it: its name and what it is."""
    return f"{task} — {BENCHMARKS[task].description}"


def current_entry() -> catalog.Entry | None:
    """The working checkpoint the sidebar has selected, or None."""
    name = st.session_state.get("checkpoint")
    return next((e for e in entries() if e.ok and e.name == name), None)


def current_checkpoint() -> catalog.Entry:
    """The sidebar's checkpoint; the page stops after telling the user why when there is none. A page that
    draws a kept result asks this first and loads the model (:func:`entry_pipeline`) only where it needs it."""
    entry = current_entry()
    if entry is None:
        st.info("No model is selected. Pick a checkpoint in the sidebar, or train one on the Training page "
                "or with `python -m disan train`.")
        st.stop()
    return entry


def entry_pipeline(entry: catalog.Entry) -> Pipeline:
    """A listed checkpoint's pipeline; the page stops after telling the user why it cannot be loaded."""
    try:
        return load_pipeline(*checkpoint_args(entry))
    except ValueError as e:
        st.error(f"This checkpoint cannot be loaded: {e}")
        st.stop()


def current_pipeline() -> tuple[catalog.Entry, Pipeline]:
    """The sidebar's checkpoint and its pipeline (:func:`current_checkpoint`, :func:`entry_pipeline`)."""
    entry = current_checkpoint()
    return entry, entry_pipeline(entry)
