"""Token-id batches: a split encoded with a vocabulary, length-bucketed batches of it, length-sorted
batches of any sentences, and the one padding helper shared by training, evaluation and the pipeline."""
from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from disan.data.choices import BATCHINGS, SPLITS
from disan.data.loaders import TaskData
from disan.data.text import PAD_ID, TOKENIZERS, UNK_ID, Vocab


def pad(seqs: list[list[int]]) -> torch.Tensor:
    """Id lists -> (B, n) long tensor with the padding id after each sequence."""
    out = torch.full((len(seqs), max(len(s) for s in seqs)), PAD_ID, dtype=torch.long)
    for b, s in enumerate(seqs):
        out[b, : len(s)] = torch.tensor(s)
    return out


@dataclass
class Encoded:
    """A split as token ids: one column per input sentence (pair tasks have two), a label per example."""
    columns: list[list[list[int]]]  # [column][example] -> token ids
    labels: list                    # class indices, or relatedness scores
    lengths: list[int]              # per example, the longest of its sentences: the batching key

    def __len__(self):
        return len(self.labels)


def tokens_of(data: TaskData, splits=SPLITS, tokenizer: str = "spacy") -> dict[str, list]:
    """Tokenised text of the splits: per example a list of token lists (one, or two for a pair).

    ``tokenizer`` names one of :data:`~disan.data.text.TOKENIZERS`. Each distinct text is split once:
    SST's training nodes repeat (the same phrase in many trees, oversampled copies).
    """
    split_text, memo = TOKENIZERS[tokenizer], {}

    def tok(text):
        if text not in memo:
            memo[text] = split_text(text)
        return memo[text]
    return {split: [[tok(t) for t in e.text] if isinstance(e.text, tuple) else [tok(e.text)]
                    for e in getattr(data, split)] for split in splits}


def encode(vocab: Vocab, token_rows: list, labels: list) -> Encoded:
    """Token rows (from :func:`tokens_of`) and their labels -> :class:`Encoded`.

    A sentence with no tokens becomes one unknown word, so that every sentence has a position to attend to.
    """
    columns = [[vocab.encode(row[c]) or [UNK_ID] for row in token_rows] for c in range(len(token_rows[0]))] \
        if token_rows else [[]]
    return Encoded(columns, labels, [max(len(col[b]) for col in columns) for b in range(len(labels))])


# query-key cells per batch of a model run over many sentences: 64 sentences of 24 tokens; a dense
# trace's probabilities take B n^2 d_h floats per block, so the budget bounds its memory
BUDGET = 64 * 24 * 24


def length_batches(lengths: Sequence[int], max_batch: int = 64, budget: int = BUDGET) -> list[list[int]]:
    """Indices of the sentences, shortest first, in batches of at most ``max_batch`` sentences and
    ``budget`` cells (a sentence longer than the budget allows gets a batch of its own)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    out, current = [], []
    for i in order:
        n = max(int(lengths[i]), 1)
        if current and (len(current) == max_batch or (len(current) + 1) * n * n > budget):
            out.append(current)
            current = []
        current.append(i)
    if current:
        out.append(current)
    return out


def batch_indices(data: Encoded, batch_size: int, shuffle: bool, rng: random.Random,
                  batching: str = "bucketed") -> list[list[int]]:
    """The example indices of every batch, in the order they are to be used.

    Bucketed: sentences of similar length share a batch, so little is padding. Shuffled, the examples
    are sorted by length within pools of 50 batches and the batches come in random order; unshuffled,
    every example is sorted by length. Random (shuffled only): consecutive slices of one uniform
    shuffle, as the authors' code draws them, so every batch mixes lengths (and is padded to its
    longest sentence).
    """
    if batching not in BATCHINGS:
        raise ValueError(f"batching must be one of {BATCHINGS}, not {batching!r}")
    order = list(range(len(data)))
    if shuffle and batching == "random":
        rng.shuffle(order)
        return [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    if shuffle:
        rng.shuffle(order)
        pool = batch_size * 50
        order = [i for s in range(0, len(order), pool) for i in sorted(order[s:s + pool], key=data.lengths.__getitem__)]
    else:
        order.sort(key=data.lengths.__getitem__)
    chunks = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    if shuffle:
        rng.shuffle(chunks)
    return chunks


def collate(data: Encoded, idx: list[int]) -> tuple[list[torch.Tensor], list]:
    """The examples ``idx`` as one padded id tensor per column, and their labels."""
    return [pad([col[i] for i in idx]) for col in data.columns], [data.labels[i] for i in idx]


def batches(data: Encoded, batch_size: int, shuffle: bool,
            rng: random.Random) -> Iterator[tuple[list[int], list[torch.Tensor], list]]:
    """(example indices, one padded id tensor per column, labels) per batch of :func:`batch_indices`."""
    for idx in batch_indices(data, batch_size, shuffle, rng):
        yield idx, *collate(data, idx)
