"""Streamlit glue of the analysis pages: cached corpora and analyses, the corpus picker, what a
checkpoint offers them (a test split to sample, DiSA blocks), the feature atlas's table as its page lists it.

Every analysis is computed by :mod:`disan.explore.analyses` (the atlas by :mod:`disan.explore.atlas`);
this module caches it per checkpoint (path and modification stamp, as :mod:`disan.app.common` does) and
corpus, and draws widgets. Arguments with a leading underscore are left out of the cache keys: a corpus
is keyed by its name. :class:`DataError` is the pages' to catch: a checkpoint's own data file is gone or
has changed.
"""
from __future__ import annotations

import hashlib
import os

import pandas as pd
import streamlit as st

from disan.app.common import benchmark_label, checkpoint_args, load_pipeline, upload
from disan.data.files import FORMATS, DataError
from disan.data.loaders import SPLITS, data_dir
from disan.data.registry import BENCHMARKS
from disan.explore import atlas
from disan.explore.analyses import attribution, casestudy, corpus

DOWNLOAD_HINT = ("No benchmark data was found. `python -m disan download DIR` fetches the benchmarks "
                 "(then set `DISAN_DATA_DIR=DIR`); an uploaded file of sentences works without them.")


def has_data() -> bool:
    """Whether a benchmark folder is there ($DISAN_DATA_DIR or ../shared/data)."""
    try:
        data_dir()
    except FileNotFoundError:
        return False
    return True


@st.cache_data(max_entries=8, show_spinner="Reading the benchmark…")
def benchmark(task: str, split: str) -> corpus.Corpus:
    """A benchmark split as a corpus, read once per task and split."""
    return corpus.benchmark_corpus(task, split)


def own_split(entry) -> str | None:
    """What the picker calls the test split of the data a checkpoint was trained on, or None where there is
    none here: a file of one's own always has its recorded split (which may fail to read, and say why); a
    benchmark's needs the benchmark folder."""
    if "data" in entry.config or (entry.task in BENCHMARKS and has_data()):
        return f"test split of {entry.task}"
    return None


def no_split(entry) -> str | None:
    """Why there is no test split of a checkpoint's own data to sample here, or None where there is one
    (:func:`own_split`)."""
    if own_split(entry) is not None:
        return None
    if entry.task in BENCHMARKS:
        return DOWNLOAD_HINT
    return f"The checkpoint's task {entry.task!r} is not a benchmark here, so there is no test split to sample."


def data_stamp(entry) -> tuple:
    """What a checkpoint's own split depends on besides the checkpoint: the size and modification time of
    each file of its own that it records (nothing for a benchmark, whose files do not change), so that a
    rewritten file is read, and checked, again."""
    stamps = []
    for f in ((entry.config.get("data") or {}).get("files") or {}).values():
        try:
            found = os.stat(f["path"])
        except OSError:
            stamps.append((f["path"], None))
        else:
            stamps.append((f["path"], found.st_size, found.st_mtime_ns))
    return tuple(stamps)


@st.cache_data(max_entries=8, show_spinner="Reading the test split…")
def trained(path: str, mtime: float, files: tuple, _config: dict, split: str) -> corpus.Corpus:
    """A split of the data a checkpoint was trained on, read once per checkpoint, data files and split."""
    return corpus.trained_corpus(_config, split)


@st.cache_data(max_entries=4, show_spinner="Reading the file…")
def uploaded(data: bytes, name: str) -> corpus.Corpus:
    """An uploaded file as a corpus, read once per file."""
    return corpus.uploaded_corpus(data, name)


def pick_corpus(entry, key: str) -> corpus.Corpus | None:
    """The corpus widgets: the checkpoint's test split, another benchmark split, or an uploaded file.

    None (after saying why) when no corpus can be read.
    """
    own = own_split(entry)
    data = has_data()
    sources = ([own] if own else []) + (["another benchmark"] if data else []) + ["upload a file"]
    if not data:
        st.info(DOWNLOAD_HINT)
    source = st.radio("Corpus", sources, horizontal=True, key=f"{key}-source")
    try:
        if source == own:
            return trained(*checkpoint_args(entry), data_stamp(entry), entry.config, "test")
        if source == "another benchmark":
            c1, c2 = st.columns(2)
            task = c1.selectbox("Benchmark", list(BENCHMARKS), format_func=benchmark_label, key=f"{key}-task")
            split = c2.selectbox("Split", SPLITS, index=SPLITS.index("test"), key=f"{key}-split")
            return benchmark(task, split)
        try:
            file = upload("A file of sentences: one a line, or a table's text or sentence column (and its label "
                          "column if any)", FORMATS, f"{key}-upload")
            return None if file is None else uploaded(file.getvalue(), file.name)
        except ValueError as e:  # the file, its size or the bound: said as the Training page says it
            st.error(str(e))
            return None
    except DataError as e:  # the file the model was trained on is gone or has changed
        st.error(f"The {source} cannot be read: {e}")
        return None
    except (ValueError, OSError) as e:
        st.warning(f"This corpus cannot be read: {e}")
        return None


def corpus_key(c: corpus.Corpus) -> str:
    """What names a corpus in the cache keys: its name and a digest of its sentences."""
    digest = hashlib.sha256("\n".join(c.texts).encode("utf-8")).hexdigest()[:16]
    return f"{c.name}:{digest}"


@st.cache_data(max_entries=16, show_spinner=False)
def senses(path: str, mtime: float, key: str, _corpus: corpus.Corpus, word: str, kind: str, k: int | None):
    """The corpus-senses analysis of one word, cached per checkpoint, corpus (``key``), word, vector and k."""
    return corpus.analyse(load_pipeline(path, mtime), _corpus, word, kind, k)


@st.cache_data(max_entries=8, show_spinner=False)
def case_study(path: str, mtime: float, key: str, _tokens: list[list[str]], name: str) -> casestudy.CaseStudy:
    """The case-study measures over a corpus, cached per checkpoint and corpus (``key``)."""
    return casestudy.measure(load_pipeline(path, mtime), _tokens, name)


def has_blocks(pipe) -> bool:
    """Whether a checkpoint's encoder has DiSA blocks, whose features the atlas maps."""
    return bool(getattr(pipe.model.encoder, "blocks", None))


@st.cache_data(max_entries=4, show_spinner=False)
def feature_atlas(path: str, mtime: float, key: str, _tokens: list[list[str]], name: str) -> atlas.Atlas:
    """The feature atlas of a corpus (k by silhouette), cached per checkpoint and corpus (``key``)."""
    return atlas.profile(load_pipeline(path, mtime), _tokens, name)


def atlas_measures(result: atlas.Atlas) -> list[str]:
    """The atlas table's measures that its features can be sorted by (the map's coordinates left out)."""
    return [c for c in result.table.columns if result.table[c].dtype.kind == "f" and c not in ("pc1", "pc2")]


def block_features(result: atlas.Atlas, block: str, order_by: str) -> pd.DataFrame:
    """The atlas table's rows of one block, sorted by a measure, lowest first."""
    return result.table[result.table["block"] == block].sort_values(order_by, kind="stable")


@st.cache_data(max_entries=8, show_spinner=False)
def paper_sentences(path: str, mtime: float) -> casestudy.CaseStudy:
    """The case-study measures of the paper's two example sentences."""
    pipe = load_pipeline(path, mtime)
    return casestudy.measure(pipe, [pipe.trace_sentence(s).tokens for s in casestudy.PAPER_SENTENCES],
                             "the paper's sentences")


@st.cache_data(max_entries=64, show_spinner=False)
def attribute(path: str, mtime: float, text, _sentences) -> attribution.Attribution:
    """Attributions of one input's predicted class, keyed by the input; ``_sentences`` are its traced
    sentences (from the trace cache), so the input is not traced again."""
    return attribution.attribute(load_pipeline(path, mtime), _sentences)


@st.cache_data(max_entries=8, show_spinner=False)
def attribution_corpus(path: str, mtime: float, files: tuple, _config: dict, n: int):
    """Kendall's tau between attribution and attention over n test inputs of the data the checkpoint was
    trained on, keyed by the checkpoint and its data files (:func:`data_stamp`)."""
    pipe = load_pipeline(path, mtime)
    return attribution.corpus_agreement(pipe, corpus.trained_items(_config, "test", n))


def with_status(running: str, done: str, compute, *args):
    """Run a long computation inside an ``st.status`` box: ``running`` while it runs, then ``done``."""
    with st.status(running, expanded=False) as box:
        value = compute(*args)
        box.update(label=done, state="complete")
    return value
