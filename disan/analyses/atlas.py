"""The feature atlas: what each attention feature k of each DiSA block does, measured over a corpus.

DiSAN's attention is multi-dimensional: every feature k of a block has its own distribution P[j, :, k]
over the tokens i that query j may attend. The atlas measures every feature over every query of every
sentence, from the masks and probabilities the model really used (batched traces, padding left out),
and compares each measure with what uniform attention under the same mask would give:

* distance: mean |i - j| under P, and the share of attention at distance 1 (the previous token for the
  forward block, the next one for the backward block);
* concentration: the entropy of P[j, :, k] in nats (:func:`disan.inspect.measures.query_entropy`),
  against log(keys of j);
* word classes: the share of each query's attention received by stop words (spaCy's English list),
  punctuation, negations (:data:`disan.inspect.measures.NEGATIONS`), the first token, the last token, content words and the
  sentence's two ends, each divided by the share uniform attention gives them: the *class lift*
  (:func:`disan.inspect.measures.lift_of` of the sums over the class);
* words: the lift of every word of the corpus (the same ratio, for one word's occurrences), the top
  ones listed with a minimum count so that rare words do not top the list;
* the mean fusion gate F of the feature over the corpus's tokens.

Means are over queries that have at least one key (the first token of the forward block has none).
The profiles are clustered into feature *types* with k-means on standardised measures, placed on a 2-D
PCA map (which :mod:`disan.render.atlas` draws), and every feature is summarised in words ("local: 62% on
the previous token; negations x4.1").
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd
import torch

# the traces, statistics and word classes this module reads; one place, so that they move together
from disan.data.text import normalize
from disan.analyses import stats
from disan.analyses.corpus import OverSentences
from disan.data.batching import BUDGET
from disan.inspect.batched import traces
from disan.inspect.measures import (
    NEGATIONS,
    is_punctuation,
    key_counts,
    lift_of,
    query_entropy,
    received,
    uniform_attention,
    word_class,
)

# the word classes whose share of attention is measured, in table order
CLASSES = ("stop words", "punctuation", "negations", "first token", "last token", "content words", "sentence ends")
TOP_WORDS = 5         # words listed per feature
MIN_COUNT = 10        # occurrences a word needs to be listed among a feature's top words
SEARCH_MIN_COUNT = 2  # occurrences a word needs to be kept for search (rarer words are left out)
TOP_SENTENCES = 3     # sentences shown for one feature, where it is sharpest
MIN_TOP_LENGTH = 5    # tokens a sentence needs to be among them (when the corpus has such sentences)

# the rules that name what a feature does (thresholds on its profile)
LOCAL = 0.5           # local: at least half of the attention on the adjacent token (distance 1)
GLOBAL = 0.9          # global: mean distance at least 0.9 x that of uniform attention under the same mask
DETECTOR = 2.0        # a detector of a class: class lift at least 2, or halfway to the most the class allows
DETECTS = {"stop words": "stop-word", "negations": "negation", "punctuation": "punctuation",
           "sentence ends": "sentence-end", "content words": "content-word"}
# what a type is named after, most specific first: the first rule most of its features follow
KINDS = ("local", "sentence-end detector", "negation detector", "punctuation detector", "stop-word detector",
         "content-word detector", "global", "other")
# the profile columns that features are clustered on (logs of ratios, so that x2 and x1/2 are as far from 1)
CLUSTERED = ("log distance ÷ uniform", "log share at distance 1 ÷ uniform", "entropy ÷ uniform",
             "log stop words ÷ uniform", "log punctuation ÷ uniform", "log negations ÷ uniform",
             "log content words ÷ uniform", "log sentence ends ÷ uniform")
ADJACENT = {"forward": "previous", "backward": "next"}  # what distance 1 is for each mask
TYPES = 4             # the types of a stage's sample (the search for k by silhouette waits for the whole corpus)


# ---------------------------------------------------------------- word classes

def token_classes(tokens: Sequence[str]) -> np.ndarray:
    """(n, len(CLASSES)) bool: which of :data:`CLASSES` each token belongs to (a token can be in several:
    "not" is a stop word and a negation; the first token of a one-token sentence is also its last)."""
    n = len(tokens)
    out = np.zeros((n, len(CLASSES)), dtype=bool)
    for i, token in enumerate(tokens):
        kind, word = word_class(token), normalize(token)
        out[i] = [kind == "stop", is_punctuation(token), word in NEGATIONS, i == 0, i == n - 1,
                  kind == "content", i in (0, n - 1)]
    return out


# ---------------------------------------------------------------- profiles

@dataclass
class Atlas:
    """Every feature's profile over a corpus (one table row per block and feature), its type and place
    on the map, and what search and the explanation of one feature need."""
    corpus: str
    blocks: list[str]                # the DiSA blocks' names, in order
    directions: list[str]            # their masks' kinds ("forward", "backward", "diag")
    d: int                           # features per block
    table: pd.DataFrame              # block, feature, type, summary, the measures, pc1, pc2
    uniform: pd.DataFrame            # per block (index): what uniform attention gives for each measure
    words: list[str]                 # normalised words kept for search (>= SEARCH_MIN_COUNT occurrences)
    word_counts: np.ndarray          # (V,) their occurrences
    word_received: np.ndarray        # (V, blocks x d) attention their occurrences receive, summed over queries
    word_uniform: np.ndarray         # (V, blocks) what uniform attention gives them
    queries: np.ndarray              # (blocks,) queries with at least one key
    sharpness: np.ndarray            # (S, blocks x d) per sentence: mean over queries of log(keys) - entropy
    lengths: np.ndarray              # (S,) tokens per sentence
    seconds: float                   # how long the profiles took
    top_words: list[list[tuple[str, float]]]  # per table row: (word, lift), highest first
    k: int = 0                       # feature types
    silhouettes: dict[int, float] = field(default_factory=dict)  # k -> silhouette, when k was picked by it
    explained: np.ndarray = field(default_factory=lambda: np.zeros(2))  # variance share of PC 1 and PC 2

    def position(self, block: str, k: int) -> int:
        """Where feature k of a block is: its row of ``table`` and ``top_words``, its column of ``sharpness``
        and ``word_received`` (blocks x d); ValueError for a block or a k the atlas does not have."""
        if block not in self.blocks:
            raise ValueError(f"no DiSA block is named {block!r}; the blocks are {self.blocks}")
        if not 0 <= k < self.d:
            raise ValueError(f"feature {k} is out of range for {self.d} features")
        return self.blocks.index(block) * self.d + k

    def row(self, block: str, k: int) -> pd.Series:
        """The table row of feature k of a block."""
        return self.table.iloc[self.position(block, k)]


def _batch_sums(block, lengths: torch.Tensor, classes: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per sentence of a batched block trace, sums over its queries (B, d) and what uniform attention
    gives (B,): distance, attention at distance 1, entropy, attention received per class (B, C, d);
    also each token's received attention (B, n, d) and uniform share (B, n)."""
    probs, mask = block.probs.float(), block.mask                        # (B, n, n, d), (B, n, n) [j, i]
    n = mask.shape[-1]
    keys = key_counts(mask)                                              # (B, n)
    uniform = uniform_attention(mask)                                    # (B, n, n)
    pos = torch.arange(n)
    distance = (pos[None, :] - pos[:, None]).abs().float()               # (n, n) |i - j|
    got, got_u = received(probs, mask, by_feature=True)                  # (B, n_i, d), (B, n_i) from all queries
    adjacent = probs.diagonal(-1, 1, 2).sum(-1) + probs.diagonal(1, 1, 2).sum(-1)  # (B, d)
    adjacent_u = uniform.diagonal(-1, 1, 2).sum(-1) + uniform.diagonal(1, 1, 2).sum(-1)
    entropy = np.nansum(query_entropy(probs, mask), axis=1)              # (B, d): rows without keys left out
    gate = (block.gate.float() * (pos[None, :] < lengths[:, None])[..., None]).sum(dim=1)  # (B, d)
    return {
        "queries": (keys > 0).sum(dim=1).double(),
        "distance": torch.einsum("bjik,ji->bk", probs, distance).double(),
        "distance_u": (uniform * distance).sum(dim=(1, 2)).double(),
        "adjacent": adjacent.double(), "adjacent_u": adjacent_u.double(),
        "entropy": torch.from_numpy(entropy), "entropy_u": torch.log(keys.clamp_min(1)).sum(dim=1).double(),
        "classes": torch.einsum("bid,bic->bcd", got, classes).double(),   # (B, C, d)
        "classes_u": torch.einsum("bi,bic->bc", got_u, classes).double(),  # (B, C)
        "gate": gate.double(), "got": got, "got_u": got_u,
    }


@dataclass
class Sums:
    """What the atlas adds up over sentences (:func:`sums`): the sums of disjoint sets of sentences add up to
    those of their union (:func:`joined_sums`), and :func:`atlas_of` makes the atlas of them."""
    blocks: list[str]
    directions: list[str]
    d: int
    totals: list[dict[str, np.ndarray]]  # per block: each measure of :func:`_batch_sums` summed over sentences
    words: list[str]                     # normalised words, in order of their first occurrence
    first: np.ndarray                    # (V, 2) that occurrence: sentence, position
    counts: np.ndarray                   # (V,) occurrences
    word_received: np.ndarray            # (V, blocks x d) float64 attention they receive, summed over queries
    word_uniform: np.ndarray             # (V, blocks) float64 what uniform attention gives them
    sharpness: np.ndarray                # (S, blocks x d) per sentence, as in :class:`Atlas`
    lengths: np.ndarray                  # (S,) tokens per sentence
    seconds: float


def sums(pipe, token_lists: Sequence[Sequence[str]], budget: int = BUDGET) -> Sums:
    """Trace every sentence (dense, in length-bucketed batches of at most ``budget`` query-key cells) and sum
    every feature's measures over them. Raises ValueError for an encoder without DiSA blocks or an empty
    corpus."""
    start = time.perf_counter()
    token_lists = [list(t) for t in token_lists]
    if not token_lists:
        raise ValueError("the corpus has no sentence to measure")
    vocab: dict[str, int] = {}
    first = []
    ids = []
    for s, tokens in enumerate(token_lists):
        row = []
        for position, token in enumerate(tokens):
            word = normalize(token)
            if word not in vocab:
                vocab[word] = len(vocab)
                first.append((s, position))
            row.append(vocab[word])
        ids.append(np.array(row, dtype=np.int64))
    counts = np.bincount(np.concatenate(ids), minlength=len(vocab))
    totals: list[dict[str, np.ndarray]] = []
    names, directions, d = [], [], 0
    word_got = word_u = sharpness = None
    for idx, tr in traces(pipe, token_lists, budget=budget):
        if not tr.blocks:
            raise ValueError("this encoder has no DiSA blocks: the atlas is about their attention features")
        if not names:
            names, directions = [b.name for b in tr.blocks], [b.direction for b in tr.blocks]
            d = int(tr.blocks[0].probs.shape[-1])
            totals = [{} for _ in names]
            word_got = torch.zeros(len(vocab), len(names) * d, dtype=torch.float64)
            word_u = torch.zeros(len(vocab), len(names), dtype=torch.float64)
            sharpness = np.zeros((len(token_lists), len(names) * d), dtype=np.float32)
        n = tr.blocks[0].mask.shape[-1]
        classes = torch.zeros(len(idx), n, len(CLASSES))
        word_ids = torch.full((len(idx), n), -1)
        for b, s in enumerate(idx):
            classes[b, :len(ids[s])] = torch.from_numpy(token_classes(token_lists[s]))
            word_ids[b, :len(ids[s])] = torch.from_numpy(ids[s])
        real = word_ids >= 0
        for c, block in enumerate(tr.blocks):
            batch = _batch_sums(block, tr.lengths, classes)
            for key, value in batch.items():
                if key not in ("got", "got_u"):
                    totals[c][key] = totals[c].get(key, 0) + value.sum(dim=0).numpy()
            cols = slice(c * d, (c + 1) * d)
            word_got[:, cols].index_add_(0, word_ids[real], batch["got"][real].double())
            word_u[:, c].index_add_(0, word_ids[real], batch["got_u"][real].double())
            # nats below uniform, per query: how much sharper than uniform the feature is in this sentence
            gain = (batch["entropy_u"][:, None] - batch["entropy"]) / batch["queries"].clamp_min(1)[:, None]
            sharpness[idx, cols] = gain.numpy()
    return Sums(names, directions, d, totals, list(vocab), np.array(first, dtype=np.int64).reshape(-1, 2), counts,
                word_got.numpy(), word_u.numpy(), sharpness, np.array([len(t) for t in token_lists]),
                time.perf_counter() - start)


def joined_sums(parts: Sequence[tuple[Sums, Sequence[int]]]) -> Sums:
    """The sums of sentences summed apart: ``parts`` pairs each with its sentences' places in one corpus, in
    corpus order (a word's first occurrence in a part is then its first there), no place twice; the
    sentences and words are ordered as :func:`sums` of the union in corpus order orders them (to float32
    rounding of the traces, the same sums): a stage of a progressive computation traces only the sentences
    that the stage before did not."""
    places = [np.asarray(p, dtype=np.int64) for _, p in parts]
    if any((np.diff(at) <= 0).any() for at in places):
        raise ValueError("a part's sentences must be in corpus order")
    order = np.sort(np.concatenate(places))
    if len(np.unique(order)) != len(order):
        raise ValueError("the parts share sentences")
    head = parts[0][0]
    if len({(tuple(part.blocks), part.d) for part, _ in parts}) != 1:
        raise ValueError("the parts come from different encoders")
    # every word's first occurrence in the union, as (sentence in corpus order, position)
    first: dict[str, tuple[int, int]] = {}
    for (part, _), at in zip(parts, places):
        for word, (s, position) in zip(part.words, part.first):
            here = (int(np.searchsorted(order, at[s])), int(position))
            first[word] = min(first.get(word, here), here)
    words = sorted(first, key=first.__getitem__)
    index = {word: i for i, word in enumerate(words)}
    counts = np.zeros(len(words), dtype=np.int64)
    received = np.zeros((len(words), head.word_received.shape[1]))
    uniform = np.zeros((len(words), head.word_uniform.shape[1]))
    sharpness = np.zeros((len(order), head.sharpness.shape[1]), dtype=np.float32)
    lengths = np.zeros(len(order), dtype=head.lengths.dtype)
    for (part, _), at in zip(parts, places):
        rows = np.array([index[w] for w in part.words], dtype=np.int64)
        np.add.at(counts, rows, part.counts)
        np.add.at(received, rows, part.word_received)
        np.add.at(uniform, rows, part.word_uniform)
        sentences = np.searchsorted(order, at)
        sharpness[sentences], lengths[sentences] = part.sharpness, part.lengths
    totals = [{key: sum(part.totals[c][key] for part, _ in parts) for key in head.totals[c]}
              for c in range(len(head.blocks))]
    return Sums(head.blocks, head.directions, head.d, totals, words,
                np.array([first[w] for w in words], dtype=np.int64).reshape(-1, 2), counts, received, uniform,
                sharpness, lengths, sum(part.seconds for part, _ in parts))


def atlas_of(summed: Sums, corpus: str = "", k: int | None = None, min_count: int = MIN_COUNT,
             seed: int = 0) -> Atlas:
    """The atlas of summed measures: the profile table and the words, then the features typed
    (:func:`assign_types`: ``k`` types, or None: k by silhouette). ``min_count``: the occurrences a word
    needs to be among a feature's top words."""
    start = time.perf_counter()
    table, uniform, queries = _tables(summed.blocks, summed.directions, summed.d, summed.totals,
                                      int(summed.lengths.sum()))
    words = np.array(summed.words, dtype=object)
    top = _top_words(words, summed.counts, summed.word_received, summed.word_uniform, summed.d, min_count)
    table["top words by lift"] = [", ".join(f"{w} ×{lift:.2f}" for w, lift in listed) for listed in top]
    kept = summed.counts >= SEARCH_MIN_COUNT
    atlas = Atlas(corpus, summed.blocks, summed.directions, summed.d, table, uniform, list(words[kept]),
                  summed.counts[kept], summed.word_received[kept].astype(np.float32), summed.word_uniform[kept],
                  queries, summed.sharpness, summed.lengths, 0.0, top)
    assign_types(atlas, k, seed)
    atlas.seconds = summed.seconds + time.perf_counter() - start
    return atlas


def profile(pipe, token_lists: Sequence[Sequence[str]], corpus: str = "", k: int | None = None,
            min_count: int = MIN_COUNT, budget: int = BUDGET, seed: int = 0) -> Atlas:
    """The atlas of a corpus: every sentence traced and every feature of every DiSA block measured as the
    module's docstring says (:func:`sums`), then the features typed (:func:`atlas_of`)."""
    return atlas_of(sums(pipe, token_lists, budget), corpus, k, min_count, seed)


@dataclass(frozen=True)
class AtlasAnalysis(OverSentences):
    """The feature atlas of a corpus, additive over its sentences: their measures are summed (:func:`sums`,
    :func:`joined_sums`) and the atlas made of the sums (:func:`atlas_of`), with k by silhouette; a stage's
    sample is typed with :data:`TYPES` types. A chosen k types the result again (:func:`assign_types`), which
    costs no tracing."""
    name: ClassVar[str] = "feature atlas"
    measure: ClassVar[Callable] = staticmethod(sums)
    combine: ClassVar[Callable] = staticmethod(joined_sums)

    def finish(self, part: Sums, size: int) -> Atlas:
        return atlas_of(part, self.sample_name(self.corpus.name, size), None if size == self.total() else TYPES)


def _tables(names, directions, d, totals, tokens) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The profile table (one row per block and feature), what uniform attention gives per block, and
    each block's number of queries, from the measures summed over the corpus (``tokens`` in all)."""
    frames, uniform_rows = [], []
    for name, t in zip(names, totals):
        q = max(float(t["queries"]), 1.0)
        frame = {"block": name, "feature": np.arange(d),
                 "mean distance": t["distance"] / q,
                 "distance ÷ uniform": lift_of(t["distance"], np.full(d, t["distance_u"])),
                 "share at distance 1": t["adjacent"] / q,
                 "share at distance 1 ÷ uniform": lift_of(t["adjacent"], np.full(d, t["adjacent_u"])),
                 "entropy (nats)": t["entropy"] / q,
                 "entropy ÷ uniform": lift_of(t["entropy"], np.full(d, t["entropy_u"]))}
        uniform = {"mean distance": t["distance_u"] / q, "share at distance 1": t["adjacent_u"] / q,
                   "entropy (nats)": t["entropy_u"] / q}
        for ci, cls in enumerate(CLASSES):
            frame[f"{cls} share"] = t["classes"][ci] / q
            frame[f"{cls} ÷ uniform"] = lift_of(t["classes"][ci], np.full(d, t["classes_u"][ci]))
            uniform[f"{cls} share"] = t["classes_u"][ci] / q
        frame["mean gate"] = t["gate"] / max(tokens, 1)
        frames.append(pd.DataFrame(frame))
        uniform_rows.append(pd.Series(uniform, name=name))
    queries = np.array([float(t["queries"]) for t in totals])
    return pd.concat(frames, ignore_index=True), pd.DataFrame(uniform_rows), queries


def _top_words(words, counts, received, uniform, d: int, min_count: int) -> list[list[tuple[str, float]]]:
    """Per feature: its :data:`TOP_WORDS` (word, lift) by lift among the words with ``min_count``
    occurrences or more (none when no word is that frequent)."""
    keep = np.flatnonzero(counts >= min_count)
    if not len(keep):
        return [[] for _ in range(received.shape[1])]
    blocks = np.repeat(np.arange(uniform.shape[1]), d)
    lift = lift_of(received[keep], uniform[keep][:, blocks])       # (V', F)
    lift = np.where(np.isfinite(lift), lift, -np.inf)
    top = min(TOP_WORDS, len(keep))
    order = np.argsort(-lift, axis=0, kind="stable")[:top]            # (top, F)
    return [[(str(words[keep[w]]), float(lift[w, f])) for w in order[:, f] if np.isfinite(lift[w, f])]
            for f in range(received.shape[1])]


# ---------------------------------------------------------------- what a feature does, in words and types

def detector_lift(uniform_share: np.ndarray) -> np.ndarray:
    """The class lift that makes a feature a detector of a class: :data:`DETECTOR`, or, for a class that
    uniform attention already gives a large share u, halfway from 1 to the largest lift possible
    (1 / u, all attention on the class): half of the stop words' 1 / 0.49 = x2.04 is reachable. A class
    that is every key (u = 1) leaves nothing to detect: infinity."""
    u = np.asarray(uniform_share, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(u < 1 - 1e-6, np.minimum(DETECTOR, (1 + 1 / u) / 2), np.inf)


def kinds(atlas: Atlas) -> pd.DataFrame:
    """Which of the module's rules each feature follows (bool columns named as :data:`KINDS`, "other"
    left out): local, global, and a detector of each class in :data:`DETECTS`."""
    table = atlas.table
    out = {"local": table["share at distance 1"] >= LOCAL}
    for cls, name in DETECTS.items():
        threshold = detector_lift(atlas.uniform[f"{cls} share"].reindex(table["block"]).to_numpy())
        out[f"{name} detector"] = table[f"{cls} ÷ uniform"].fillna(0).to_numpy() >= threshold
    out["global"] = table["distance ÷ uniform"] >= GLOBAL
    return pd.DataFrame(out)[[k for k in KINDS if k != "other"]]


def primary_kind(atlas: Atlas) -> pd.Series:
    """Each feature's first rule in :data:`KINDS` order ("other" when it follows none)."""
    follows = kinds(atlas)
    return follows.apply(lambda row: next((k for k in follows.columns if row[k]), "other"), axis=1)


def summary(row: pd.Series, direction: str, detects: pd.Series, words: Sequence[tuple[str, float]]) -> str:
    """A feature in words: "local: 62% on the previous token · negations ×4.1 · entropy ×0.35 uniform";
    ``detects``: its row of :func:`kinds`; ``words``: its top words, (word, lift)."""
    if row["share at distance 1"] >= LOCAL:
        where = f"local: {row['share at distance 1']:.0%} on the {ADJACENT.get(direction, 'adjacent')} token"
    else:
        reach = "global" if row["distance ÷ uniform"] >= GLOBAL else "mid-range"
        where = f"{reach}: mean distance {row['mean distance']:.1f} (×{row['distance ÷ uniform']:.2f} uniform)"
    strong = sorted(((row[f"{cls} ÷ uniform"], cls) for cls, name in DETECTS.items() if detects[f"{name} detector"]),
                    reverse=True)
    ends = [cls for cls in ("first token", "last token") if row[f"{cls} ÷ uniform"] >= DETECTOR]
    parts = [where] + [f"{cls} ×{v:.1f}" for v, cls in strong[:2]] + [f"{cls} ×{row[f'{cls} ÷ uniform']:.1f}"
                                                                     for cls in ends]
    parts.append(f"entropy ×{row['entropy ÷ uniform']:.2f} uniform")
    if words:
        parts.append("top words: " + " ".join(w for w, _ in words[:3]))
    return " · ".join(parts)


def clustering_matrix(table: pd.DataFrame) -> np.ndarray:
    """(features, len(CLUSTERED)) standardised measures that types are made from: logs of the ratios to
    uniform attention (a class no query can attend counts as x1), each column scaled to mean 0 and
    standard deviation 1. A column that varies less than float32 rounding (1e-6: every token a content
    word, say) is constant and stays 0, lest rounding noise be blown up into a direction of the map."""
    columns = []
    for name in CLUSTERED:
        ratio = table[name.removeprefix("log ")].to_numpy(dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.log(ratio) if name.startswith("log ") else ratio
        value = np.where(np.isfinite(value), value, 0.0 if name.startswith("log ") else 1.0)
        columns.append(value)
    x = np.column_stack(columns)
    spread = x.std(axis=0)
    return (x - x.mean(axis=0)) / np.where(spread > 1e-6, spread, np.inf)


def assign_types(atlas: Atlas, k: int | None = None, seed: int = 0) -> Atlas:
    """Cluster the features' standardised profiles with k-means (``k`` types, or None: the k in 2..8
    with the best silhouette), name each type after the rule most of its features follow, and place
    every feature on the PCA map; fills the table's type, summary, pc1 and pc2 columns."""
    table = atlas.table
    x = clustering_matrix(table)
    atlas.silhouettes = {}
    if k is None:
        k, atlas.silhouettes = stats.best_k(x, range(2, min(8, len(x) - 1) + 1), seed)
    k = max(1, min(int(k), len(x)))
    labels = stats.kmeans(x, k, seed)
    follows = kinds(atlas)
    primary = primary_kind(atlas)
    names = {c: type_name(table[labels == c], x[labels == c], primary[labels == c], c) for c in range(k)}
    projection = stats.pca_2d(x)
    table["type"] = [names[c] for c in labels]
    table["kind"] = primary
    directions = dict(zip(atlas.blocks, atlas.directions))
    table["summary"] = [summary(row, directions[row["block"]], follows.iloc[i], atlas.top_words[i])
                        for i, row in table.iterrows()]
    table["pc1"], table["pc2"] = projection.coords[:, 0], projection.coords[:, 1]
    first = ["block", "feature", "type", "kind", "summary"]
    atlas.table = table[first + [c for c in table.columns if c not in first]]
    atlas.k, atlas.explained = k, projection.explained
    return atlas


def type_name(members: pd.DataFrame, x: np.ndarray, primary: pd.Series, c: int) -> str:
    """A type named by its number, the rule most of its features follow, and the measure in which its
    centre stands out most (largest |standardised value|) with its median ratio: "2 · negation
    detector (negations ×3.1)"."""
    common = primary.value_counts()
    kind = common.index[0] if len(common) else "other"
    if not len(members):
        return f"{c + 1} · {kind}"
    column = CLUSTERED[int(np.argmax(np.abs(x.mean(axis=0))))]
    measure = column.removeprefix("log ")
    trait = measure.removesuffix(" ÷ uniform")
    return f"{c + 1} · {kind} ({trait} ×{members[measure].median():.2f})"


def type_context(atlas: Atlas, name: str) -> str:
    """What a type's name says of its members, counted: "type 3: 41 of 56 are negation detectors"."""
    kinds_of = atlas.table.loc[atlas.table["type"] == name, "kind"]
    kind = kinds_of.value_counts().index[0]
    said = "follow no rule" if kind == "other" else f"are {kind}s" if kind.endswith("detector") else f"are {kind}"
    return f"type {name.split(' · ')[0]}: {(kinds_of == kind).sum()} of {len(kinds_of)} {said}"


def type_names(atlas: Atlas) -> list[str]:
    """The types, largest first (as numbered)."""
    return sorted(atlas.table["type"].unique(), key=lambda t: int(t.split(" · ")[0]))


def kind_counts(atlas: Atlas) -> pd.DataFrame:
    """Per block: its features and how many follow each rule (a feature can follow several)."""
    follows = kinds(atlas)
    frame = follows.groupby(atlas.table["block"], sort=False).sum().astype(int)
    frame.insert(0, "features", atlas.table.groupby("block", sort=False).size())
    frame.index.name = "block"
    return frame.loc[atlas.blocks]


def mirroring(atlas: Atlas) -> tuple[pd.DataFrame, float]:
    """Types per block (counts, largest type first) and how alike the first two blocks' type mixes are:
    1 - the total variation distance between their shares of features per type (1: the same mix,
    0: no type in common; NaN with one block). The profiles are direction-free (distance, the
    sentence's ends), so the forward block's "previous token" and "first token" features meet the
    backward block's "next token" and "last token" features in one type."""
    table = pd.crosstab(atlas.table["type"], atlas.table["block"]).reindex(index=type_names(atlas),
                                                                           columns=atlas.blocks, fill_value=0)
    if len(atlas.blocks) < 2:
        return table, float("nan")
    shares = table / table.sum(axis=0)
    a, b = atlas.blocks[:2]
    return table, float(1 - 0.5 * (shares[a] - shares[b]).abs().sum())


# ---------------------------------------------------------------- search and one feature

def search(atlas: Atlas, query: str, top: int | None = 20) -> pd.DataFrame:
    """The features ranked by how much they attend to a word class of :data:`CLASSES` (its name) or to
    words typed by the user (separated by commas or spaces; their occurrences pooled), by class lift.

    Columns: block, feature, lift, share (of each query's attention, on average), uniform share, type,
    summary. ValueError when no typed word occurs in the corpus, or no query can attend the class.
    """
    query = query.strip()
    table = atlas.table
    if query.lower() in CLASSES:
        lift = table[f"{query.lower()} ÷ uniform"].to_numpy(dtype=float)
        share = table[f"{query.lower()} share"].to_numpy(dtype=float)
        uniform = atlas.uniform[f"{query.lower()} share"].reindex(table["block"]).to_numpy(dtype=float)
        if not np.isfinite(lift).any():
            raise ValueError(f"{atlas.corpus} has no {query.lower()} that a query can attend")
    else:
        wanted = [normalize(w) for w in query.replace(",", " ").split()]
        index = {w: i for i, w in enumerate(atlas.words)}
        rows = [index[w] for w in wanted if w in index]
        if not rows:
            raise ValueError(f"no word of “{query}” occurs {SEARCH_MIN_COUNT} times or more in {atlas.corpus}; "
                             f"or type a class: {', '.join(CLASSES)}")
        blocks = np.repeat(np.arange(len(atlas.blocks)), atlas.d)
        got = atlas.word_received[rows].sum(axis=0).astype(float)
        given = atlas.word_uniform[rows].sum(axis=0)[blocks]
        lift = lift_of(got, given)
        queries = atlas.queries[blocks]
        share, uniform = got / queries, given / queries
    out = pd.DataFrame({"block": table["block"], "feature": table["feature"], "lift": lift, "share": share,
                        "uniform share": uniform, "type": table["type"], "summary": table["summary"]})
    out = out.sort_values("lift", ascending=False, kind="stable", na_position="last", ignore_index=True)
    return out if top is None else out.head(top)


def top_sentences(atlas: Atlas, block: str, k: int, top: int = TOP_SENTENCES) -> list[int]:
    """The sentences where feature k of a block is sharpest: the most nats below uniform per query,
    among sentences of :data:`MIN_TOP_LENGTH` tokens or more when the corpus has any."""
    gain = atlas.sharpness[:, atlas.position(block, k)].astype(float)
    eligible = atlas.lengths >= MIN_TOP_LENGTH
    if not eligible.any():
        eligible = atlas.lengths >= 2
    gain = np.where(eligible, gain, -np.inf)
    order = np.argsort(-gain, kind="stable")
    return [int(s) for s in order[:top] if np.isfinite(gain[s])]


def feature_profile(atlas: Atlas, block: str, k: int) -> pd.DataFrame:
    """One feature's profile: measure | this feature | uniform attention | ÷ uniform."""
    row, uniform = atlas.row(block, k), atlas.uniform.loc[block]
    rows = [("mean distance", row["mean distance"], uniform["mean distance"], row["distance ÷ uniform"]),
            ("share at distance 1", row["share at distance 1"], uniform["share at distance 1"],
             row["share at distance 1 ÷ uniform"]),
            ("entropy (nats)", row["entropy (nats)"], uniform["entropy (nats)"], row["entropy ÷ uniform"])]
    rows += [(f"{cls} share", row[f"{cls} share"], uniform[f"{cls} share"], row[f"{cls} ÷ uniform"])
             for cls in CLASSES]
    rows.append(("mean gate", row["mean gate"], np.nan, np.nan))
    return pd.DataFrame(rows, columns=["measure", "this feature", "uniform attention", "÷ uniform"])


@dataclass
class Explanation:
    """One feature explained (:func:`explanation`): its profile, its top words, and its attention in the
    sentences where it is sharpest."""
    block: str
    feature: int
    kind: str                   # the first rule it follows (:data:`KINDS`)
    summary: str                # what it does, in words (:func:`summary`)
    context: str                # its type, counted (:func:`type_context`)
    profile: pd.DataFrame       # :func:`feature_profile`
    top_words: list[tuple[str, float]]  # (word, lift), highest first
    sentences: list[int]        # its sharpest sentences of the corpus (:func:`top_sentences`), sharpest first
    gains: np.ndarray           # (sentences,) nats below uniform per query in each
    tokens: list[list[str]]     # each sentence's tokens
    probs: list[np.ndarray]     # each sentence's (n, n) attention of the feature [j, i]
    masks: list[np.ndarray]     # and the block's (n, n) mask


def explanation(pipe, atlas: Atlas, texts: Sequence[str], block: str, k: int) -> Explanation:
    """Feature k of a block explained: its profile and top words, and its attention in the sentences where it
    is sharpest, traced again; ``texts`` are the corpus's sentences, in the atlas's order."""
    row, position = atlas.row(block, k), atlas.position(block, k)
    chosen = top_sentences(atlas, block, k)
    tokens, probs, masks = [], [], []
    for s in chosen:
        sentence = pipe.trace_sentence(texts[s])
        b = next(t for t in sentence.trace.blocks if t.name == block)
        tokens.append(sentence.tokens)
        probs.append(b.probs[..., k].numpy())
        masks.append(b.mask.numpy())
    return Explanation(block, k, row["kind"], row["summary"], type_context(atlas, row["type"]),
                       feature_profile(atlas, block, k), atlas.top_words[position], chosen,
                       atlas.sharpness[chosen, position], tokens, probs, masks)


# ---------------------------------------------------------------- what the page shows of the types

@dataclass
class Overview:
    """The types and rules of an atlas, tallied (:func:`overview`)."""
    types: list[str]            # the types, as numbered (:func:`type_names`)
    kinds: list[str]            # the rules of :data:`KINDS` that are some feature's first, in that order
    counts: pd.DataFrame        # per block, the features that follow each rule (:func:`kind_counts`)
    mirror: pd.DataFrame        # types per block (:func:`mirroring`)
    alike: float                # how alike the first two blocks' type mixes are (NaN with one block)
    rules: dict[str, float]     # the rules' thresholds: "local" (:data:`LOCAL`), "global", "detector"


def overview(atlas: Atlas) -> Overview:
    """The atlas's types and rules, tallied."""
    mirror, alike = mirroring(atlas)
    present = set(atlas.table["kind"])
    return Overview(type_names(atlas), [k for k in KINDS if k in present], kind_counts(atlas), mirror, alike,
                    {"local": LOCAL, "global": GLOBAL, "detector": DETECTOR})


def export_csv(atlas: Atlas) -> bytes:
    """The table (one row per block and feature, columns named after the measures) as UTF-8 CSV, with the
    corpus as its first column."""
    return atlas.table.assign(corpus=atlas.corpus)[["corpus", *atlas.table.columns]].to_csv(index=False).encode()
