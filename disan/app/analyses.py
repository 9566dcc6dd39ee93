"""Streamlit glue of the analysis pages: cached corpora, the corpus picker, what a checkpoint offers them (a test
split to sample, its encoder's DiSA blocks and per-token vectors, kept on disk), the feature atlas's table as its
page lists it, the case study's findings kept beside its result.

Every analysis is computed by :mod:`disan.analyses`, on the protocol of :mod:`disan.analyses.protocol`, and staged,
kept and shown by the one runner, :mod:`disan.app.runner`. Arguments with a leading underscore are left out of
Streamlit's cache keys. :class:`DataError` is the pages' to catch: a checkpoint's own data file is gone or has
changed. The reading of one input's explanations, beside a page's heatmap, is cached here too, with the
Faithfulness page's defaults, whose kept erasure result gives it the corpus's verdicts.
"""
from __future__ import annotations

import os

import pandas as pd
import streamlit as st

from disan.app import runner
from disan.app.models import benchmark_label, checkpoint_args, entry_pipeline, load_pipeline
from disan.app.traces import sentence_tokens
from disan.app.widgets import setting, upload
from disan.data import treebank
from disan.data.checksums import corpus_digest
from disan.data.files import FORMATS, DataError, TaskData, trained_task
from disan.data.loaders import SPLITS, data_dir
from disan.data.registry import BENCHMARKS, task_checksums
from disan.data.text import tokenizer_version
from disan.analyses import atlas, casestudy, corpus, explainers, faithfulness, gradients
from disan.store import diskcache, keys
from disan.inspect.pipeline import Pipeline, load

DOWNLOAD_HINT = ("No benchmark data was found. `python -m disan download DIR` fetches the benchmarks "
                 "(then set `DISAN_DATA_DIR=DIR`); an uploaded file of sentences works without them.")


def has_data() -> bool:
    """Whether a benchmark folder is there ($DISAN_DATA_DIR or ../shared/data)."""
    try:
        data_dir()
    except FileNotFoundError:
        return False
    return True


def benchmark_key(task: str, split: str, **options) -> str | None:
    """The on-disk key of a benchmark split read with ``options``: its data folder and files' SHA-256 (from
    the folder's SHA256SUMS) and the tokenizer's version; None where the files cannot be told (then the
    split is read, not kept)."""
    try:
        root = data_dir(options.get("data_dir"))
    except FileNotFoundError:
        return None
    checksums = task_checksums(task, root)
    return keys.key_of("benchmark", task=task, split=split, root=str(root.resolve()), files=checksums,
                       tokenizer=tokenizer_version(), **options) if checksums else None


def read_kept(key: str | None, read):
    """``read()`` kept on disk under ``key`` (tokenising a benchmark takes seconds); read afresh without a key."""
    return read() if key is None else diskcache.cached(key, read)


@st.cache_data(max_entries=8, show_spinner="Reading the benchmark…")
def benchmark(task: str, split: str) -> corpus.Corpus:
    """A benchmark split as a corpus, read once per task and split (and kept on disk)."""
    return read_kept(benchmark_key(task, split), lambda: corpus.benchmark_corpus(task, split))


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


@st.cache_resource(max_entries=4, show_spinner="Reading the data the model was trained on…")
def trained_data(path: str, mtime: float, files: tuple, _config: dict, split: str) -> TaskData:
    """The data a checkpoint was trained on (:func:`disan.data.files.trained_task`: ``split``, the other splits
    read only where ``split`` is carved out of them; a file of one's own checked against its recorded SHA-256),
    read once per server, checkpoint, data files (:func:`data_stamp`) and split, whichever samples the pages
    ask for (:func:`trained`, :func:`test_items`): reading a benchmark's splits takes seconds. Shared by every
    session, which only read it."""
    return trained_task(_config, splits=[split])


@st.cache_data(max_entries=8, show_spinner="Reading the test split…")
def trained(path: str, mtime: float, files: tuple, _config: dict, split: str) -> corpus.Corpus:
    """A split of the data a checkpoint was trained on (:func:`disan.analyses.corpus.trained_corpus`),
    read once per checkpoint, data files and split; a benchmark's kept on disk, a file of one's own read
    afresh (from :func:`trained_data`)."""
    return read_kept(trained_key(_config, split),
                     lambda: corpus.split_corpus(trained_data(path, mtime, files, _config, split), split))


def trained_key(config: dict, split: str, **more) -> str | None:
    """The on-disk key of the benchmark split a checkpoint was trained on (:func:`benchmark_key`, with its
    recorded fold and seed); None for a file of one's own."""
    if "data" in config:
        return None
    tc = config.get("train_config") or {}
    return benchmark_key(config["task"], split, data_dir=tc.get("data_dir"), fold=tc.get("fold", 0),
                         seed=tc.get("seed", 0), **more)


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
    source = setting(st.radio, "Corpus", f"{key}-source", sources, horizontal=True)
    try:
        if source == own:
            return trained(*checkpoint_args(entry), data_stamp(entry), entry.config, "test")
        if source == "another benchmark":
            c1, c2 = st.columns(2)
            task = setting(c1.selectbox, "Benchmark", f"{key}-task", BENCHMARKS, format_func=benchmark_label)
            split = setting(c2.selectbox, "Split", f"{key}-split", SPLITS, default="test")
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


def frequent_words(c: corpus.Corpus) -> list[str]:
    """The corpus's most frequent content words (:func:`disan.analyses.corpus.frequent_words`), kept on
    disk by the corpus: telling content words from stop words imports spaCy, seconds a restart need not pay."""
    return diskcache.cached(keys.key_of("frequent words", corpus=c.key), lambda: corpus.frequent_words(c))


def encoder_parts(entry) -> dict:
    """What a listed checkpoint's encoder offers the analysis pages: ``vectors``, its per-token vectors
    (:attr:`disan.inspect.pipeline.Pipeline.vector_kinds`), and ``blocks``, whether it has DiSA blocks (whose
    features the atlas maps). Read off the loaded model once per machine and checkpoint content, then kept
    on disk, so that a page drawing a kept result does not load the model to ask."""
    def read():
        pipe = entry_pipeline(entry)
        return {"vectors": pipe.vector_kinds, "blocks": bool(getattr(pipe.model.encoder, "blocks", None))}
    return diskcache.cached(keys.result_key("encoder parts", str(entry.directory)), read)


def atlas_measures(result: atlas.Atlas) -> list[str]:
    """The atlas table's measures that its features can be sorted by (the map's coordinates left out)."""
    return [c for c in result.table.columns if result.table[c].dtype.kind == "f" and c not in ("pc1", "pc2")]


def block_features(result: atlas.Atlas, block: str, order_by: str) -> pd.DataFrame:
    """The atlas table's rows of one block, sorted by a measure, lowest first."""
    return result.table[result.table["block"] == block].sort_values(order_by, kind="stable")


def paper_sentences(path: str, mtime: float) -> tuple[casestudy.CaseStudy, casestudy.Findings]:
    """The case-study measures of the paper's two example sentences and their findings (:func:`findings`),
    kept (:func:`disan.app.runner.kept`); their tokens kept on disk too, since tokenising them imports spaCy."""
    paper = read_kept(keys.key_of("corpus", texts=list(casestudy.PAPER_SENTENCES)),
                      lambda: corpus.make_corpus("the paper's sentences", casestudy.PAPER_SENTENCES))
    analysis = casestudy.Study(paper)
    study = runner.kept(runner.key(analysis, path), lambda: analysis.compute(load_pipeline(path, mtime), len(paper)))
    return study, findings(analysis, path, study)


def findings(analysis: casestudy.Study, path: str, study: casestudy.CaseStudy) -> casestudy.Findings:
    """The findings of a case study's final result (:func:`disan.analyses.casestudy.findings`: seconds of
    resampling and shuffling), kept beside it (:func:`disan.app.runner.kept`, under a key named by its own)."""
    return runner.kept(runner.derived_key(runner.key(analysis, path), "case study findings"),
                       lambda: casestudy.findings(study))


@st.cache_data(max_entries=64, show_spinner=False)
def attribute(path: str, mtime: float, text, _sentences) -> gradients.Attribution:
    """Attributions of one input's predicted class, keyed by the input; ``_sentences`` are its traced
    sentences (from the trace cache), so the input is not traced again."""
    return gradients.attribute(load_pipeline(path, mtime), _sentences)


@st.cache_data(max_entries=8, show_spinner="Reading the test split…")
def test_items(path: str, mtime: float, files: tuple, _config: dict, n: int) -> list:
    """A seeded sample of n test inputs of the data a checkpoint was trained on
    (:func:`disan.analyses.corpus.trained_items`), keyed by the checkpoint and its data files
    (:func:`data_stamp`); a benchmark's kept on disk, a file of one's own drawn afresh (from
    :func:`trained_data`)."""
    return read_kept(trained_key(_config, "test", items=n),
                     lambda: corpus.sample_items(trained_data(path, mtime, files, _config, "test"), "test", n))


def no_word_labels(entry) -> str:
    """Why a checkpoint's test inputs have no human word labels to test plausibility against, in one line
    ("" where they have: a model of the Stanford Sentiment Treebank), without reading the data."""
    return treebank.unlabelled(entry.config)


@st.cache_data(max_entries=8, show_spinner="Reading the treebank's word labels…")
def word_labels(path: str, mtime: float, _config: dict, items: tuple) -> tuple:
    """Per test input of an SST checkpoint, the human label 0..4 of each token
    (:func:`disan.data.treebank.trained_labels`), read once per checkpoint and sample and kept on disk (the
    treebank's trees take about a second to read); ValueError for an input that is not in the treebank."""
    def read():
        return tuple(tuple(int(v) for v in labels) for labels in treebank.trained_labels(_config, items).labels)
    return read_kept(trained_key(_config, "test", word_labels=corpus_digest(items)), read)


def compared_model(path: str) -> tuple[Pipeline, dict]:
    """A checkpoint that an analysis compares with (the Faithfulness page's model trained on shuffled labels),
    loaded from its folder (ValueError where it cannot be), and its digest
    (:func:`disan.store.keys.model_digest`), which names it in the analysis's settings."""
    pipe = load(path)
    return pipe, keys.model_digest(pipe)


# The Faithfulness page's test inputs by default; its other defaults are faithfulness_settings()'s
FAITHFULNESS_SAMPLE = 100


def faithfulness_settings(**choices) -> faithfulness.Settings:
    """The Faithfulness page's settings: the ``choices`` of its widgets (removal, side; their defaults are the
    Settings' own) and the explanations a page runs (:func:`disan.analyses.explainers.on_pages`: the expensive
    ones are left to ``disan faithfulness``)."""
    return faithfulness.Settings(explainers=explainers.on_pages(), **choices)


def kept_erasure(entry) -> faithfulness.ErasureSummary | None:
    """The Faithfulness page's erasure summary of a checkpoint at its defaults (:data:`FAITHFULNESS_SAMPLE` test
    inputs, :func:`faithfulness_settings`) where it is kept on disk; None where it is not, or where there is no
    test split to sample (:func:`no_split`). Nothing is computed: a benchmark's sample is looked for only where
    it is kept as well (the page keeps it), so that a page asking does not read a benchmark for seconds to
    learn that the result is not there."""
    if no_split(entry) is not None:
        return None
    args = checkpoint_args(entry)
    sample = trained_key(entry.config, "test", items=FAITHFULNESS_SAMPLE)
    if sample is not None and not diskcache.known(sample):
        return None
    try:
        items = tuple(test_items(*args, data_stamp(entry), entry.config, FAITHFULNESS_SAMPLE))
    except (DataError, ValueError, OSError):
        return None
    return diskcache.fetch(runner.key(faithfulness.Erasure(items, faithfulness_settings()), args[0]))


@st.cache_data(max_entries=64, show_spinner=False)
def reading(path: str, mtime: float, text, names: tuple[str, ...]) -> list[faithfulness.Reading]:
    """The erasure test of one input's explanations of the registry's entries ``names``
    (:func:`disan.analyses.faithfulness.reading`), once per checkpoint, input and entries: a rerun reads it. The
    input's tokens are those its trace was made of (:func:`disan.app.traces.sentence_tokens`, kept on disk), so
    a restarted server does not tokenise it again."""
    pipe = load_pipeline(path, mtime)
    return faithfulness.reading(pipe, [sentence_tokens(t) for t in pipe.texts(text)], names)
