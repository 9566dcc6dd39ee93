"""Corpus senses: one word's vector at each of its occurrences in a corpus, projected to 2-D with PCA
and clustered with k-means, to see whether DiSAN separates the word's senses beyond the paper's two
sentences (its Fig. 6).

A corpus is a benchmark split, the test split of the data a checkpoint was trained on (a benchmark's,
or the one recorded of a file of one's own), or an uploaded file in any format of the package's one table
reader (:mod:`disan.data.files`).
"""
from __future__ import annotations

import io
import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from disan.data import files
from disan.data.checksums import corpus_digest
from disan.data.files import LABEL_COLUMNS, TEXT_COLUMNS, trained_task
from disan.data.kinds import kind_of
from disan.data.loaders import TaskData
from disan.data.registry import BENCHMARKS, load_task
from disan.data.text import check_text, normalize
from disan.analyses import stats
from disan.analyses.choices import SAMPLE_SENTENCES  # noqa: F401  (corpus.SAMPLE_SENTENCES, for the pages)
from disan.analyses.protocol import Analysis
from disan.inspect.batched import token_vectors
from disan.inspect.measures import word_class

MAX_OCCURRENCES = 2000   # occurrences of the word that are collected, in corpus order
MAX_UPLOAD = 20_000      # rows of an uploaded file that are read: the most sentences an uploaded corpus has
CONTEXT = 8              # tokens each side of an occurrence that its context shows
CLUSTERS = 3             # the clusters of a stage's first occurrences (the search for k by silhouette waits for all)


@dataclass
class Corpus:
    """Sentences, tokenised, with a gold label each ("" when the corpus has none)."""
    name: str
    texts: list[str]
    tokens: list[list[str]]
    labels: list[str]
    pairs: list[tuple[str, str] | None]  # the (premise, hypothesis) a sentence of a pair benchmark comes from
    skipped: int = 0                     # lines left out: empty or longer than a trace allows
    scale: list[str] | None = None       # the labels in their order, where they are ordinal (else None)

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def key(self) -> str:
        """What names the corpus in a result's key: its name and a digest of its sentences, labels, pairs and
        ordinal scale."""
        return f"{self.name}:{corpus_digest(self.texts, self.labels, self.pairs, self.scale or [])}"


def make_corpus(name: str, texts, labels=None, pairs=None) -> Corpus:
    """Tokenise the texts; lines that :func:`disan.data.text.check_text` refuses (empty, too long) are
    left out and counted in ``skipped``."""
    labels = [""] * len(texts) if labels is None else labels
    pairs = [None] * len(texts) if pairs is None else pairs
    kept = Corpus(name, [], [], [], [])
    for text, label, pair in zip(texts, labels, pairs):
        try:
            tokens = check_text(text)
        except ValueError:
            kept.skipped += 1
            continue
        kept.texts.append(text)
        kept.tokens.append(tokens)
        kept.labels.append(str(label))
        kept.pairs.append(pair)
    return kept


def benchmark_corpus(task: str, split: str = "test", data_dir=None) -> Corpus:
    """A benchmark split as a corpus (:func:`split_corpus`)."""
    return split_corpus(load_task(task, data_dir, phrases=False, splits=[split]), split)


def trained_corpus(config: dict, split: str = "test") -> Corpus:
    """A split of the data a checkpoint was trained on, from its config (``config.json``), as a corpus: of
    its benchmark, or the split recorded of its own file (:func:`disan.data.files.trained_task`, which
    raises DataError when that file is gone or has changed)."""
    return split_corpus(trained_task(config, splits=[split]), split)


def split_corpus(data: TaskData, split: str) -> Corpus:
    """A split as a corpus: its sentences with their gold labels (a pair task gives both sentences of
    every pair; relatedness scores are rounded to the nearest level, and ordered)."""
    texts, labels, pairs = [], [], []
    for example in getattr(data, split):
        label = f"{example.label:.0f}" if kind_of(data.kind).scored else data.labels[int(example.label)]
        sides = example.text if isinstance(example.text, tuple) else (example.text,)
        for side in sides:
            texts.append(side)
            labels.append(label)
            pairs.append(example.text if isinstance(example.text, tuple) else None)
    kept = make_corpus(f"{data.name} {split}", texts, labels, pairs)
    # scores are ordered whatever their source; a benchmark's entry says whether its classes are
    if kind_of(data.kind).scored or (data.name in BENCHMARKS and BENCHMARKS[data.name].ordered):
        kept.scale = list(data.labels)
    return kept


def sample(corpus: Corpus, n: int, seed: int = 0) -> Corpus:
    """A seeded random sample of ``n`` sentences in corpus order (the whole corpus when it is not larger)."""
    if len(corpus) <= n:
        return corpus
    return subset(corpus, np.sort(np.random.default_rng(seed).choice(len(corpus), n, replace=False)),
                  f"{corpus.name} (sample of {n})")


def subset(corpus: Corpus, keep, name: str) -> Corpus:
    """The sentences of a corpus at the indices ``keep`` (in that order), named ``name``."""
    return Corpus(name, [corpus.texts[i] for i in keep], [corpus.tokens[i] for i in keep],
                  [corpus.labels[i] for i in keep], [corpus.pairs[i] for i in keep], corpus.skipped, corpus.scale)


def benchmark_items(task: str, split: str = "test", n: int = 200, seed: int = 0, data_dir=None) -> list:
    """A seeded random sample of ``n`` inputs of a benchmark split (:func:`sample_items`)."""
    return sample_items(load_task(task, data_dir, phrases=False, splits=[split]), split, n, seed)


def trained_items(config: dict, split: str = "test", n: int = 200, seed: int = 0) -> list:
    """A seeded random sample of ``n`` inputs of a split of the data a checkpoint was trained on (see
    :func:`trained_corpus`)."""
    return sample_items(trained_task(config, splits=[split]), split, n, seed)


def sample_items(data: TaskData, split: str, n: int, seed: int = 0) -> list:
    """A seeded random sample of ``n`` inputs of a split, in split order, as a pipeline takes them: texts,
    or (premise, hypothesis) pairs."""
    examples = getattr(data, split)
    keep = np.sort(np.random.default_rng(seed).choice(len(examples), min(n, len(examples)), replace=False))
    return [examples[i].text for i in keep]


def uploaded_corpus(data: bytes, filename: str) -> Corpus:
    """An uploaded file, read as :func:`disan.data.files.read_rows` reads every file (its format by the
    extension, strict UTF-8, DataError naming the line of anything wrong), as a corpus: the sentences are
    the column named as in :data:`~disan.data.files.TEXT_COLUMNS` (in any case), else the first; the labels
    the column named as in :data:`~disan.data.files.LABEL_COLUMNS`, if there is one. A CSV or TSV file whose
    first row names no text column has no header row. At most :data:`MAX_UPLOAD` rows are read."""
    suffix = files.format_of(filename)

    def read(header: bool) -> files.Rows:
        return files.read_rows(filename, io.BytesIO(data), suffix, header)
    header = True
    if files.FORMATS[suffix].header_row:  # a header row is one that names the sentences' column
        _, _, first = next(read(False).rows)
        header = files.named([files.cell_text(v) for v in first], TEXT_COLUMNS) is not None
    table = read(header)
    text, label = ((files.named(table.columns, TEXT_COLUMNS), files.named(table.columns, LABEL_COLUMNS))
                   if table.header else (None, None))
    text_at = 0 if text is None else table.columns.index(text)
    label_at = None if label is None else table.columns.index(label)
    texts, labels = [], []
    for _, _, values in itertools.islice(table.rows, MAX_UPLOAD):
        texts.append(files.cell_text(values[text_at]))
        labels.append("" if label_at is None else files.cell_text(values[label_at]))
    return make_corpus(filename, texts, labels)


def frequent_words(corpus: Corpus, top: int = 200) -> list[str]:
    """The corpus's content words (not stop words, with a letter, longer than two characters), most frequent first."""
    counts = Counter(normalize(t) for tokens in corpus.tokens for t in tokens)
    words = [w for w, _ in counts.most_common() if len(w) > 2 and word_class(w) == "content"]
    return words[:top]


def occurrences(corpus: Corpus, word: str, limit: int = MAX_OCCURRENCES) -> list[tuple[int, int]]:
    """(sentence, position) of the first ``limit`` occurrences of a word (compared normalised), in corpus order."""
    word = normalize(word)
    found = []
    for s, tokens in enumerate(corpus.tokens):
        for p, token in enumerate(tokens):
            if normalize(token) == word:
                found.append((s, p))
                if len(found) == limit:
                    return found
    return found


@dataclass
class Senses:
    """A word's occurrences in a corpus: one table row and one vector each, their projection and clusters."""
    word: str
    kind: str
    corpus: str
    table: pd.DataFrame      # occurrence, sentence, position, label, cluster, pc1, pc2, context, text
    vectors: np.ndarray      # (N, D)
    explained: np.ndarray    # (2,) the variance share of PC 1 and PC 2 (of the unit vectors)
    k: int
    silhouettes: dict[int, float] = field(default_factory=dict)  # k -> silhouette (when k was picked by it)
    contexts: list[tuple[str, str, str]] = field(default_factory=list)  # each occurrence's :func:`context_parts`
    scale: list[str] | None = None                              # the corpus's ordinal labels in order


def context_parts(tokens: Sequence[str], position: int, width: int = CONTEXT) -> tuple[str, str, str]:
    """The context of ``tokens[position]`` as plain text: the ``width`` tokens before it (after "… " where the
    sentence goes on before them), the token, and the ``width`` tokens after it (then " …" likewise)."""
    left = " ".join(tokens[max(0, position - width):position])
    right = " ".join(tokens[position + 1:position + 1 + width])
    before = "… " if position > width else ""
    after = " …" if position + 1 + width < len(tokens) else ""
    return before + left, tokens[position], right + after


def analyse(pipe, corpus: Corpus, word: str, kind: str, k: int | None = None,
            limit: int = MAX_OCCURRENCES, seed: int = 0) -> Senses:
    """Collect up to ``limit`` occurrences of ``word`` and their ``kind`` vectors (batched, fast path),
    project them with PCA and cluster them with k-means: ``k`` clusters, or (None) the k in 2..8 with
    the best silhouette. The projection and the clusters both use the unit-length vectors, as the cosine
    neighbours do, so that the scatter shows the geometry the clusters were found in."""
    places = occurrences(corpus, word, limit)
    if len(places) < 2:
        raise ValueError(f"{word!r} occurs {len(places)} time(s) in {corpus.name}; at least 2 are needed")
    vectors = token_vectors(pipe, corpus.tokens, places, kind)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms > 0, norms, 1.0)
    scores: dict[int, float] = {}
    if k is None:
        k, scores = stats.best_k(unit, range(2, min(8, len(places) - 1) + 1), seed)
    labels = stats.kmeans(unit, min(k, len(places)), seed)
    projection = stats.pca_2d(unit)
    sentence = [s for s, _ in places]
    position = [p for _, p in places]
    table = pd.DataFrame({
        "occurrence": np.arange(len(places)), "sentence": sentence, "position": position,
        "label": [corpus.labels[s] for s in sentence], "cluster": labels,
        "pc1": projection.coords[:, 0], "pc2": projection.coords[:, 1],
        "context": [" ".join(corpus.tokens[s][max(0, p - CONTEXT):p + CONTEXT + 1]) for s, p in places],
        "text": [corpus.texts[s] for s in sentence],
    })
    contexts = [context_parts(corpus.tokens[s], p) for s, p in places]
    return Senses(normalize(word), kind, corpus.name, table, vectors, projection.explained, int(labels.max()) + 1,
                  scores, contexts, corpus.scale)


@dataclass(frozen=True)
class OverSentences(Analysis):
    """An analysis of a corpus that adds up over its sentences, named by the corpus: a subclass names the function
    that measures some sentences' tokens (``measure(pipe, token_lists)``), the one that joins such measures of
    disjoint sentences (``combine(parts)``, parts paired with their places) and defines ``finish``."""
    corpus: Corpus
    additive: ClassVar[bool] = True
    measure: ClassVar[Callable]
    combine: ClassVar[Callable]

    def total(self) -> int:
        return len(self.corpus)

    def settings(self) -> dict:
        return {"corpus": self.corpus.key}

    def part(self, pipe, places: np.ndarray):
        return self.measure(pipe, [self.corpus.tokens[i] for i in places])

    def join(self, parts: list[tuple[object, np.ndarray]]):
        return self.combine(parts)


@dataclass(frozen=True)
class SensesAnalysis(Analysis):
    """One word's senses over a corpus (:func:`analyse`) over its first :data:`MAX_OCCURRENCES` occurrences: a
    stage takes the first of them in corpus order, clustered into :data:`CLUSTERS` unless ``k`` is chosen."""
    corpus: Corpus
    word: str
    kind: str           # the vector, a key of :data:`disan.inspect.senses.VECTORS`
    k: int | None       # clusters; None: k by silhouette
    name: ClassVar[str] = "corpus senses"

    def total(self) -> int:
        return len(occurrences(self.corpus, self.word))

    def settings(self) -> dict:
        return {"corpus": self.corpus.key, "word": self.word, "kind": self.kind, "k": self.k}

    def places(self, size: int) -> np.ndarray:
        return np.arange(size)

    def compute(self, pipe, size: int) -> Senses:
        k = self.k if size == self.total() else self.k or CLUSTERS
        return analyse(pipe, self.corpus, self.word, self.kind, k, size)


def neighbours(result: Senses, index: int, top: int = 10) -> pd.DataFrame:
    """The ``top`` occurrences whose vectors are closest to occurrence ``index`` by cosine, closest first
    (the occurrence itself left out): occurrence, cosine, cluster, label, context."""
    cosine = stats.cosine_to(result.vectors, result.vectors[index])
    order = [i for i in np.argsort(-cosine, kind="stable") if i != index][:top]
    rows = result.table.iloc[order]
    return pd.DataFrame({"occurrence": rows["occurrence"].to_numpy(), "cosine": cosine[order],
                         "cluster": rows["cluster"].to_numpy(), "label": rows["label"].to_numpy(),
                         "context": rows["context"].to_numpy()})


def export_csv(result: Senses) -> bytes:
    """The occurrence table as UTF-8 CSV, with the word and vector kind as the first columns."""
    table = result.table.assign(word=result.word, vector=result.kind)
    table = table[["word", "vector"] + [c for c in result.table.columns]]
    return table.to_csv(index=False).encode("utf-8")
